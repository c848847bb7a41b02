-- Stage, a delta build (sitemap_ops.stage.delta_snapshot): the files of the live build's staged snapshot whose
-- URL range [low, high) (NULL: unbounded) holds a URL deduplicated again (`delta_locs`): the files written again.
-- The ranges (the table `delta_file_ranges`) are the variables delta_file_numbers, delta_file_lows and
-- delta_file_highs, one item per file with URLs; they cover every URL, each once.
CREATE OR REPLACE TEMP TABLE delta_file_ranges AS
SELECT
    unnest(getvariable('delta_file_numbers')) AS file,
    CAST(unnest(getvariable('delta_file_lows')) AS VARCHAR) AS low,
    CAST(unnest(getvariable('delta_file_highs')) AS VARCHAR) AS high;
SELECT DISTINCT r.file
FROM delta_locs d
JOIN delta_file_ranges r ON (r.low IS NULL OR d.loc >= r.low) AND (r.high IS NULL OR d.loc < r.high)
ORDER BY r.file

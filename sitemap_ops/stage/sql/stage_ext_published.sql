-- Stage 2d: pages with images and images, pages with alternates and alternates, as published in the staged
-- snapshot (its files: the variable `staged_files`; fast path and checked path alike).
SELECT
    count(*) FILTER (WHERE images > 0),
    coalesce(sum(images), 0),
    count(*) FILTER (WHERE alternates > 0),
    coalesce(sum(alternates), 0)
FROM read_parquet(getvariable('staged_files'))

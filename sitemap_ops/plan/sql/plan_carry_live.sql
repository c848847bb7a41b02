-- Plan 1, a delta build: the view `carry_live` over the live build's assignment (the variable carry_files, in
-- row order), each row with `row`, its row number in the whole assignment (its part's first row, from the
-- variable carry_offsets, plus its row in the part), which sql/plan_carry_touched.sql reads.
CREATE OR REPLACE TEMP VIEW carry_live AS
SELECT loc, section, shard, pos, bytes, lastmod, content_hash,
    getvariable('carry_offsets')[CAST(file_index AS BIGINT) + 1] + file_row_number AS row
FROM read_parquet(getvariable('carry_files'), file_row_number = true)

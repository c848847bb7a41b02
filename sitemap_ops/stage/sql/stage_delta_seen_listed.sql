-- Stage, a delta build of listed keys and URLs of a site whose sources are files (sitemap_ops.stage.delta): the
-- keys and change values its next delta build compares with (STATE_SEEN_NAME): the live state's (the variable
-- seen_file) but the keys whose rows this build replaced (`delta_keys`), which it read without their values.
SELECT s.source, s.key, s.changed
FROM read_parquet(getvariable('seen_file')) s
ANTI JOIN delta_keys k ON k.source = s.source AND k.key = s.key

-- Stage, input splits: the sampled URLs that are valid, normalized (the view `normalized_urls` over the
-- sample, sql/stage_normalize.sql).
SELECT loc FROM normalized_urls WHERE reason IS NULL

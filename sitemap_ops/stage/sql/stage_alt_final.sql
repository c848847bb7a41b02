-- Stage 2, hreflang completion, one URL range: its pages' links as published (`alt_final_edges`, as
-- ext_alt_completed in one piece): the completed sets sent to it (`alt_done`, sorted by code: ord NULL),
-- and the links as checked (`alt_own`) of its pages whose cluster is conflicted (a row with hreflang NULL).
CREATE OR REPLACE TEMP TABLE alt_final_edges AS
SELECT loc AS page, hreflang, href, NULL::BIGINT AS ord FROM alt_done WHERE hreflang IS NOT NULL
UNION ALL
SELECT e.page, e.hreflang, e.href, e.ord
FROM alt_own e
SEMI JOIN (SELECT loc FROM alt_done WHERE hreflang IS NULL) c ON c.loc = e.page;

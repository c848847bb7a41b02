-- Stage 2a (first): the sets of alternates of the fast path (sql/stage_normalize.sql), one row per set
-- (`alt_sets`: s the set hash alternates_s of its pages, j one page's joined list, the number of pages and
-- whether they all list themselves; the pages of a correct hreflang cluster share one set). Pages of
-- publishable rows that occur once in the inventory.
-- Then the one check the fast path leaves to sets: a set that repeats an hreflang code sends its pages
-- back to the checked path (stage_ext_collect.sql onwards keeps one href per code and reports the others):
-- their lists are split back into `alternates` and their fast-path columns cleared. Looking at one list
-- per set, not one per page, is what makes this cheap. Reads and updates `normalized_rows`; reads `dup_locs`.
-- The fast-path pages with alternates (after the UPDATE below: those it leaves on the fast path).
CREATE OR REPLACE TEMP VIEW alt_fast_pages AS
SELECT loc, hash(loc) AS hp, alternates_j, alternates_s, alternates_self
FROM normalized_rows
WHERE reason IS NULL AND alternates_s IS NOT NULL AND loc NOT IN (SELECT loc FROM dup_locs);

CREATE OR REPLACE TEMP TABLE alt_sets AS
SELECT alternates_s AS s, any_value(alternates_j) AS j, count(*) AS pages, bool_and(alternates_self) AS all_self
FROM alt_fast_pages
GROUP BY alternates_s;

CREATE OR REPLACE TEMP TABLE alt_sets_repeating AS
SELECT s FROM (SELECT s, so_alternates_split(j) AS links FROM alt_sets)
WHERE list_unique(list_transform(links, lambda a: a.hreflang)) < len(links);

UPDATE normalized_rows SET
    alternates = so_alternates_split(alternates_j),
    alternates_j = NULL,
    alternates_n = NULL,
    alternates_s = NULL,
    alternates_self = NULL
WHERE alternates_s IN (SELECT s FROM alt_sets_repeating);

DELETE FROM alt_sets WHERE s IN (SELECT s FROM alt_sets_repeating);

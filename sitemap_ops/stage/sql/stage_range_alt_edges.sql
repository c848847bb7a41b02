-- Stage 2, one URL range of a split stage with hreflang alternates: each link of the range's pages to
-- another URL, with the range (`part`) of that URL, where the check of its return link runs
-- (stage_range_alt_check.sql): `hh` the target's hash, `hp` the linking page's, `page` its URL and `hreflang`
-- its own code (alt_range_links, alt_range_own). A template: sitemap_ops.stage.hreflang fills {part} with the
-- CASE tree over the variable part_bounds, never with input.
SELECT {part} AS part, hh, hp, page, hreflang FROM (
    SELECT l.href AS loc, hash(l.href) AS hh, hash(l.page) AS hp, l.page, o.hreflang
    FROM alt_range_links l
    JOIN alt_range_own o ON o.page = l.page
    WHERE l.href <> l.page
)

-- Stage 2, hreflang completion, one URL range: its file of the staged snapshot with its pages' alternates as
-- completed (`alt_final_edges`, stage_alt_final.sql), from the file its stage_range wrote with the sets as
-- found (`alt_staged`). The news series' rows carry no alternates. Sorted by (section, loc), as
-- stage_dedupe.sql writes it.
WITH published AS (
    SELECT page AS loc, so_alternates_agg(hreflang, href, ord) AS alternates_j, count(*) AS alternates
    FROM alt_final_edges
    GROUP BY page
),
rows AS (
    SELECT s.* REPLACE (
        CASE WHEN s.section = getvariable('news_section') THEN s.alternates_j ELSE p.alternates_j END AS alternates_j,
        CASE WHEN s.section = getvariable('news_section') THEN s.alternates ELSE coalesce(p.alternates, 0) END
            AS alternates
    )
    FROM alt_staged s
    LEFT JOIN published p ON p.loc = s.loc
)
SELECT
    * REPLACE (
        so_ext_bytes(images_j, images, ext_xml, alternates_j, alternates) AS ext_bytes,
        so_ext_hash(images_j, ext_xml, alternates_j) AS ext_hash
    )
FROM rows
ORDER BY section, loc

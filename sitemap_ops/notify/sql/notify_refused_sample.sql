-- `sitemap-ops indexnow status`: the first URLs set aside (the view `refused_old`), with why, by URL; the
-- parameter is how many.
SELECT loc, reason FROM refused_old ORDER BY loc LIMIT ?

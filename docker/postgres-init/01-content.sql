-- The example content database: a table of 5,000 page URLs, as a CMS would keep them.
CREATE DATABASE content;
\connect content
CREATE TABLE pages (id SERIAL PRIMARY KEY, url TEXT NOT NULL, updated_at TIMESTAMPTZ NOT NULL, kind TEXT NOT NULL);
INSERT INTO pages (url, updated_at, kind)
SELECT
    'https://www.example.com/' || (ARRAY['products', 'articles', 'help'])[1 + i % 3] || '/item-' || i,
    now() - (i || ' minutes')::interval,
    (ARRAY['products', 'articles', 'help'])[1 + i % 3]
FROM generate_series(1, 5000) AS i;
-- the read-only login of the DAG's content_db connection
CREATE ROLE content LOGIN PASSWORD 'content';
GRANT SELECT ON ALL TABLES IN SCHEMA public TO content;

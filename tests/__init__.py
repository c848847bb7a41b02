"""sitemap_ops tests, grouped by feature."""

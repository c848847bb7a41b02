"""An example DAG of your own: a catalog export, then the example site's sitemaps as one task group
(sitemap_ops.airflow.SitemapBuild). Copy it into your DAG bundle and put your own steps first."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task

from sitemap_ops.airflow import SitemapBuild, build_params, sites_dir

SITE = sites_dir(__file__) / "example.toml"

if SITE.exists():  # (a sites folder without the example site: no example DAG)
    with DAG(
        dag_id="catalog_example",
        schedule=None,
        start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
        catchup=False,
        params=build_params(),  # the build's run params: dry_run, full_rebuild, force
        tags=["sitemap-ops", "example"],
        doc_md="A catalog export, then the example site's sitemap build (the task group `sitemaps`).",
    ) as dag:

        @task
        def export_catalog() -> str:
            """Stands for your own steps: the export the sitemaps are built from."""
            return "exported"

        export_catalog() >> SitemapBuild(SITE, group_id="sitemaps")

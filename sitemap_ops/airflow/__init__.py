"""Airflow: a DAG per site file (`dags_from_folder`), or a site's build as a task group in a DAG of one's own
(`SitemapBuild`). Nothing here connects to a database or a store when a DAG file is parsed."""

from sitemap_ops.airflow.dag import (
    build_dag,
    build_params,
    check_executor,
    dags_from_folder,
    invalid_site_dag,
    sites_dir,
)
from sitemap_ops.airflow.task_group import SitemapBuild
from sitemap_ops.airflow.tasks import content_published, sitemaps_published

__all__ = [
    "SitemapBuild",
    "build_dag",
    "build_params",
    "check_executor",
    "content_published",
    "dags_from_folder",
    "invalid_site_dag",
    "sitemaps_published",
    "sites_dir",
]

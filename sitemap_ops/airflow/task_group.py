"""A site's whole build as a task group, to drop into a DAG of one's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow.sdk import TaskGroup

from sitemap_ops.airflow.dag import check_executor
from sitemap_ops.airflow.graph import add_build_tasks
from sitemap_ops.config import SiteConfig, load_config


class SitemapBuild(TaskGroup):
    """A site's whole build as a task group, to drop into a DAG of your own:

        with DAG("catalog", schedule="@daily", params=build_params()) as dag:
            export_catalog() >> SitemapBuild("sites/shop.toml")

    `site`: a SiteConfig or the path of a site TOML file. The tasks are those of the site's own DAG (the steps its
    config needs), under `group_id` (default sitemaps_<name>). Run params are read when the DAG has them
    (build_params), else default to off.
    """

    def __init__(self, site: SiteConfig | str | Path, group_id: str | None = None, **kwargs: Any) -> None:
        config = site if isinstance(site, SiteConfig) else load_config(site)
        from airflow.configuration import conf

        check_executor(config, conf.get("core", "executor", fallback="LocalExecutor"))
        super().__init__(group_id=group_id or f"sitemaps_{config.name}", **kwargs)
        with self:
            add_build_tasks(config, check_params=False)

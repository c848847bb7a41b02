"""One Airflow DAG per site TOML file in $SITEMAP_OPS_SITES_DIR (default: sites/ beside this file); see
sitemap_ops.airflow."""

from __future__ import annotations

from sitemap_ops.airflow import dags_from_folder

globals().update(dags_from_folder(dag_file=__file__))

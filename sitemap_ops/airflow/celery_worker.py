"""Airflow's Celery configuration with the build's libraries loaded once per Celery worker rather than once per task.

Set `[celery] celery_config_options = sitemap_ops.airflow.celery_worker.CELERY_CONFIG` (environment:
`AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS`) on the workers. Each task runs in a process forked from its worker, so
what the worker imported before it forked costs a task nothing; Airflow preloads its own operators the same way
(its provider's `on_celery_import_modules`). Without it, each task imports DuckDB, Arrow, the steps and the
store's filesystem itself: about 0.8 s of CPU before its work on a 2-core machine.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

from airflow.providers.celery.executors.default_celery import DEFAULT_CELERY_CONFIG
from celery.signals import import_modules

CELERY_CONFIG = DEFAULT_CELERY_CONFIG

# Every task imports these (the steps import DuckDB and Arrow); the stores' filesystems when installed. Importing
# them starts no thread, so the forked processes inherit nothing a fork breaks.
PRELOADED = ("sitemap_ops.pipeline.steps", "sitemap_ops.airflow.tasks", "s3fs", "gcsfs")


def preload(*args: Any, **kwargs: Any) -> None:
    """Import PRELOADED in the worker's main process, before it forks its pool (and the pool its tasks)."""
    for name in PRELOADED:
        with contextlib.suppress(ImportError):  # (a store's extra that is not installed)
            importlib.import_module(name)


import_modules.connect(preload)

"""Airflow tests: a throwaway AIRFLOW_HOME (set before anything imports Airflow) and a fresh metadata DB."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

AIRFLOW_HOME = tempfile.mkdtemp(prefix="sitemap-ops-airflow-home-")
atexit.register(shutil.rmtree, AIRFLOW_HOME, ignore_errors=True)  # the test run leaves nothing in /tmp
os.environ["AIRFLOW_HOME"] = AIRFLOW_HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = os.path.join(os.path.dirname(__file__), "..", "..", "dags")


@pytest.fixture(scope="session")
def airflow_db() -> Iterator[None]:
    """A migrated metadata database (SQLite in AIRFLOW_HOME), once per test session."""
    from airflow.utils import db

    db.resetdb()
    yield

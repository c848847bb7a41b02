"""The build: its steps (`steps`), the graph that orders them (`graph`) and the in-process runner (`local`).

The steps' and the runner's names are importable from here (`from sitemap_ops.pipeline import run_build`); they
are imported on first use, so that parsing the graph (a DAG file does) imports none of the steps' libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sitemap_ops.pipeline.local import BuildSummary, plan, plan_finish, run_build, stage
    from sitemap_ops.pipeline.steps import (
        BuildRun,
        host_runs,
        load_plan,
        load_prepared,
        notify,
        plan_chunk,
        plan_name,
        plan_place,
        plan_prepare,
        plan_write,
        publish,
        render,
        render_groups,
        report,
        retire,
        stage_alt_complete,
        stage_alt_labels,
        stage_alt_members,
        stage_alt_render,
        stage_alt_round,
        stage_canonicals,
        stage_gather,
        stage_hreflang,
        stage_merge,
        stage_range,
        stage_rows,
        stage_split,
    )

_LOCAL = ("BuildSummary", "plan", "plan_finish", "run_build", "stage")

__all__ = [
    "BuildRun", "BuildSummary", "host_runs", "load_plan", "load_prepared", "notify", "plan", "plan_chunk",
    "plan_finish", "plan_name", "plan_place", "plan_prepare", "plan_write", "publish", "render", "render_groups",
    "report", "retire", "run_build", "stage", "stage_alt_complete", "stage_alt_labels", "stage_alt_members",
    "stage_alt_render", "stage_alt_round", "stage_canonicals", "stage_gather", "stage_hreflang", "stage_merge",
    "stage_range", "stage_rows", "stage_split",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module("sitemap_ops.pipeline." + ("local" if name in _LOCAL else "steps"))
    return getattr(module, name)

"""The build's steps: one function each, taking the build (`BuildRun`) and what earlier steps handed over.

One module per phase: run (the build, its work folder, session and lease), staging, planning, output (render,
publish, retire, notify), reporting, and handover (what the runners need of the results); every name is
importable from here, where the graph finds a step's function.

Which steps a build runs, in which order and fanned out over what, is the graph's (sitemap_ops.pipeline.graph):
the CLI walks it in one process (sitemap_ops.pipeline.local), Airflow renders it into tasks
(sitemap_ops.airflow.graph). Steps hand over files in the build's work folder (sitemap_ops.constants lists them)
plus small typed results, so each can run in its own process.

Rerunning a step of the same build (same id and clock) rewrites the same files, so a retried task gives
identical output. Render writes only new, content-named objects that no live index names, so it cannot
change the live site. Publish switches the index only if it is still the one plan read.

The publish lease (sitemap_ops.publish.lease) keeps two builds of one site from doing the same work at once;
safety never depends on it. The in-process runner holds it for the whole build and hands it to each step, which
checks it is still held; a step given none (a scheduler's task) takes it for its own duration where it touches
the live site (publish, retire, notify). Pruning of old work folders happens in retire.
"""

from __future__ import annotations

from sitemap_ops.pipeline.steps.handover import failure, fan_out, handed_over, number_groups, summary
from sitemap_ops.pipeline.steps.output import notify, publish, render, render_groups, retire
from sitemap_ops.pipeline.steps.planning import (
    load_plan,
    load_prepared,
    plan_chunk,
    plan_name,
    plan_place,
    plan_prepare,
    plan_write,
)
from sitemap_ops.pipeline.steps.reporting import report, site_report, tidy_hosts
from sitemap_ops.pipeline.steps.run import BuildRun, host_runs, new_lease, preflight, shared_session
from sitemap_ops.pipeline.steps.staging import (
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

__all__ = [
    "BuildRun", "failure", "fan_out", "handed_over", "host_runs", "load_plan", "load_prepared", "new_lease",
    "notify", "number_groups", "plan_chunk", "plan_name", "plan_place", "plan_prepare", "plan_write",
    "preflight", "publish", "render", "render_groups", "report", "retire", "shared_session", "site_report",
    "stage_alt_complete", "stage_alt_labels", "stage_alt_members", "stage_alt_render", "stage_alt_round",
    "stage_canonicals", "stage_gather", "stage_hreflang", "stage_merge", "stage_range", "stage_rows", "stage_split",
    "summary", "tidy_hosts",
]  # fmt: skip

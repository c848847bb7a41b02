"""What the runners need of the steps' results: the numbers a mapped step fans out over, the typed value a step hands
over to a step in another process, and the small summary a scheduler keeps of it (XCom)."""

from __future__ import annotations

from collections.abc import Sequence

from sitemap_ops.constants import REPORT_NAME
from sitemap_ops.notify.notify import NotifyResult
from sitemap_ops.pipeline.graph import FanOut
from sitemap_ops.pipeline.steps.output import render_groups
from sitemap_ops.pipeline.steps.planning import load_plan, load_prepared
from sitemap_ops.pipeline.steps.run import BuildRun
from sitemap_ops.plan.plan import Placement, Plan, load_placement
from sitemap_ops.plan.prepared import PreparedPlan
from sitemap_ops.publish.publish import PublishResult, RetireResult
from sitemap_ops.render.render import RenderedShard
from sitemap_ops.stage.result import SplitResult, StageResult


def number_groups(count: int, most: int) -> list[tuple[int, int]]:
    """The numbers 0..count-1 in at most `most` inclusive groups (first, last) of about equal size."""
    groups = min(count, max(1, most))
    return [(count * g // groups, count * (g + 1) // groups - 1) for g in range(groups)]


def fan_out(run: BuildRun, fan: FanOut, value: object, most: int, group_bytes: int) -> list[tuple[int, int]]:
    """The groups (first, last) a step mapped as `fan` runs for, from its slot's `value`, at most `most`: a
    stage's input splits or its URL ranges (one each; none when it has none), a prepared plan's chunk tasks, the
    assignment's parts (after placement), the shard keys to render (sized by their bytes)."""
    if fan.over == "staged":
        assert isinstance(value, StageResult)
        if fan.unit == "input split":
            return number_groups(len(value.splits.splits), most) if value.splits is not None else []
        return number_groups(len(value.ranges.rows), most) if value.ranges is not None else []
    if fan.over == "prepared":
        assert isinstance(value, PreparedPlan)
        return number_groups(value.tasks, most)
    if fan.over == "placement":
        return number_groups(len(load_prepared(run).chunks), most)
    if fan.over == "plan":
        assert isinstance(value, Plan)
        return render_groups(value, most, group_bytes)
    raise ValueError(f"no step fans out over {fan.over}")


def handed_over(run: BuildRun, slot: str, value: object) -> object:
    """The typed value of `slot` in a step of another process, from what the scheduler kept of it (summary):
    a stage's results travel whole; a plan's are read back from the work folder, where their step wrote them;
    render's shards are not handed on (the live manifest records them). A slot whose step failed (nothing
    kept: None) is None, for the steps that run all the same (the report)."""
    if slot == "staged":
        assert value is None or isinstance(value, dict)
        return None if value is None else StageResult.from_dict(value)
    if slot == "splits":  # (each input split's task's, in split order; none when the stage did not split)
        assert value is None or isinstance(value, Sequence)
        return [SplitResult.from_dict(split) for split in value or []]
    if slot == "prepared":
        return load_prepared(run)
    if slot == "placement":
        return load_placement(run.work)
    if slot == "plan":
        return None if value is None else load_plan(run)
    return None


def summary(run: BuildRun, value: object) -> object:
    """What a scheduler keeps of a step's result (small JSON): a stage's results whole, counts of the rest."""
    if isinstance(value, StageResult | SplitResult):
        return value.to_dict()
    if isinstance(value, PreparedPlan):
        return {"urls": value.total, "chunk_tasks": value.tasks}
    if isinstance(value, Placement):
        return {"shards": len(value.key_shards), "changes": value.changes}
    if isinstance(value, Plan):
        return {
            "previous_build_id": value.previous_build_id,
            "urls": value.total_urls,
            "shards": len(value.shards),
            "shards_to_render": sum(1 for s in value.shards if s.render),
            "notes": value.state_notes,
        }
    if isinstance(value, list):  # render's shards
        shards = [r for r in value if isinstance(r, RenderedShard)]
        return {"shards_written": len(shards), "bytes_written": sum(r.compressed_bytes or r.bytes for r in shards)}
    if isinstance(value, PublishResult):
        manifest = value.manifest
        return {
            "build_id": run.build_id,
            "urls": manifest.totals["urls"],
            "shards": manifest.totals["shards"],
            "shards_written": manifest.totals["shards_written"],
            "index_files": manifest.index_files,
            "index_urls": [run.config.public_url + name for name in manifest.index_files],
            "index_switched": value.index_switched,
            "notes": load_plan(run).state_notes,
            "changes": manifest.changes,
            "report": run.work.url_of(REPORT_NAME),
        }
    if isinstance(value, RetireResult):
        return {"retired": value.deleted, "refused": value.refused}
    if isinstance(value, NotifyResult):
        return value.to_dict()
    return value


def failure(value: object) -> str:
    """Why a step that returned `value` failed all the same ("" when it did not): IndexNow refused."""
    return value.error if isinstance(value, NotifyResult) else ""

"""A build step by step: each step of the graph (sitemap_ops.pipeline.graph) in a process of its own, as Airflow's
tasks run them, with its wall time and peak RSS (benchmarks/run.py's peak_rss_of); the steps hand over what a
scheduler would keep of their results, as JSON files.

`python benchmarks/steps.py CONFIG [--stage-only]`: the site of CONFIG (a site TOML file with its sources,
output, work_dir and [duckdb] settings; one host) built step by step: every step the site needs, in the graph's
order, a mapped step once for each of its numbers (input splits, URL ranges, chunks, parts) or render groups.
`--stage-only` stops after the stage. Prints each step's count, seconds (fastest, slowest, all together) and
highest peak RSS, and the stage's counts, as JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from sitemap_ops.config import load_config
from sitemap_ops.constants import RENDER_GROUP_BYTES
from sitemap_ops.pipeline.graph import BY_NAME, Step, steps_for

HERE = Path(__file__).resolve().parent


def _handed(state: Path, slot: str) -> Any:
    """What the steps so far handed over in `slot` (a mapped step's: each of its runs' in order), or None."""
    single = state / f"{slot}.json"
    if single.exists():
        return json.loads(single.read_text())
    parts = sorted(state.glob(f"{slot}-*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    return [json.loads(p.read_text()) for p in parts] if parts else None


def _run(config: str, state: Path) -> Any:
    """The build of this step-by-step run (a new one for its first step)."""
    from sitemap_ops.pipeline.steps import BuildRun

    run_file = state / "run.json"
    if not run_file.exists():
        run = BuildRun.new(load_config(config))
        run_file.write_text(json.dumps({"build_id": run.build_id, "now": run.now.isoformat()}))
        return run
    started = json.loads(run_file.read_text())
    return BuildRun(load_config(config), started["build_id"], dt.datetime.fromisoformat(started["now"]))


def _run_step(config: str, state: Path, name: str, first: int, last: int) -> None:
    """One step in this process (a mapped one for numbers or the render group first..last): its slots read from
    the state folder `state`, its result's summary written there."""
    from sitemap_ops.pipeline.local import call
    from sitemap_ops.pipeline.steps import handed_over, summary

    step = BY_NAME[name]
    run = _run(config, state)
    slots = {slot: handed_over(run, slot, _handed(state, slot)) for slot in step.takes}
    if step.fan_out is None:
        result = call(step, run, slots, {})
    elif step.fan_out.each:
        (result,) = [call(step, run, slots, {}, (n,)) for n in range(first, last + 1)]
    else:
        result = call(step, run, slots, {}, ((first, last),))
    if step.gives is not None:
        suffix = f"-{first}" if step.fan_out is not None else ""
        (state / f"{step.gives}{suffix}.json").write_text(json.dumps(summary(run, result)))


def _groups(config: str, state: Path, step: Step) -> list[tuple[int, int]]:
    """The numbers (first, first) or render groups (first, last) a mapped step runs for, from its slot."""
    from sitemap_ops.pipeline.steps import fan_out, handed_over

    assert step.fan_out is not None
    run = _run(config, state)
    over = handed_over(run, step.fan_out.over, _handed(state, step.fan_out.over))
    groups = fan_out(run, step.fan_out, over, 1 << 30, RENDER_GROUP_BYTES)
    return groups if not step.fan_out.each else [(n, n) for first, last in groups for n in range(first, last + 1)]


def steps(config: str, stage_only: bool = False) -> dict[str, Any]:
    """Build the site of `config` step by step, each step in its own process; each step's figures and the
    stage's counts."""
    sys.path.insert(0, str(HERE))
    from run import peak_rss_of

    state = Path(tempfile.mkdtemp(prefix="sitemap-ops-steps-"))
    figures: dict[str, list[tuple[float, int]]] = {}
    for step in steps_for(load_config(config)):
        if stage_only and step.phase != "stage":
            break
        for first, last in _groups(config, state, step) if step.fan_out else [(0, 0)]:
            cmd = [sys.executable, __file__, config, "--step", step.name, "--state", str(state)]
            child = peak_rss_of([*cmd, "--first", str(first), "--last", str(last)], state)
            figures.setdefault(step.name, []).append((child.seconds, child.peak))
    staged = _handed(state, "staged")
    return {
        "steps": {
            name: {
                "count": len(runs),
                "seconds_min": round(min(s for s, _ in runs), 1),
                "seconds_max": round(max(s for s, _ in runs), 1),
                "seconds_all": round(sum(s for s, _ in runs), 1),
                "peak_rss_mb": round(max(p for _, p in runs) / 2**20),
            }
            for name, runs in figures.items()
        },
        "staged": staged["staged"],
        "rejected": staged["rejected"],
        "canonicals": staged["canonicals"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="the site's TOML file")
    parser.add_argument("--stage-only", action="store_true", help="stop after the stage")
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--last", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step:
        _run_step(args.config, args.state, args.step, args.first, args.last)
    else:
        print(json.dumps(steps(args.config, args.stage_only), indent=2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

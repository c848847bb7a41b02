"""A split stage step by step: each step in a process of its own, as Airflow's tasks run them, with its wall time
and peak RSS (benchmarks/run.py's peak_rss_of), the results handed over as JSON files.

`python benchmarks/steps.py CONFIG`: the site of CONFIG (a site TOML file with its sources, output, work_dir and
[duckdb] settings, stage_splits above 1) staged step by step: stage, each stage_split, stage_gather, each
stage_canonicals, each stage_range, completing hreflang clusters each stage_alt_round of the DAG's mapped rounds,
stage_alt_labels and each stage_alt_members, stage_alt_complete and stage_alt_render, each stage_hreflang,
stage_merge. Prints each kind of step's count, seconds
(fastest, slowest, all together) and highest peak RSS, as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from sitemap_ops.constants import ALT_MAPPED_ROUNDS

HERE = Path(__file__).resolve().parent


def _run_step(config: str, state: Path, step: str, number: int) -> None:
    """One step, in this process: its inputs and result in the state folder `state`."""
    import datetime as dt

    from sitemap_ops import pipeline
    from sitemap_ops.config import load_config
    from sitemap_ops.stage.result import SplitResult, StageResult

    run_file = state / "run.json"
    if step == "stage":
        run = pipeline.BuildRun.new(load_config(config))
        run_file.write_text(json.dumps({"build_id": run.build_id, "now": run.now.isoformat()}))
        (state / "staged.json").write_text(json.dumps(pipeline.stage_rows(run).to_dict()))
        return
    started = json.loads(run_file.read_text())
    run = pipeline.BuildRun(load_config(config), started["build_id"], dt.datetime.fromisoformat(started["now"]))
    staged = StageResult.from_dict(json.loads((state / "staged.json").read_text()))
    if step == "stage_split":
        (state / f"split-{number}.json").write_text(json.dumps(pipeline.stage_split(run, staged, number).to_dict()))
    elif step == "stage_gather":
        assert staged.splits is not None
        read = [SplitResult.from_dict(json.loads((state / f"split-{n}.json").read_text()))
                for n in range(len(staged.splits.splits))]  # fmt: skip
        (state / "staged.json").write_text(json.dumps(pipeline.stage_gather(run, staged, read).to_dict()))
    elif step == "stage_canonicals":
        pipeline.stage_canonicals(run, staged, number)
    elif step == "stage_range":
        pipeline.stage_range(run, staged, number)
    elif step.startswith("stage_alt_round_"):
        pipeline.stage_alt_round(run, staged, int(step.removeprefix("stage_alt_round_")), number)
    elif step == "stage_alt_labels":
        pipeline.stage_alt_labels(run, staged, done=ALT_MAPPED_ROUNDS)
    elif step == "stage_alt_members":
        pipeline.stage_alt_members(run, staged, number)
    elif step == "stage_alt_complete":
        pipeline.stage_alt_complete(run, staged, number)
    elif step == "stage_alt_render":
        pipeline.stage_alt_render(run, staged, number)
    elif step == "stage_hreflang":
        pipeline.stage_hreflang(run, staged, number)
    else:
        merged = pipeline.stage_merge(run, staged)
        (state / "merged.json").write_text(json.dumps(merged.to_dict()))


def steps(config: str) -> dict[str, Any]:
    """Stage the site of `config` step by step, each step in its own process; each kind of step's figures and the
    merged result's counts."""
    sys.path.insert(0, str(HERE))
    from run import peak_rss_of

    state = Path(tempfile.mkdtemp(prefix="sitemap-ops-steps-"))
    figures: dict[str, list[tuple[float, int]]] = {}

    def step(name: str, number: int = 0) -> None:
        cmd = [sys.executable, __file__, config, "--step", name, "--state", str(state), "--number", str(number)]
        seconds, peak, _ = peak_rss_of(cmd, state)
        figures.setdefault(name, []).append((seconds, peak))

    def staged() -> dict[str, Any]:
        return dict(json.loads((state / "staged.json").read_text()))

    step("stage")
    if splits := staged()["splits"]:
        for number in range(len(splits["splits"])):
            step("stage_split", number)
        step("stage_gather")
    from sitemap_ops.stage.result import StageResult

    ranges = StageResult.from_dict(staged()).ranges
    if ranges is not None:
        for part in ranges.canonical_parts():
            step("stage_canonicals", part)
        for part in range(len(ranges.rows)):
            step("stage_range", part)
        if completing := ranges.completion_parts():
            for round_number in range(1, ALT_MAPPED_ROUNDS + 1):
                for part in completing:
                    step(f"stage_alt_round_{round_number}", part)
            step("stage_alt_labels")
            for name in ("stage_alt_members", "stage_alt_complete", "stage_alt_render"):
                for part in completing:
                    step(name, part)
        for part in ranges.hreflang_parts():
            step("stage_hreflang", part)
        step("stage_merge")
    merged = json.loads((state / ("merged.json" if ranges is not None else "staged.json")).read_text())
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
        "staged": merged["staged"],
        "rejected": merged["rejected"],
        "canonicals": merged["canonicals"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="the site's TOML file")
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--number", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step:
        _run_step(args.config, args.state, args.step, args.number)
    else:
        print(json.dumps(steps(args.config), indent=2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

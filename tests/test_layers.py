"""The package's layers: each module imports only its own layer or lower ones (each ranked where it really is: a
stage's config with its stage, no exceptions), and no imports run in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import sitemap_ops

PACKAGE = Path(sitemap_ops.__file__).parent

# Lowest first. A module belongs to the first layer one of whose patterns matches its dotted name (without
# the package prefix); "*" matches one name part.
AFTER_PLAN = ("render", "render.*", "publish", "publish.*", "notify", "notify.*", "report", "report.*")
LAYERS: list[tuple[str, ...]] = [
    ("__init__", "constants", "errors", "host", "progress", "deadline"),  # facts and plumbing every layer may use
    # protocol rules, the shards' format and bytes, storage access, its compare-and-swap writes (and DuckDB's view
    # of storage)
    ("urls", "framing", "robots", "storage", "versioned", "session_fs"),
    # the DuckDB session, the manifest, the staged snapshot's files; the build's step graph (data: names, slots)
    ("duck", "manifest", "snapshot", "pipeline.graph"),
    ("stage", "stage.*"),  # each stage with its own config, exceptions and results, in the order they run
    ("plan", "plan.*"),
    # the steps after the plan, and the independent checker (validate, by the rules of checks; fetch reads for it)
    (*AFTER_PLAN, "validate", "checks", "fetch"),
    ("config",),  # the site's config: every stage's section, each stage handed only its own settings
    ("workspace",),  # a build's work folder and DuckDB session
    ("pipeline", "pipeline.*", "pipeline.steps.*"),  # the steps (by phase), their graph, the in-process runner
    # the two ways to run the pipeline
    ("cli", "commands", "summary", "__main__", "airflow", "airflow.*"),
]


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def _matches(name: str, pattern: str) -> bool:
    parts, wanted = name.split("."), pattern.split(".")
    return len(parts) == len(wanted) and all(w in ("*", p) for p, w in zip(parts, wanted, strict=True))


def _layer(name: str) -> int:
    for rank, patterns in enumerate(LAYERS):
        if any(_matches(name, p) for p in patterns):
            return rank
    raise AssertionError(f"sitemap_ops.{name} is in no layer: add it to tests/test_layers.py's LAYERS")


def _imports(path: Path) -> set[str]:
    """The package's modules `path` imports at run time (imports under `if TYPE_CHECKING:` are for types only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for stmt in block.body
        for node in ast.walk(stmt)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sitemap_ops"):
            base = node.module.removeprefix("sitemap_ops").lstrip(".")
            for alias in node.names:
                candidate = f"{base}.{alias.name}" if base else alias.name
                found.add(candidate if (PACKAGE / (candidate.replace(".", "/") + ".py")).exists() else base)
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("sitemap_ops.") for a in node.names if a.name.startswith("sitemap_ops.")}
    return {name for name in found if name}


GRAPH = {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_imports_only_its_layer_or_lower_ones() -> None:
    upward = [
        f"{module} (layer {_layer(module)}) imports {other} (layer {_layer(other)})"
        for module, imported in GRAPH.items()
        for other in sorted(imported)
        if other != "__init__" and _layer(other) > _layer(module)
    ]
    assert not upward, upward


def test_no_imports_run_in_a_circle() -> None:
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            raise AssertionError("an import circle: " + " -> ".join([*path[path.index(module) :], module]))
        if module in done:
            return
        for other in sorted(GRAPH.get(module, ())):
            visit(other, [*path, module])
        done.add(module)

    for module in GRAPH:
        visit(module, [])


def test_the_layer_check_sees_imports() -> None:
    # the graph is read from the sources: a module known to import two others shows both
    assert {"plan.plan", "pipeline.steps.run"} <= GRAPH["pipeline.steps.planning"]
    assert "storage" in GRAPH["duck"]

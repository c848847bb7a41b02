"""Writes the configuration and CLI references (docs/reference/) from the typed config classes and the parser.

Run `python docs/reference.py` after adding a key or a flag; tests/test_docs.py fails while the committed pages
differ from what this writes, and this fails on a config key whose class gives it no comment."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import io
import sys
import textwrap
import tokenize
import typing
from pathlib import Path
from typing import Any

from sitemap_ops import cli
from sitemap_ops.config import SiteConfig

HERE = Path(__file__).resolve().parent
PAGES = {"configuration": HERE / "reference" / "configuration.md", "cli": HERE / "reference" / "cli.md"}


def field_comments(cls: type) -> dict[str, str]:
    """Each field's comment in the class source: the comment lines right above it and the one after it."""
    source = textwrap.dedent(inspect.getsource(cls))
    comments: dict[int, str] = {}
    code_lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string.lstrip("#").strip()
        elif token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            code_lines.add(token.start[0])
    lines = source.splitlines()
    found: dict[str, str] = {}
    for field in dataclasses.fields(cls):
        number = next(i for i, line in enumerate(lines, 1) if line.startswith(f"    {field.name}:"))
        above: list[str] = []
        previous = number - 1
        while previous in comments and previous not in code_lines:
            above.insert(0, comments[previous])
            previous -= 1
        trailing = [comments[number]] if number in comments and number in code_lines else []
        found[field.name] = " ".join(above + trailing).replace("fmt: skip", "").strip()
    return found


def type_name(hint: Any) -> str:
    """A TOML reader's name for a field's type."""
    origin = typing.get_origin(hint)
    if origin is tuple:
        return f"list of {type_name(typing.get_args(hint)[0])}s"
    if origin is dict:
        return "table"
    if origin is not None:  # a union: the field's own check says what it takes
        return " or ".join(type_name(arg) for arg in typing.get_args(hint))
    return {str: "string", int: "integer", float: "number", bool: "boolean", object: "value"}.get(hint, "table")


def default_text(field: dataclasses.Field[Any]) -> str:
    """A field's default as TOML would write it; `required` when it has none."""
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, str):
        return f'`"{value}"`' if value else '`""`'
    if isinstance(value, tuple | list):
        return "`[]`" if not value else "`[" + ", ".join(f'"{v}"' for v in value) + "]`"
    if isinstance(value, dict):
        return "`{}`"
    return f"`{value}`"


def markdown_text(comment: str) -> str:
    """A comment as a table cell's Markdown: <placeholders> shown, not read as HTML (outside `code`), pipes
    escaped."""
    parts = comment.split("`")
    parts[::2] = [part.replace("<", "&lt;").replace(">", "&gt;") for part in parts[::2]]
    return "`".join(parts).replace("|", "\\|")


def config_tables(cls: type, prefix: str, heading: str, out: list[str], missing: list[str]) -> None:
    """One section per config table: its keys with type, default and meaning; nested tables after it."""
    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    doc = inspect.cleandoc(cls.__doc__ or "")
    rows: list[str] = []
    nested: list[tuple[type, str, str]] = []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        item = typing.get_args(hint)[0] if typing.get_origin(hint) is tuple else hint
        if isinstance(item, type) and dataclasses.is_dataclass(item):
            many = typing.get_origin(hint) is tuple
            name = f"{prefix}{field.name}"
            nested.append((item, f"{name}.", f"[[{name}]]" if many else f"[{name}]"))
            continue
        meaning = comments[field.name]
        if not meaning:
            missing.append(f"{cls.__module__}.{cls.__qualname__}.{field.name}")
        meaning = markdown_text(meaning)
        rows.append(f"| `{field.name}`<br>{type_name(hint)}, {default_text(field)} | {meaning} |")
    out += [f"## {heading}" if heading.startswith("The") else f"## `{heading}`", "", doc, ""]
    if rows:
        out += ["| key, type, default | meaning |", "| --- | --- |", *rows, ""]
    for item, child_prefix, child_heading in nested:
        config_tables(item, child_prefix, child_heading, out, missing)


def configuration_page() -> str:
    out = [
        "# Configuration reference",
        "",
        "Every key of a site's TOML file, generated from the typed config classes (`python docs/reference.py`).",
        "A flag of the CLI sets the key of the same name and wins over the file; an unknown key or a value of",
        "the wrong type stops the build with one line naming it. The limits' profile (`profile`) fills the",
        "`[shards]` and `[extensions]` limits the file does not set itself.",
        "",
    ]
    missing: list[str] = []
    config_tables(SiteConfig, "", "The site: top-level keys", out, missing)
    if missing:
        raise SystemExit("config keys without a comment in their class: " + ", ".join(missing))
    return "\n".join(out).rstrip() + "\n"


def cli_page() -> str:
    parser = cli.parser()
    out = [
        "# CLI reference",
        "",
        "Generated from the argument parser (`python docs/reference.py`); the exit codes end the first block.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
    for action in parser._actions:  # argparse keeps its sub-commands here only
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += [f"## `sitemap-ops {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(out).rstrip() + "\n"


def pages() -> dict[str, str]:
    return {"configuration": configuration_page(), "cli": cli_page()}


def main() -> int:
    for name, text in pages().items():
        PAGES[name].write_text(text, encoding="utf-8")
        print(f"wrote {PAGES[name].relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

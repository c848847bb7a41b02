"""What the stage step hands on: its counts and the files it wrote (light: no DuckDB, so a DAG file may import it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class StageResult:
    """What the stage step did; small and JSON-able (it travels in XCom and the manifest)."""

    rows_in: int
    staged: int
    duplicates: int
    rejected: dict[str, int] = field(default_factory=dict)
    fields_dropped: dict[str, int] = field(default_factory=dict)
    staged_path: str = ""
    rejects_path: str = ""
    # images, videos, news and alternates (sitemap_ops.stage.extensions.ExtensionResult); {} without any
    extensions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageResult:
        """The result back from to_dict() (a scheduler passed it between tasks); other keys are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

"""Configuration of the render step: output format and compression."""

from __future__ import annotations

from dataclasses import dataclass

from sitemap_ops.errors import ConfigError

FORMATS = ("xml", "txt")


@dataclass(frozen=True)
class RenderConfig:
    """How shard files are written."""

    format: str = "xml"  # xml (<urlset>) | txt (one URL per line)
    gzip: bool = True
    gzip_level: int = 1  # isal levels 0-3 (1 is ~10x faster than zlib 6 for ~10% more bytes); zlib maps 0-9

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ConfigError(f"render.format must be one of {', '.join(FORMATS)}, not {self.format!r}")
        if not 0 <= self.gzip_level <= 9:
            raise ConfigError("render.gzip_level must be between 0 and 9")

    @property
    def suffix(self) -> str:
        """The shard file ending, e.g. '.xml.gz'."""
        return "." + self.format + (".gz" if self.gzip else "")

"""Config errors carry every bad field at once, so an operator fixes a file in one pass."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One bad field: its path in the document (``a.b[1].c``) and why it is bad."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason


class ConfigError(Exception):
    """The whole config was rejected; nothing from it has been applied."""

    def __init__(self, source: str, errors: list[FieldError]) -> None:
        self.source = source
        self.errors = errors
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """The message, one line per bad field (each printed escaped: paths and values come
        from the file)."""
        head = f"invalid config {self.source}: {len(self.errors)} error(s)"
        return [head, *(f"  {error}" for error in self.errors)]

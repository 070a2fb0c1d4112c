"""Error types that name the offending file (and line) so users can fix their input."""
from __future__ import annotations

from pathlib import Path


class CsbenchError(Exception):
    """Base class of all csbench errors."""


class InputError(CsbenchError):
    """Malformed or missing input: the message names the file and, where known, the line."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ChecksumError(InputError):
    """A file's sha256 differs from the configured value."""

    def __init__(self, path: str | Path, expected: str, actual: str):
        self.expected = expected
        self.actual = actual
        super().__init__(path, f"sha256 mismatch: expected {expected}, got {actual}")


class ConfigError(CsbenchError):
    """The configuration does not satisfy the schema."""

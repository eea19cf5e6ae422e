"""Converters for the loaders' data options (``harness.options`` style: a bad value raises ``ValueError`` saying
what was expected).

Data options come from a task file's ``data:`` mapping, so they arrive typed by YAML, and the loaders take them as
YAML gives them: a number must be a number and a boolean a boolean (``"5"`` and ``"yes"`` are refused, unlike the
command-line grammar of :func:`harness.options.positive_int` and :func:`harness.options.boolean`).
"""

from __future__ import annotations

from typing import Any

from harness.api import shorten_repr


def folder(value: Any) -> str:
    """A folder name under the data root (a non-empty string)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a folder name, got {shorten_repr(value)}")
    return value


def file_name(value: Any) -> str:
    """A file name (a non-empty string)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a file name, got {shorten_repr(value)}")
    return value


def count(value: Any) -> int:
    """A positive YAML integer (not a boolean, not a string)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"expected a positive integer, got {shorten_repr(value)}")
    return value


def flag(value: Any) -> bool:
    """A YAML boolean."""
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {shorten_repr(value)}")
    return value


def integers(value: Any) -> list[int]:
    """A list of YAML integers."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"expected a list of integers, got {shorten_repr(value)}")
    return list(value)

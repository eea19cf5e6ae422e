"""Progress bars that show on a terminal and stay out of CI logs."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress_enabled() -> bool:
    if os.environ.get("CI") or os.environ.get("HARNESS_NO_PROGRESS"):
        return False
    return sys.stderr.isatty()


def progress(items: Iterable[T], total: int | None = None, desc: str = "", unit: str = "it") -> Iterator[T]:
    yield from tqdm(items, total=total, desc=desc, unit=unit, disable=not progress_enabled(), dynamic_ncols=True)

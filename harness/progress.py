"""Progress: a bar on a terminal, a log line every few seconds elsewhere, nothing when asked for nothing.

* stderr is a terminal (and ``CI`` is not set): a tqdm bar.
* otherwise (a run logged to a file, CI): one line on stderr at most every ``HARNESS_PROGRESS_SECONDS`` seconds
  (default 30), the first one only after that long, in the style of lm-evaluation-harness's logging::

      [2026-11-23 16:40:01] provo: 1,200/2,687 instances (44.7%), 3.1 instances/s, ETA 8m02s

  A run shorter than the interval prints nothing; a run that printed a line prints a last one when it completes.
* ``HARNESS_NO_PROGRESS`` set: neither bars nor lines.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import TextIO, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")

#: Seconds between progress lines when no bar is shown, unless ``HARNESS_PROGRESS_SECONDS`` says otherwise.
DEFAULT_LINE_SECONDS = 30.0

# Looked up at call time, so tests can replace them with a fake clock.
_clock: Callable[[], float] = time.monotonic
_now: Callable[[], datetime] = datetime.now


def progress_enabled() -> bool:
    """Whether a progress bar is shown: stderr is a terminal, and neither ``CI`` nor ``HARNESS_NO_PROGRESS`` is set."""
    if os.environ.get("CI") or os.environ.get("HARNESS_NO_PROGRESS"):
        return False
    return sys.stderr.isatty()


def progress_lines_enabled() -> bool:
    """Whether progress is logged as lines: no bar is shown, and ``HARNESS_NO_PROGRESS`` is not set."""
    return not os.environ.get("HARNESS_NO_PROGRESS") and not progress_enabled()


def line_interval() -> float:
    """``HARNESS_PROGRESS_SECONDS`` as a number of seconds (0 logs after every item); unset or invalid: 30."""
    text = os.environ.get("HARNESS_PROGRESS_SECONDS", "").strip()
    try:
        seconds = float(text)
    except ValueError:
        return DEFAULT_LINE_SECONDS
    return seconds if math.isfinite(seconds) and seconds >= 0 else DEFAULT_LINE_SECONDS


def format_duration(seconds: float) -> str:
    """``42s``, ``8m02s``, ``1h05m03s`` (rounded to the second)."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def _plural(unit: str) -> str:
    return unit if unit.endswith("s") else unit + "s"


class ProgressLog:
    """Writes a progress line to ``stream`` when ``update`` finds ``interval`` seconds passed since the last one.

    ``clock`` measures elapsed time (monotonic seconds), ``now`` gives the wall-clock time stamped on each line.
    The rate is the average since the log was created; the ETA assumes it holds for the rest.
    """

    def __init__(
        self,
        total: int | None,
        desc: str,
        unit: str,
        *,
        interval: float,
        stream: TextIO,
        clock: Callable[[], float],
        now: Callable[[], datetime],
    ) -> None:
        self.total = total
        self.desc = desc
        self.unit = unit
        self.interval = interval
        self.stream = stream
        self.clock = clock
        self.now = now
        self.done = 0
        #: Appended to each line after the counts (``2/2 workers; provo 3/10 blocks``); empty for none.
        self.status = ""
        self.start = clock()
        self.last_line = self.start
        self.printed_at: int | None = None  # ``done`` at the last line written

    def update(self, n: int) -> None:
        self.done += n
        t = self.clock()
        if t - self.last_line >= self.interval:
            self.write(t)

    def finish(self) -> None:
        """A last line at completion, only when earlier lines were written and this one says something new."""
        if self.printed_at is not None and self.printed_at != self.done:
            self.write(self.clock())

    def line(self, t: float) -> str:
        elapsed = t - self.start
        units = _plural(self.unit)
        count = f"{self.done:,}"
        if self.total is not None:
            count += f"/{self.total:,} {units}"
            if self.total > 0:
                count += f" ({100.0 * self.done / self.total:.1f}%)"
        else:
            count += f" {units}"
        parts = [count]
        rate = self.done / elapsed if elapsed > 0 else 0.0
        if rate >= 1:
            parts.append(f"{rate:,.1f} {units}/s")
        elif rate > 0:
            parts.append(f"{1 / rate:,.1f} s/{self.unit}")
        if self.total is not None and rate > 0 and self.done < self.total:
            parts.append(f"ETA {format_duration((self.total - self.done) / rate)}")
        if self.status:
            parts.append(self.status)
        prefix = f"{self.desc}: " if self.desc else ""
        return f"[{self.now():%Y-%m-%d %H:%M:%S}] {prefix}{', '.join(parts)}"

    def write(self, t: float) -> None:
        print(self.line(t), file=self.stream, flush=True)
        self.last_line = t
        self.printed_at = self.done


class Progress:
    """Work counted as it completes, in any order (a bar, lines or nothing, as the module docstring says).

    Why a class beside :func:`progress`: the Ray executor gets blocks back in completion order from several
    workers and has more to say than a count (workers alive, blocks per task), which ``set_status`` adds.
    """

    def __init__(self, total: int | None, desc: str = "", unit: str = "it") -> None:
        self.bar_shown = progress_enabled()
        self.log: ProgressLog | None = None
        if not self.bar_shown and progress_lines_enabled():
            self.log = ProgressLog(
                total, desc, unit, interval=line_interval(), stream=sys.stderr, clock=_clock, now=_now
            )
        self.bar = tqdm(total=total, desc=desc, unit=unit, disable=not self.bar_shown, dynamic_ncols=True)

    def set_status(self, status: str) -> None:
        """What the next bar refresh or line shows after the counts."""
        if self.bar_shown:
            self.bar.set_postfix_str(status, refresh=False)
        if self.log is not None:
            self.log.status = status

    def update(self, n: int = 1) -> None:
        self.bar.update(n)
        if self.log is not None:
            self.log.update(n)

    def close(self) -> None:
        self.bar.close()
        if self.log is not None:
            self.log.finish()
            self.log = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress(
    items: Iterable[T],
    total: int | None = None,
    desc: str = "",
    unit: str = "it",
    weight: Callable[[T], int] | None = None,
) -> Iterator[T]:
    """Yield ``items`` while showing progress (see the module docstring for the three modes).

    ``weight(item)`` is how many ``unit`` an item holds (the runner iterates blocks of instances with ``weight=len``
    and ``total`` = the number of instances); without it every item counts one. An item is counted once the loop
    asks for the next one, i.e. once its work is done. ``unit`` is singular (``instance``); lines pluralise it.
    """
    if total is None and weight is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with Progress(total, desc, unit) as shown:
        for item in items:
            yield item
            shown.update(1 if weight is None else weight(item))

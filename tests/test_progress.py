"""Progress lines for runs whose stderr is not a terminal, on a fake clock: when they appear and what they say."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

import harness.progress as progress_module
from harness.progress import format_duration, progress, progress_enabled, progress_lines_enabled

START = datetime(2026, 11, 23, 16, 40, 1)


class FakeClock:
    """Monotonic seconds that only move when the test says so; wall-clock time moves with them from ``START``."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return START + timedelta(seconds=self.t - 1000.0)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    fake = FakeClock()
    monkeypatch.setattr(progress_module, "_clock", fake.monotonic)
    monkeypatch.setattr(progress_module, "_now", fake.now)
    for var in ("HARNESS_NO_PROGRESS", "HARNESS_PROGRESS_SECONDS", "CI"):
        monkeypatch.delenv(var, raising=False)
    yield fake


def _consume(items: Iterator[Any], clock: FakeClock, seconds_per_item: float) -> None:
    for _ in items:
        clock.t += seconds_per_item  # the work on this block takes this long


def test_lines_every_interval_with_weights(clock: FakeClock, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = [list(range(16))] * 10 + [list(range(7))]  # 167 instances in 11 blocks
    _consume(progress(blocks, total=167, desc="provo", unit="instance", weight=len), clock, 8.0)
    assert capsys.readouterr().err.splitlines() == [
        # 4 blocks after 32 s: 64 instances, 2.0/s, 103 left
        "[2026-11-23 16:40:33] provo: 64/167 instances (38.3%), 2.0 instances/s, ETA 52s",
        "[2026-11-23 16:41:05] provo: 128/167 instances (76.6%), 2.0 instances/s, ETA 20s",
        # the last line at completion: 167 instances in 88 s
        "[2026-11-23 16:41:29] provo: 167/167 instances (100.0%), 1.9 instances/s",
    ]


def test_short_run_prints_nothing(clock: FakeClock, capsys: pytest.CaptureFixture[str]) -> None:
    _consume(progress([[1, 2]] * 5, total=10, desc="provo", unit="instance", weight=len), clock, 5.9)
    assert capsys.readouterr().err == ""


def test_interval_from_environment_and_slow_rates(
    clock: FakeClock, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_PROGRESS_SECONDS", "400")
    _consume(progress(range(3), desc="wmt14-en-de"), clock, 250.0)  # total taken from len(); one item per 250 s
    assert capsys.readouterr().err.splitlines() == [
        "[2026-11-23 16:48:21] wmt14-en-de: 2/3 its (66.7%), 250.0 s/it, ETA 4m10s",
        "[2026-11-23 16:52:31] wmt14-en-de: 3/3 its (100.0%), 250.0 s/it",
    ]


def test_unknown_total_and_hours(clock: FakeClock, capsys: pytest.CaptureFixture[str]) -> None:
    def items() -> Iterator[int]:
        yield from range(2)

    _consume(progress(items(), unit="context"), clock, 30.0)
    assert capsys.readouterr().err.splitlines() == [
        "[2026-11-23 16:40:31] 1 contexts, 30.0 s/context",
        "[2026-11-23 16:41:01] 2 contexts, 30.0 s/context",
    ]
    assert [format_duration(s) for s in (0, 42.4, 482, 3903)] == ["0s", "42s", "8m02s", "1h05m03s"]


def test_no_progress_disables_lines(
    clock: FakeClock, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_NO_PROGRESS", "1")
    _consume(progress([[1, 2]] * 5, total=10, unit="instance", weight=len), clock, 100.0)
    assert capsys.readouterr().err == ""
    assert not progress_enabled() and not progress_lines_enabled()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_gets_a_bar_not_lines(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert progress_enabled() and not progress_lines_enabled()
    _consume(progress([[1, 2]] * 5, total=10, desc="provo", unit="instance", weight=len), clock, 100.0)
    assert "[2026-" not in terminal.getvalue()
    assert "10/10" in terminal.getvalue()  # the bar counted instances, not blocks
    monkeypatch.setenv("CI", "1")  # CI: no bar even on a terminal, lines instead
    assert not progress_enabled() and progress_lines_enabled()


def test_progress_counted_out_of_order_with_a_status(clock: FakeClock, capsys: pytest.CaptureFixture[str]) -> None:
    """The Ray executor's use: blocks counted as they come back, the workers and blocks per task after the counts."""
    from harness.progress import Progress

    with Progress(48, "mock:m on ray", "instance") as shown:
        for done in range(1, 13):
            shown.set_status(f"2/2 workers; provo {done}/12 blocks")
            clock.t += 5.0
            shown.update(4)
    assert capsys.readouterr().err.splitlines() == [
        # 6 blocks of 4 after 30 s; the status set before the sixth block was counted
        "[2026-11-23 16:40:31] mock:m on ray: 24/48 instances (50.0%), 1.2 s/instance, ETA 30s, "
        "2/2 workers; provo 6/12 blocks",
        "[2026-11-23 16:41:01] mock:m on ray: 48/48 instances (100.0%), 1.2 s/instance, "
        "2/2 workers; provo 12/12 blocks",
    ]

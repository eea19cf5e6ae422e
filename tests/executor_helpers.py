"""What the tests of the worker pools share (``--executor ray`` and ``--workers N`` locally): a driver run as a
subprocess whose stderr is read as it comes, and the comparisons with a local run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.outputs.results import strip_volatile
from harness.outputs.store import scan

HARNESS = str(Path(sys.executable).parent / "harness")
#: Provo with the mock model in 12 blocks of 4 (the mock's block_size), slow enough to be killed midway.
SLOW_MOCK = ["--model", "mock:slow", "--model-args", "latency=0.5,block_size=4", "--limit", "48"]


def slow_model(kind: str = "mock") -> list[str]:
    """``SLOW_MOCK`` with another model kind answering like the mock (``counting``: ``tests/counting_model.py``)."""
    return ["--model", f"{kind}:slow", *SLOW_MOCK[2:]]


PROVO = ["--tasks", "provo", "--task-args", "n_samples=40"]


def results_of(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def samples_file(folder: Path, task: str) -> bytes:
    (path,) = sorted(folder.glob(f"samples_{task}_*.jsonl"))
    return path.read_bytes()


def assert_identical(local: Path, other: Path, tasks: list[str]) -> None:
    """The same results (but for the volatile keys: date, timing, execution) and byte-identical samples files."""
    assert strip_volatile(results_of(other)) == strip_volatile(results_of(local))
    for task in tasks:
        assert samples_file(other, task) == samples_file(local, task), task


def store_of(folder: Path, task: str) -> Path:
    (path,) = sorted((folder / "responses").glob(f"{task}-*.jsonl"))
    return path


class Driver:
    """``harness run ...`` (a pool's driver) as a subprocess whose stderr is read line by line as it comes."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        env = {**os.environ, "HARNESS_NO_PROGRESS": "1", **(env or {})}
        self.proc = subprocess.Popen(
            [HARNESS, "run", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, check: Callable[[], object], what: str, timeout: float = 90.0) -> object:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"never saw {what}; driver stderr:\n" + "\n".join(self.lines))

    def worker_pids(self) -> list[int]:
        return [int(line.split("(pid ")[1].split()[0]) for line in self.lines if " ready (pid " in line]

    def finish(self, timeout: float = 180.0) -> int:
        self.proc.wait(timeout)
        self.reader.join(10)
        return self.proc.returncode


def stored_count(path_of: Callable[[], Path]) -> int:
    try:
        return len(scan(path_of()).records)
    except (ValueError, OSError):
        return 0


def kill_a_worker_midway(
    cli: Callable[..., object],
    tmp_path: Path,
    pool_args: list[str],
    kind: str = "mock",
    env: dict[str, str] | None = None,
) -> str:
    """Run the slow mock's Provo in a pool (``pool_args``), SIGKILL one worker once the first block is stored, and
    check that the run still ends with the local run's results, one replacement and no duplicate record; returns the
    driver's line about the death.

    ``kind`` is another model kind answering like the mock, from a plugin that ``env`` makes visible (the local run
    then runs as a subprocess too)."""
    model = slow_model(kind)
    out = tmp_path / "pool" / f"{kind}__slow"
    driver = Driver([*PROVO, *model, "--output-dir", str(tmp_path / "pool"), *pool_args], env)
    pids = driver.wait_for(lambda: driver.worker_pids(), "a worker ready")
    driver.wait_for(lambda: stored_count(lambda: store_of(out, "provo")) >= 4, "the first block stored")
    victim = pids[0]  # type: ignore[index]
    os.kill(victim, signal.SIGKILL)
    assert driver.finish() == 0, "\n".join(driver.lines)
    died = [line for line in driver.lines if "died while answering provo block" in line]
    assert len(died) == 1 and f"(pid {victim} " in died[0], driver.lines
    assert "starting a replacement and sending its blocks again" in died[0]
    local = [*PROVO, *model, "--output-dir", str(tmp_path / "local")]
    if env is None:
        cli("run", *local)
    else:
        assert Driver(local, env).finish() == 0
    assert_identical(tmp_path / "local" / f"{kind}__slow", out, ["provo"])
    execution = results_of(out)["execution"]
    assert execution["worker_restarts"] == 1 and execution["blocks_resent"] >= 1
    store = scan(store_of(out, "provo"))
    assert len(store.records) == 48 and store.duplicates == 0 and not store.problems
    return died[0].replace(f"pid {victim} ", "pid VICTIM ").replace(f"process {victim} ", "process VICTIM ")

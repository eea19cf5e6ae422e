"""``--workers N`` with the local executor: N child processes answer the blocks, this process stores them.

Identical results to a run in this process (the mock, bit for bit), a worker killed with SIGKILL and replaced, an
adapter's error arriving as its one line, and the process backend's calls on their own. Slow: every test starts
processes (each a fresh interpreter importing the harness).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.executors import ExecutorOptions
from harness.executors.backend import WorkerDied
from harness.executors.processes import ProcessBackend
from harness.models import ModelSpec
from tests.conftest import CliResult
from tests.counting_model import plugin_env
from tests.executor_helpers import assert_identical, kill_a_worker_midway, results_of
from tests.helpers import require_provo

pytestmark = pytest.mark.slow


def test_workers_run_equals_local_run(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """Provo and a generation task on 2 worker processes: the in-process run's results and samples, byte for byte."""
    require_provo()
    args = [
        "--tasks", "provo,wmt14-en-de", "--model", "mock:m", "--model-args", "block_size=3", "--limit", "10",
        "--task-args", "n_samples=8",
    ]  # fmt: skip
    cli("run", *args, "--output-dir", str(tmp_path / "local"))
    pooled = cli("run", *args, "--output-dir", str(tmp_path / "pool"), "--workers", "2")
    tasks = ["provo", "wmt14-en-de@ancestral"]
    assert_identical(tmp_path / "local" / "mock__m", tmp_path / "pool" / "mock__m", tasks)
    execution = results_of(tmp_path / "pool" / "mock__m")["execution"]
    assert execution["executor"] == "local"
    assert execution["workers"] == 2 and execution["threads_per_worker"] == 1
    assert execution["worker_restarts"] == 0 and execution["blocks_resent"] == 0
    assert execution["blocks"] == {task: {"total": 4, "sent": 4} for task in tasks}  # 10 instances in blocks of 3
    # No GPU here: the workers see what this process sees (None for a worker still loading at the end).
    assert set(execution["worker_gpus"]) <= {os.environ.get("CUDA_VISIBLE_DEVICES"), None}
    # A worker still loading when the last block is answered is not waited for, so one line or two.
    ready = [line.split(" ready")[0] for line in pooled.stderr.splitlines() if " ready (pid " in line]
    assert ready and set(ready) <= {"local: worker 1/2", "local: worker 2/2"}


def test_killed_worker_process_is_replaced(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """SIGKILL one worker process while it holds blocks: a replacement answers them; identical results."""
    require_provo()
    died = kill_a_worker_midway(cli, tmp_path, ["--workers", "2"])
    assert died.startswith("warning: local: worker ") and died.endswith("(process VICTIM killed by SIGKILL)")


# A stand-in adapter and request kind, importable by name in the child processes (``spawn`` pickles by name).
class EchoAdapter:
    group_size = 3

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec

    def info(self) -> dict[str, Any]:
        return {"name": self.spec.name}

    def run_stats(self) -> dict[str, Any]:
        return {"calls": 1}

    def close(self) -> None:
        pass


class EchoKind:
    def answer(self, adapter: EchoAdapter, requests: list[Any]) -> list[Any]:
        if requests == ["refuse"]:
            raise HarnessError("--model-args: the echo model refuses 'refuse'")
        if requests == ["sleep"]:
            time.sleep(60)
        if requests == ["nap"]:
            time.sleep(0.3)
        if requests == ["unsendable"]:
            return [lambda: None]
        return [{"echo": request, "pid": os.getpid()} for request in requests]


@pytest.fixture
def backend() -> ProcessBackend:
    return ProcessBackend(ExecutorOptions(workers=1))


def test_backend_answers_in_order_and_reports_errors(backend: ProcessBackend) -> None:
    worker = backend.start(0, EchoAdapter, ModelSpec("echo", "e"), threads=1)  # type: ignore[arg-type]
    try:
        report = backend.result(backend.call(worker, "load"), timeout=60)
        assert report["group_size"] == 3 and report["info"] == {"name": "e"} and report["pid"] != os.getpid()
        first = backend.call(worker, "answer", EchoKind(), ["a", "b"])
        refused = backend.call(worker, "answer", EchoKind(), ["refuse"])
        unsendable = backend.call(worker, "answer", EchoKind(), ["unsendable"])
        second = backend.call(worker, "answer", EchoKind(), ["c"])
        answer = backend.result(first, timeout=60)
        assert [r["echo"] for r in answer.records] == ["a", "b"] and answer.run_stats == {"calls": 1}
        with pytest.raises(HarnessError, match=r"^--model-args: the echo model refuses 'refuse'$"):
            backend.result(refused, timeout=60)
        with pytest.raises(RuntimeError, match="cannot send the answer to answer"):
            backend.result(unsendable, timeout=60)
        assert backend.result(second, timeout=60).records[0]["pid"] == report["pid"]  # the worker lives on
        assert backend.result(backend.call(worker, "run_stats"), timeout=60) == {"calls": 1}
        # Waiting on a later call goes on past the replies to the calls before it.
        earlier = backend.call(worker, "answer", EchoKind(), ["nap"])
        later = backend.call(worker, "answer", EchoKind(), ["nap"])
        assert backend.result(later, timeout=60).records[0]["echo"] == "nap" and earlier.done
    finally:
        backend.kill(worker)
    assert not worker.process.is_alive()


def test_each_worker_process_sees_its_own_gpu() -> None:
    """On a machine with GPUs, worker i sees GPU i mod G (its CUDA_VISIBLE_DEVICES, set before CUDA initialises)."""
    backend = ProcessBackend(ExecutorOptions(workers=3), ["7", "GPU-8f1c"])
    workers = [backend.start(i, EchoAdapter, ModelSpec("echo", "e"), threads=1) for i in range(3)]  # type: ignore[arg-type]
    try:
        loads = [backend.call(worker, "load") for worker in workers]
        assert [backend.result(call, timeout=60)["cuda_visible_devices"] for call in loads] == ["7", "GPU-8f1c", "7"]
    finally:
        for worker in workers:
            backend.kill(worker)


def test_backend_reports_a_killed_worker_on_every_call_it_held(backend: ProcessBackend) -> None:
    worker = backend.start(0, EchoAdapter, ModelSpec("echo", "e"), threads=1)  # type: ignore[arg-type]
    try:
        pid = backend.result(backend.call(worker, "load"), timeout=60)["pid"]
        busy = backend.call(worker, "answer", EchoKind(), ["sleep"])
        queued = backend.call(worker, "answer", EchoKind(), ["a"])
        assert backend.wait([busy, queued], 0.2) == []
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while len(backend.wait([busy, queued], 1.0)) < 2 and time.monotonic() < deadline:
            pass
        for call in (busy, queued):
            with pytest.raises(WorkerDied, match=rf"^process {pid} killed by SIGKILL$"):
                backend.result(call)
        with pytest.raises(WorkerDied):  # a call sent after the death ends at once
            backend.result(backend.call(worker, "run_stats"), timeout=1)
    finally:
        backend.kill(worker)


def test_result_times_out(backend: ProcessBackend) -> None:
    worker = backend.start(0, EchoAdapter, ModelSpec("echo", "e"), threads=1)  # type: ignore[arg-type]
    try:
        backend.result(backend.call(worker, "load"), timeout=60)
        with pytest.raises(TimeoutError, match=r"did not answer in 0.3 s"):
            backend.result(backend.call(worker, "answer", EchoKind(), ["sleep"]), timeout=0.3)
    finally:
        started = time.monotonic()
        backend.kill(worker)  # busy: killed at once, not waited for
    assert time.monotonic() - started < 2 and not worker.process.is_alive()


def test_a_dead_workers_counts_are_kept(tmp_path: Path) -> None:
    """The counts a worker reported with the blocks it answered survive its death: ``api_calls`` counts every block
    once (the block it died on is counted by the worker that answered it again)."""
    require_provo()
    env = plugin_env(tmp_path / "plugin")
    kill_a_worker_midway(lambda *args: None, tmp_path, ["--workers", "2"], kind="counting", env=env)
    assert results_of(tmp_path / "pool" / "counting__slow")["api_calls"] == {"blocks": 12, "requests": 48}

"""The driver of a pool of workers, each holding a loaded model: send them blocks, store what comes back.

One loop serves both pools (``docs/distributed.md``): Ray actors (``--executor ray``,
:mod:`harness.executors.ray_driver`) and processes on this machine (``--executor local --workers N``,
:mod:`harness.executors.processes`). A :class:`Backend` is the only part that differs: how a worker starts, how a
call reaches it, how a death shows.

How work flows:

* The driver (this process, holding the output folder's lock) starts ``workers`` workers
  (:class:`~harness.executors.worker.ModelWorker`); each loads the model once.
* Blocks are cut exactly as the in-process executor cuts them (:mod:`harness.executors.blocks`); the driver builds
  each block's requests (with the same seeds), keeps the backend's ``in_flight`` blocks queued per worker (two on
  Ray, one locally), and sends a worker its next block before storing the one it returned, so a worker never waits
  for the driver.
* Every answer is stored by the driver as it arrives (completion order: the stores are read by instance id, so
  order does not matter); scoring runs once at the end, in the runner, as for a local run.
* A worker that dies (its process killed, its node lost) is replaced by a new worker in the same slot and the blocks
  it held are sent again, at most ``max_retries`` times each; then the run stops with a one-line error, the stored
  responses safe. An error raised by the model adapter itself (a bad argument, an API refusing) is not retried.
* A worker not placed within ``placement_timeout`` seconds (a Ray actor whose CPUs or GPUs no node has free) is
  left behind with a warning while another worker runs; when none runs, the run stops with a one-line error naming
  the workers and the resources they ask for, instead of waiting forever.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from harness.errors import HarnessError, one_line
from harness.executors.backend import Backend, WorkerDied
from harness.executors.base import Answered, AnswerJob
from harness.executors.blocks import Block, blocks_in, cut_blocks, stored_model_info
from harness.executors.worker import BlockAnswer
from harness.executors.worker_counts import WorkerCounts
from harness.outputs.store import ResponseStore
from harness.progress import Progress

#: How often (seconds) the driver wakes up to refresh progress while no answer arrives.
POLL_SECONDS = 2.0
#: Seconds the driver waits for a worker's counts and its closing before giving up on it.
CLOSE_SECONDS = 60.0


@dataclass
class Slot:
    """One worker place: the worker now in it (a replacement after a death) and what it holds."""

    index: int
    actor: Any = None
    #: The worker's serial number among all the pool started (its counts are kept under it after it dies).
    serial: int = 0
    ready: bool = False
    pid: int | None = None
    host: str = ""
    #: The ``CUDA_VISIBLE_DEVICES`` of the worker's process (None: not set, it sees the machine's GPUs, if any); not
    #: to be confused with the pool's ``gpus``, the GPUs per worker.
    cuda_devices: str | None = None
    #: Replacements started in a row without a successful load (bounded by ``max_retries``).
    failed_loads: int = 0
    in_flight: int = 0
    #: Since when (``time.monotonic``) the worker waits to be placed; None once it runs.
    placing_since: float | None = None
    #: Whether the pool said it goes on without this worker (placed too late), once per worker.
    overdue_told: bool = False


@dataclass
class Sent:
    """A call on its way: the worker's placement or its load (``block`` None), or a block, with its seeds and requests
    to store the answers."""

    slot: Slot
    #: The worker it was sent to (a slot's worker changes when a dead one is replaced).
    actor: Any
    block: Block | None = None
    attempt: int = 0
    seeds: list[int] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)
    #: The call that answers once the worker runs (``ModelWorker.placed``).
    placing: bool = False


class WorkerPool:
    """The workers of one model and the blocks they answer (module docstring)."""

    def __init__(self, backend: Backend, job: AnswerJob) -> None:
        self.backend = backend
        self.name = backend.name
        self.job = job
        self.out_dir = job.out_dir.resolve()
        self.workers, self.cpus, self.gpus = backend.workers, backend.cpus, backend.gpus
        self.slots = [Slot(i) for i in range(self.workers)]
        self.sent: dict[Any, Sent] = {}
        self.queue: deque[tuple[Block, int]] = deque()
        self.group_size: int | None = None
        self.info: dict[str, Any] | None = None
        self.load_seconds: list[float] = []
        self.counts = WorkerCounts()
        self.started_workers = 0
        self.restarts = 0
        self.resent = 0
        self.done_blocks: dict[str, int] = {r.name: 0 for r in self.job.runs}
        self.total_blocks: dict[str, int] = {}
        self.sent_blocks: dict[str, int] = {}
        self.finished_at: dict[str, float] = {}
        self.progress: Progress | None = None
        #: When the pool started, and when the first worker was ready (answering time counts from there, as a
        #: local run's counts from after the model load).
        self.started = 0.0
        self.first_ready = 0.0

    @property
    def threads(self) -> int:
        return threads_per_worker(self.cpus)

    # ------------------------------------------------------------------------------------------------- workers
    def _start(self, slot: Slot) -> None:
        spec = replace(self.job.model, cache_dir=self.out_dir / "api-cache" / f"{self.name}-worker-{slot.index + 1}")
        slot.actor = self.backend.start(slot.index, self.job.adapter_cls, spec, self.threads)
        self.started_workers += 1
        slot.ready, slot.pid, slot.in_flight, slot.serial = False, None, 0, self.started_workers
        slot.placing_since, slot.overdue_told = time.monotonic(), False
        self.sent[self.backend.call(slot.actor, "placed")] = Sent(slot, slot.actor, placing=True)
        self.sent[self.backend.call(slot.actor, "load")] = Sent(slot, slot.actor)

    def _placed(self, sent: Sent, report: dict[str, Any]) -> None:
        sent.slot.placing_since, sent.slot.pid, sent.slot.host = None, report["pid"], report["host"]

    def _check_placement(self) -> None:
        """Go on without a worker not placed within ``placement_timeout`` seconds while another is placed; stop with
        an error when none is (nothing could ever answer)."""
        timeout = self.job.options.placement_timeout
        now = time.monotonic()
        late = [s for s in self.slots if s.placing_since is not None and now - s.placing_since > timeout]
        if not late:
            return
        asks = f"{_amount(self.cpus, 'CPU')} and {_amount(self.gpus, 'GPU')}"
        if all(slot.placing_since is not None for slot in self.slots):
            several = len(late) > 1
            names = " and ".join(str(slot.index + 1) for slot in late)
            raise HarnessError(
                f"{self.name}: worker{'s' if several else ''} {names} could not be placed in {timeout:g} s "
                f"({'each' if several else 'it'} asks for {asks}; {self.backend.room()}) and no other worker is "
                f"running; free them or ask for less (--workers, --cpus-per-worker, --gpus-per-worker); {self._safe()}"
            )
        for slot in late:
            if not slot.overdue_told:
                slot.overdue_told = True
                print(
                    f"warning: {self.name}: worker {slot.index + 1} not placed after {timeout:g} s (it asks for "
                    f"{asks}; {self.backend.room()}); going on with the other workers (it joins them if placed later)",
                    file=sys.stderr,
                    flush=True,
                )

    def _loaded(self, sent: Sent, report: dict[str, Any]) -> None:
        slot = sent.slot
        slot.ready, slot.pid, slot.host, slot.failed_loads = True, report["pid"], report["host"], 0
        slot.placing_since = None
        slot.cuda_devices = report.get("cuda_visible_devices")
        self.counts.report(slot.serial, report.get("run_stats"))
        if self.group_size is None:
            self.first_ready = time.perf_counter()
            self.group_size = int(report["group_size"])
            self.info = report["info"]
            for r in self.job.runs:  # before any answer, as locally: a killed run's stores still say which model
                assert isinstance(r.store, ResponseStore)
                r.store.set_model_info(report["info"])
            self._cut_blocks()
        elif report["group_size"] != self.group_size:
            raise HarnessError(
                f"{self.name}: worker {slot.index + 1} answers blocks of {report['group_size']} instances, the first "
                f"worker of {self.group_size}; the workers must run the same harness and model arguments"
            )
        elif report["info"] != self.info:
            print(
                f"warning: {self.name}: worker {slot.index + 1} on {slot.host} reports another model setup than the "
                f"first ({_first_difference(self.info or {}, report['info'])}); numbers may depend on which worker "
                "answered a block",
                file=sys.stderr,
            )
        self.load_seconds.append(float(report["load_seconds"]))
        on_gpu = f", GPU {slot.cuda_devices}" if slot.cuda_devices else ""
        print(
            f"{self.name}: worker {slot.index + 1}/{self.workers} ready (pid {slot.pid} on {slot.host}{on_gpu}, model "
            f"loaded in {report['load_seconds']:.1f}s)",
            file=sys.stderr,
            flush=True,
        )

    def _died(self, sent: Sent, exc: BaseException) -> None:
        """Replace the dead worker of ``sent`` and queue again every block it held."""
        slot = sent.slot
        if sent.actor is not slot.actor:
            return  # another call of that worker reported its death first: it was replaced already
        held = [ref for ref, other in self.sent.items() if other.actor is sent.actor]
        lost = [s for s in [sent, *(self.sent.pop(ref) for ref in held)] if s.block is not None]
        self.backend.kill(sent.actor)
        if sent.block is None:
            slot.failed_loads += 1
            if slot.failed_loads > self.job.options.max_retries:
                raise HarnessError(
                    f"{self.name}: worker {slot.index + 1} died {slot.failed_loads} times in a row while loading the "
                    f"model ({one_line(str(exc), 160)}); {self._safe()}"
                )
        for each in sorted(lost, key=lambda s: s.block.number if s.block else 0, reverse=True):
            assert each.block is not None
            attempt = each.attempt + 1
            if attempt > self.job.options.max_retries:
                raise HarnessError(
                    f"{self.name}: {each.block.label} was sent {attempt} times and the worker answering it died each "
                    f"time (last: {one_line(str(exc), 160)}); {self._safe()}"
                )
            self.queue.appendleft((each.block, attempt))
            self.resent += 1
        self.restarts += 1
        doing = "answering " + ", ".join(s.block.label for s in lost if s.block) if lost else "loading the model"
        again = " and sending its blocks again" if lost else ""
        print(
            f"warning: {self.name}: worker {slot.index + 1} (pid {slot.pid or '?'} on {slot.host or '?'}) died while "
            f"{doing}; starting a replacement{again} ({one_line(str(exc), 120)})",
            file=sys.stderr,
            flush=True,
        )
        self._start(slot)

    def _safe(self) -> str:
        stored = sum(len(r.store.records) for r in self.job.runs if isinstance(r.store, ResponseStore))
        return (
            f"the {stored} responses stored so far are safe in {self.out_dir / 'responses'}; run the same command "
            "again to resume"
        )

    # -------------------------------------------------------------------------------------------------- blocks
    def _cut_blocks(self) -> None:
        assert self.group_size is not None
        for r in self.job.runs:
            todo = cut_blocks(r, self.group_size)
            self.total_blocks[r.name] = blocks_in(r, self.group_size)
            self.sent_blocks[r.name] = len(todo)
            self.done_blocks[r.name] = self.total_blocks[r.name] - len(todo)
            self.queue.extend((block, 0) for block in todo)
            if not todo:
                self.finished_at[r.name] = 0.0
        total = sum(len(block.instances) for block, _ in self.queue)
        self.progress = Progress(total, f"{self.job.model.label} {self.backend.where()}", "instance")

    def _send(self) -> None:
        for slot in self.slots:
            while slot.ready and slot.in_flight < self.backend.in_flight and self.queue:
                block, attempt = self.queue.popleft()
                seeds, requests = block.requests(self.job.seed)
                ref = self.backend.call(slot.actor, "answer", block.run.task.kind, requests)
                self.sent[ref] = Sent(slot, slot.actor, block, attempt, seeds, requests)
                slot.in_flight += 1

    def _answered(self, sent: Sent, answer: BlockAnswer) -> None:
        block = sent.block
        assert block is not None and self.progress is not None
        sent.slot.in_flight -= 1
        self.counts.report(sent.slot.serial, answer.run_stats)
        self._send()  # the worker's next block first: storing (an fsync per response) takes a while
        block.store_answers(sent.seeds, sent.requests, answer.records)
        name = block.run.name
        self.done_blocks[name] += 1
        if self.done_blocks[name] == self.total_blocks[name]:
            self.finished_at[name] = time.perf_counter() - self.first_ready
        self.progress.update(len(block.instances))

    def _status(self) -> str:
        alive = sum(slot.ready for slot in self.slots)
        tasks = ", ".join(
            f"{name} {self.done_blocks[name]}/{total} blocks" for name, total in self.total_blocks.items()
        )
        return f"{alive}/{self.workers} workers; {tasks}"

    # ------------------------------------------------------------------------------------------------ the loop
    def run(self) -> None:
        self.started = time.perf_counter()
        for slot in self.slots:
            self._start(slot)
        try:
            while True:
                self._send()
                if self.group_size is not None and not self.queue and all(s.block is None for s in self.sent.values()):
                    break  # every block answered; replacements still loading are not waited for
                # Never empty here: a slot is either loading (its load call is out) or ready and holding blocks.
                assert self.sent, "no call on its way but blocks left"
                if self.progress is not None:
                    self.progress.set_status(self._status())
                for ref in self.backend.wait(list(self.sent), POLL_SECONDS):
                    sent = self.sent.pop(ref, None)
                    if sent is None:
                        continue
                    try:
                        value = self.backend.result(ref)
                    except WorkerDied as exc:
                        self._died(sent, exc)
                        continue
                    if sent.placing:
                        self._placed(sent, value)
                    elif sent.block is None:
                        self._loaded(sent, value)
                    else:
                        self._answered(sent, value)
                self._check_placement()
            for r in self.job.runs:
                r.timing["requests_seconds"] = round(self.finished_at.get(r.name, 0.0), 3)
        finally:
            if self.progress is not None:
                self.progress.close()

    def run_stats(self) -> dict[str, Any] | None:
        """``run_stats`` of every worker started, summed: the live ones asked once more (what they did after their
        last block), the dead ones as they last reported."""
        live = [(slot.serial, self.backend.call(slot.actor, "run_stats")) for slot in self.slots if slot.ready]
        for serial, ref in live:
            try:
                self.counts.report(serial, self.backend.result(ref, timeout=CLOSE_SECONDS))
            except (WorkerDied, TimeoutError):
                continue  # a worker that died after its last block: its counts as it reported them with that block
        return self.counts.total()

    def close(self) -> None:
        """Close the idle workers' adapters, then stop every worker. A worker still answering a block (the run was
        interrupted, or failed) is stopped at once: a close call would wait behind its block."""
        for slot in self.slots:
            if slot.actor is None:
                continue
            try:
                if slot.ready and slot.in_flight == 0:
                    self.backend.result(self.backend.call(slot.actor, "close"), timeout=CLOSE_SECONDS)
            except Exception:  # noqa: BLE001 - a worker that cannot close is killed below anyway
                pass
            self.backend.kill(slot.actor)
            slot.actor = None

    def execution(self) -> dict[str, Any]:
        return {
            "executor": self.name,
            **self.backend.execution(),
            "workers": self.workers,
            "cpus_per_worker": self.cpus,
            "gpus_per_worker": self.gpus,
            "threads_per_worker": self.threads,
            # Per worker, the GPUs its process sees (``CUDA_VISIBLE_DEVICES``; None where it is not set).
            "worker_gpus": [slot.cuda_devices for slot in self.slots],
            "hosts": sorted({slot.host for slot in self.slots if slot.host}),
            "first_worker_ready_seconds": round(self.first_ready - self.started, 3),
            "worker_restarts": self.restarts,
            "blocks_resent": self.resent,
            "blocks": {
                name: {"total": self.total_blocks[name], "sent": self.sent_blocks[name]} for name in self.total_blocks
            },
        }


def threads_per_worker(cpus: float) -> int:
    """Torch threads of a worker given ``cpus`` CPUs: at least one (the number ``execution`` records)."""
    return max(1, int(cpus))


def _amount(count: float, what: str) -> str:
    """``1 CPU``, ``0.5 GPUs``, ``0 GPUs``."""
    return f"{count:g} {what}{'' if count == 1 else 's'}"


def _first_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            return f"{key}: {a.get(key)!r} vs {b.get(key)!r}"
    return "no difference"


def answer_with_pool(backend: Backend, job: AnswerJob) -> Answered:
    """Answer the missing blocks of ``job.runs`` with ``backend``'s workers (some instance is missing:
    ``answer_missing``). The workers are stopped whatever happens; the model load reported is the slowest worker's."""
    pool = WorkerPool(backend, job)
    try:
        pool.run()
        api_calls = pool.run_stats()
    finally:
        pool.close()
    load = max(pool.load_seconds) if pool.load_seconds else None
    return Answered(stored_model_info(job.runs), load, api_calls, pool.execution())

"""The Ray executor's driver: start one actor per worker, send them blocks, store what comes back.

How work flows (``docs/distributed.md``):

* The driver (this process, holding the output folder's lock) starts ``workers`` actors of
  :class:`~harness.executors.ray_worker.ModelWorker`; each loads the model once and asks Ray for
  ``cpus_per_worker`` CPUs and ``gpus_per_worker`` GPUs.
* Blocks are cut exactly as the local executor cuts them (:mod:`harness.executors.blocks`); the driver builds each
  block's requests (with the same seeds) and keeps at most :data:`IN_FLIGHT` blocks queued per worker, so a worker
  never waits for the driver.
* Every answer is stored by the driver as it arrives (completion order: the stores are read by instance id, so
  order does not matter); scoring runs once at the end, in the runner, as for a local run.
* A worker that dies (its process killed, its node lost) is replaced by a new actor in the same slot and the blocks
  it held are sent again, at most ``max_retries`` times each; then the run stops with a one-line error, the stored
  responses safe. An error raised by the model adapter itself (a bad argument, an API refusing) is not retried.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError, one_line
from harness.executors import RAY_MISSING, Answered, ExecutorOptions
from harness.executors.blocks import Block, blocks_in, cut_blocks, stored_model_info
from harness.executors.ray_worker import ModelWorker
from harness.progress import Progress
from harness.store import ResponseStore

if TYPE_CHECKING:
    from harness.models import ModelAdapter, ModelSpec
    from harness.runner import TaskRun

#: Blocks sent ahead to each worker: one being answered, one waiting in the actor's queue.
IN_FLIGHT = 2
#: How often (seconds) the driver wakes up to refresh progress while no answer arrives.
POLL_SECONDS = 2.0
#: Environment variables the workers get from the driver (those that change what a worker does, not secrets).
FORWARDED_PREFIXES = ("HARNESS_",)
FORWARDED_SUFFIXES = ("_OFFLINE",)


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise HarnessError(RAY_MISSING) from None
    return ray


def connect(address: str | None) -> Any:
    """Join the cluster at ``address`` (or ``$RAY_ADDRESS``), or start one on this machine; once per process."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    try:
        context = ray.init(address=address, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
        hint = ""
        if (address or os.environ.get("RAY_ADDRESS")) and not os.environ.get("RAY_AUTH_MODE"):
            hint = (
                "; a cluster started by `ray start` uses token authentication: set RAY_AUTH_MODE=token here too "
                "(with the cluster's token in ~/.ray/auth_token or $RAY_AUTH_TOKEN)"
            )
        raise HarnessError(
            f"--ray-address: cannot connect to Ray at {where} ({one_line(str(exc), 200)}){hint}"
        ) from exc
    how = f"joined the cluster at {address}" if address else "started a Ray cluster on this machine"
    if not address and os.environ.get("RAY_ADDRESS"):
        how = f"joined the cluster at $RAY_ADDRESS={os.environ['RAY_ADDRESS']}"
    dashboard = getattr(context, "dashboard_url", None)
    resources = ray.cluster_resources()
    print(
        f"ray: {how} ({_resources_text(resources)})" + (f"; dashboard http://{dashboard}" if dashboard else ""),
        file=sys.stderr,
        flush=True,
    )
    return ray


def _resources_text(resources: dict[str, float]) -> str:
    return ", ".join(f"{resources.get(k, 0):g} {k}s" for k in ("CPU", "GPU"))


def forwarded_environment() -> dict[str, str]:
    """The driver's settings the workers must share (offline mode, ``HARNESS_*``), for the actors' runtime_env."""
    return {
        k: v
        for k, v in sorted(os.environ.items())
        if k.startswith(FORWARDED_PREFIXES) or k.endswith(FORWARDED_SUFFIXES)
    }


def plan_workers(options: ExecutorOptions, model: ModelSpec, resources: dict[str, float]) -> tuple[int, float, float]:
    """How many workers, and the CPUs and GPUs each asks Ray for; an error if the cluster cannot hold them all
    (Ray would otherwise wait for resources forever)."""
    cpus = options.cpus_per_worker
    gpus = options.gpus_per_worker
    have_cpus, have_gpus = resources.get("CPU", 0.0), resources.get("GPU", 0.0)
    if gpus is None:
        gpus = 1.0 if have_gpus >= 1 and model.device != "cpu" else 0.0
    if options.workers is not None:
        workers = options.workers
    elif gpus > 0:
        workers = int(have_gpus // gpus)
    else:
        workers = int(have_cpus // cpus)
    workers = max(1, workers)
    for what, each, have, flag in (
        ("CPU", cpus, have_cpus, "--cpus-per-worker"),
        ("GPU", gpus, have_gpus, "--gpus-per-worker"),
    ):
        if each * workers > have + 1e-9:
            raise HarnessError(
                f"--workers: {workers} worker{'s' if workers != 1 else ''} x {flag} {each:g} need "
                f"{each * workers:g} {what}s, but the Ray cluster "
                f"has {have:g}; ask for fewer workers or less per worker"
            )
    return workers, cpus, gpus


@dataclass
class Slot:
    """One worker place: the actor now in it (a replacement after a death) and what it holds."""

    index: int
    actor: Any = None
    ready: bool = False
    pid: int | None = None
    host: str = ""
    #: Replacements started in a row without a successful load (bounded by ``max_retries``).
    failed_loads: int = 0
    in_flight: int = 0


@dataclass
class Sent:
    """A call on its way: a load (``block`` None) or a block, with its seeds and requests to store the answers."""

    slot: Slot
    #: The actor it was sent to (a slot's actor changes when a dead one is replaced).
    actor: Any
    block: Block | None = None
    attempt: int = 0
    seeds: list[int] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)


class RayPool:
    """The actors of one model and the blocks they answer (module docstring)."""

    def __init__(
        self,
        ray: Any,
        runs: list[TaskRun],
        model: ModelSpec,
        adapter_cls: type[ModelAdapter],
        out_dir: Path,
        seed: int,
        options: ExecutorOptions,
    ) -> None:
        self.ray = ray
        self.runs = runs
        self.model = model
        self.adapter_cls = adapter_cls
        self.out_dir = out_dir.resolve()
        self.seed = seed
        self.options = options
        self.workers, self.cpus, self.gpus = plan_workers(options, model, ray.cluster_resources())
        self.actor_class = ray.remote(ModelWorker)
        self.slots = [Slot(i) for i in range(self.workers)]
        self.sent: dict[Any, Sent] = {}
        self.queue: deque[tuple[Block, int]] = deque()
        self.group_size: int | None = None
        self.info: dict[str, Any] | None = None
        self.load_seconds: list[float] = []
        self.restarts = 0
        self.resent = 0
        self.done_blocks: dict[str, int] = {r.name: 0 for r in runs}
        self.total_blocks: dict[str, int] = {}
        self.sent_blocks: dict[str, int] = {}
        self.finished_at: dict[str, float] = {}
        self.progress: Progress | None = None
        #: When the pool started, and when the first worker was ready (answering time counts from there, as a
        #: local run's counts from after the model load).
        self.started = 0.0
        self.first_ready = 0.0

    # ------------------------------------------------------------------------------------------------- workers
    def _start(self, slot: Slot) -> None:
        spec = replace(self.model, cache_dir=self.out_dir / "api-cache" / f"ray-worker-{slot.index + 1}")
        threads = max(1, int(self.cpus))  # the same number execution() records
        slot.actor = self.actor_class.options(
            num_cpus=self.cpus,
            num_gpus=self.gpus,
            max_restarts=0,
            max_task_retries=0,
            runtime_env={"env_vars": forwarded_environment()},
        ).remote(self.adapter_cls, spec, os.getcwd(), threads)
        slot.ready, slot.pid, slot.in_flight = False, None, 0
        self.sent[slot.actor.load.remote()] = Sent(slot, slot.actor)

    def _loaded(self, sent: Sent, report: dict[str, Any]) -> None:
        slot = sent.slot
        slot.ready, slot.pid, slot.host, slot.failed_loads = True, report["pid"], report["host"], 0
        if self.group_size is None:
            self.first_ready = time.perf_counter()
            self.group_size = int(report["group_size"])
            self.info = report["info"]
            for r in self.runs:  # before any answer, as locally: a killed run's stores still say which model
                assert isinstance(r.store, ResponseStore)
                r.store.set_model_info(report["info"])
            self._cut_blocks()
        elif report["group_size"] != self.group_size:
            raise HarnessError(
                f"ray: worker {slot.index + 1} answers blocks of {report['group_size']} instances, the first worker "
                f"of {self.group_size}; the workers must run the same harness and model arguments"
            )
        elif report["info"] != self.info:
            print(
                f"warning: ray: worker {slot.index + 1} on {slot.host} reports another model setup than the first "
                f"({_first_difference(self.info or {}, report['info'])}); numbers may depend on which worker "
                "answered a block",
                file=sys.stderr,
            )
        self.load_seconds.append(float(report["load_seconds"]))
        print(
            f"ray: worker {slot.index + 1}/{self.workers} ready (pid {slot.pid} on {slot.host}, model loaded in "
            f"{report['load_seconds']:.1f}s)",
            file=sys.stderr,
            flush=True,
        )

    def _died(self, sent: Sent, exc: BaseException) -> None:
        """Replace the dead actor of ``sent`` and queue again every block it held."""
        slot = sent.slot
        if sent.actor is not slot.actor:
            return  # another call of that actor reported its death first: it was replaced already
        held = [ref for ref, other in self.sent.items() if other.actor is sent.actor]
        lost = [s for s in [sent, *(self.sent.pop(ref) for ref in held)] if s.block is not None]
        self.ray.kill(sent.actor, no_restart=True)
        if sent.block is None:
            slot.failed_loads += 1
            if slot.failed_loads > self.options.max_retries:
                raise HarnessError(
                    f"ray: worker {slot.index + 1} died {slot.failed_loads} times in a row while loading the model "
                    f"({one_line(str(exc), 160)}); {self._safe()}"
                )
        for each in sorted(lost, key=lambda s: s.block.number if s.block else 0, reverse=True):
            assert each.block is not None
            attempt = each.attempt + 1
            if attempt > self.options.max_retries:
                raise HarnessError(
                    f"ray: {each.block.label} was sent {attempt} times and the worker answering it died each time "
                    f"(last: {one_line(str(exc), 160)}); {self._safe()}"
                )
            self.queue.appendleft((each.block, attempt))
            self.resent += 1
        self.restarts += 1
        doing = "answering " + ", ".join(s.block.label for s in lost if s.block) if lost else "loading the model"
        again = " and sending its blocks again" if lost else ""
        print(
            f"warning: ray: worker {slot.index + 1} (pid {slot.pid or '?'} on {slot.host or '?'}) died while {doing}; "
            f"starting a replacement{again} ({one_line(str(exc), 120)})",
            file=sys.stderr,
            flush=True,
        )
        self._start(slot)

    def _safe(self) -> str:
        stored = sum(len(r.store.records) for r in self.runs if isinstance(r.store, ResponseStore))
        return (
            f"the {stored} responses stored so far are safe in {self.out_dir / 'responses'}; run the same command "
            "again to resume"
        )

    # -------------------------------------------------------------------------------------------------- blocks
    def _cut_blocks(self) -> None:
        assert self.group_size is not None
        for r in self.runs:
            todo = cut_blocks(r, self.group_size)
            self.total_blocks[r.name] = blocks_in(r, self.group_size)
            self.sent_blocks[r.name] = len(todo)
            self.done_blocks[r.name] = self.total_blocks[r.name] - len(todo)
            self.queue.extend((block, 0) for block in todo)
            if not todo:
                self.finished_at[r.name] = 0.0
        total = sum(len(block.instances) for block, _ in self.queue)
        self.progress = Progress(total, f"{self.model.label} on ray", "instance")

    def _send(self) -> None:
        for slot in self.slots:
            while slot.ready and slot.in_flight < IN_FLIGHT and self.queue:
                block, attempt = self.queue.popleft()
                seeds, requests = block.requests(self.seed)
                ref = slot.actor.answer.remote(block.run.task.kind, requests)
                self.sent[ref] = Sent(slot, slot.actor, block, attempt, seeds, requests)
                slot.in_flight += 1

    def _answered(self, sent: Sent, records: list[dict[str, Any]]) -> None:
        block = sent.block
        assert block is not None and self.progress is not None
        sent.slot.in_flight -= 1
        block.store_answers(sent.seeds, sent.requests, records)
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
        ray = self.ray
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
                ready, _ = ray.wait(list(self.sent), num_returns=1, timeout=POLL_SECONDS)
                for ref in ready:
                    sent = self.sent.pop(ref, None)
                    if sent is None:
                        continue
                    try:
                        value = ray.get(ref)
                    except ray.exceptions.RayActorError as exc:
                        self._died(sent, exc)
                        continue
                    except ray.exceptions.RayTaskError as exc:
                        # The adapter's own error (a bad argument, an API refusing): the same one line as locally.
                        cause = getattr(exc, "cause", None)
                        if isinstance(cause, HarnessError):
                            raise cause from None
                        raise
                    if sent.block is None:
                        self._loaded(sent, value)
                    else:
                        self._answered(sent, value)
            for r in self.runs:
                r.timing["requests_seconds"] = round(self.finished_at.get(r.name, 0.0), 3)
        finally:
            if self.progress is not None:
                self.progress.close()

    def run_stats(self) -> dict[str, Any] | None:
        """``run_stats`` of the live workers, summed (a dead worker's are lost with it)."""
        live = [slot.actor.run_stats.remote() for slot in self.slots if slot.ready]
        merged: dict[str, Any] | None = None
        for ref in live:
            try:
                stats = self.ray.get(ref, timeout=60)
            except (self.ray.exceptions.RayActorError, self.ray.exceptions.GetTimeoutError):
                continue  # a worker that died after its last block: every answer is stored, only its counts are lost
            if stats is not None:
                merged = sum_stats(merged or {}, stats)
        return merged

    def close(self) -> None:
        for slot in self.slots:
            if slot.actor is None:
                continue
            try:
                if slot.ready:
                    self.ray.get(slot.actor.close.remote(), timeout=60)
            except Exception:  # noqa: BLE001 - a worker that cannot close is killed below anyway
                pass
            self.ray.kill(slot.actor, no_restart=True)
            slot.actor = None

    def execution(self, address: str) -> dict[str, Any]:
        return {
            "executor": "ray",
            "address": address,
            "workers": self.workers,
            "cpus_per_worker": self.cpus,
            "gpus_per_worker": self.gpus,
            "threads_per_worker": max(1, int(self.cpus)),
            "hosts": sorted({slot.host for slot in self.slots if slot.host}),
            "first_worker_ready_seconds": round(self.first_ready - self.started, 3),
            "worker_restarts": self.restarts,
            "blocks_resent": self.resent,
            "blocks": {
                name: {"total": self.total_blocks[name], "sent": self.sent_blocks[name]} for name in self.total_blocks
            },
        }


def sum_stats(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two workers' ``run_stats`` added up: numbers summed, nested objects merged the same way, else the first."""
    out = dict(a)
    for key, value in b.items():
        if key not in out:
            out[key] = value
        elif isinstance(value, dict) and isinstance(out[key], dict):
            out[key] = sum_stats(out[key], value)
        elif isinstance(value, int | float) and isinstance(out[key], int | float) and not isinstance(value, bool):
            out[key] = out[key] + value
    return out


def _first_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            return f"{key}: {a.get(key)!r} vs {b.get(key)!r}"
    return "no difference"


def answer_on_ray(
    runs: list[TaskRun],
    model: ModelSpec,
    adapter_cls: type[ModelAdapter],
    out_dir: Path,
    seed: int,
    options: ExecutorOptions,
) -> Answered:
    """Answer the missing blocks of ``runs`` on Ray (some instance is missing: ``answer_missing``)."""
    connecting = time.perf_counter()
    ray = connect(options.ray_address)
    connect_seconds = time.perf_counter() - connecting
    pool = RayPool(ray, runs, model, adapter_cls, out_dir, seed, options)
    try:
        pool.run()
        api_calls = pool.run_stats()
    finally:
        pool.close()
    address = ray.get_runtime_context().gcs_address
    load = max(pool.load_seconds) if pool.load_seconds else None
    execution = {**pool.execution(address), "connect_seconds": round(connect_seconds, 3)}
    return Answered(stored_model_info(runs), load, api_calls, execution)

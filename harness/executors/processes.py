"""Worker processes on this machine (``--executor local --workers N``): the pool of :mod:`harness.executors.pool`
without Ray.

Why: on a CPU, several processes of a few threads each answer faster than one process with all the threads. Torch
synchronises its threads at every operator, and the Python between operators (the model's modules, the trie's
bookkeeping) runs on one core while the others wait. Two processes of one thread each answered four Provo blocks of
64 contexts 11 to 16% faster than one process of two threads on the project's 2-core machine
(``docs/distributed.md``). Each worker loads its own copy of the model, so memory grows with the workers.

Each worker is a child process started with ``spawn`` (a fresh interpreter: no torch or CUDA state copied from
this one) that serves one :class:`~harness.executors.worker.ModelWorker` over a pipe, one call at a time, in the
order sent. A worker whose process ends (killed, out of memory) shows as :class:`~harness.executors.pool.WorkerDied`
on every call it held; the pool starts a replacement and sends its blocks again.

On a machine with several GPUs (and ``--device`` not ``cpu``) the workers are spread over them: worker ``i`` sees
only GPU ``i mod G`` of the ``G`` this process sees (``CUDA_VISIBLE_DEVICES``), so ``--workers 4`` on a 4-GPU box
puts one model on each. With one GPU every worker shares it, as Ray's ``--gpus-per-worker 0.5`` would.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.executors.backend import WorkerDied
from harness.executors.base import Answered, AnswerJob, ExecutorOptions
from harness.executors.pool import answer_with_pool, threads_per_worker

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from harness.models import ModelAdapter, ModelSpec

#: Seconds an idle worker is given to exit after its pipe closes, before it is killed.
EXIT_SECONDS = 5.0


def _serve(
    conn: Connection, adapter_cls: type[ModelAdapter], spec: ModelSpec, cwd: str, threads: int, gpu: str | None
) -> None:
    """The child's loop: run each call on the worker, send back ``(id, ok, value or exception)``; end when the
    driver's end of the pipe closes. ``gpu`` (a ``CUDA_VISIBLE_DEVICES`` entry) is the one GPU this worker sees."""
    if gpu is not None:
        # Read when CUDA initialises, which nothing has done yet in this fresh interpreter (unpickling the adapter
        # class imports torch, which does not initialise CUDA).
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    from harness.executors.worker import ModelWorker

    # Ctrl-C reaches the whole process group; the driver alone handles it, and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    worker = ModelWorker(adapter_cls, spec, cwd, threads)
    while True:
        try:
            call_id, method, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[int, bool, Any] = (call_id, True, getattr(worker, method)(*args))
        except Exception as exc:  # noqa: BLE001 - every error goes back to the driver, which raises it
            reply = (call_id, False, _sendable(exc))
        try:
            conn.send(reply)
        except (BrokenPipeError, OSError):
            return
        except Exception as exc:  # noqa: BLE001 - an answer that cannot be pickled
            conn.send((call_id, False, RuntimeError(f"cannot send the answer to {method}: {exc}")))


def _sendable(exc: Exception) -> Exception:
    """``exc`` if it survives pickling, else a RuntimeError with its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure to round-trip means: send the text instead
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


@dataclass(eq=False)
class Worker:
    """One child process and its pipe; ``calls`` are those sent and not answered yet."""

    process: BaseProcess
    conn: Connection
    calls: dict[int, Call] = field(default_factory=dict)
    #: Why the process is gone, once it is.
    death: str | None = None


@dataclass(eq=False)
class Call:
    """A call sent to a worker (hashable by identity: the pool keys its table with it)."""

    worker: Worker
    id: int
    done: bool = False
    ok: bool = False
    value: Any = None


class ProcessBackend:
    """Workers as child processes of this one (:class:`~harness.executors.pool.Backend`)."""

    name = "local"
    #: Blocks sent ahead to each worker: one. A pipe's round trip takes microseconds, and a second queued block could
    #: leave another worker idle at the end of the run.
    in_flight = 1

    def __init__(self, options: ExecutorOptions, gpu_ids: list[str] | None = None) -> None:
        self.workers = options.workers or 1
        self.cpus = options.cpus_per_worker
        #: The GPUs shared among the workers (``CUDA_VISIBLE_DEVICES`` entries); empty: workers see what this
        #: process sees.
        self.gpu_ids = list(gpu_ids or [])
        #: A worker sees one GPU, shared with the others given the same one.
        self.gpus = min(1.0, len(self.gpu_ids) / self.workers) if self.gpu_ids else 0.0
        self._context = multiprocessing.get_context("spawn")
        self._next_id = 0

    def start(self, index: int, adapter_cls: type[ModelAdapter], spec: ModelSpec, threads: int) -> Worker:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(
            target=_serve,
            args=(theirs, adapter_cls, spec, os.getcwd(), threads, self.gpu_of(index)),
            name=f"harness-worker-{index + 1}",
            daemon=True,
        )
        try:
            process.start()
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise HarnessError(
                f"--workers: cannot start a worker process for {adapter_cls.__name__} ({exc}); the model adapter must "
                "be importable by name (a plugin package), or run without --workers"
            ) from exc
        theirs.close()
        return Worker(process, ours)

    def gpu_of(self, index: int) -> str | None:
        """The GPU worker ``index`` sees (a replacement sees its predecessor's), or None: all of this process's."""
        return self.gpu_ids[index % len(self.gpu_ids)] if self.gpu_ids else None

    def call(self, worker: Worker, method: str, *args: Any) -> Call:
        self._next_id += 1
        call = Call(worker, self._next_id)
        if worker.death is None:
            worker.calls[call.id] = call
            try:
                worker.conn.send((call.id, method, args))
            except (BrokenPipeError, OSError):
                self._bury(worker)
        else:
            call.done = True
        return call

    def wait(self, calls: list[Call], timeout: float) -> list[Call]:
        if not any(call.done for call in calls):
            self._wait_any({call.worker for call in calls}, timeout)
        return [call for call in calls if call.done]

    def result(self, call: Call, timeout: float | None = None) -> Any:
        # One wait can end on another call's reply (a worker answers in order): wait until this one is done.
        deadline = None if timeout is None else time.monotonic() + timeout
        while not call.done:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"worker process {call.worker.process.pid} did not answer in {timeout} s")
            self._wait_any([call.worker], left)
        if not call.ok and call.value is None:  # ended by the worker's death, not by an answer
            raise WorkerDied(call.worker.death or f"worker process {call.worker.process.pid} ended")
        if not call.ok:
            raise call.value
        return call.value

    def kill(self, worker: Worker) -> None:
        # An idle worker exits by itself once its pipe closes; one still answering a call is killed at once.
        idle = worker.death is None and not worker.calls
        worker.conn.close()
        worker.process.join(EXIT_SECONDS if idle else 0)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        self._bury(worker)

    def where(self) -> str:
        return f"in {self.workers} process{'es' if self.workers != 1 else ''}"

    def execution(self) -> dict[str, Any]:
        return {}

    def room(self) -> str:
        return f"this machine has {os.cpu_count() or 1} CPUs"

    # ---------------------------------------------------------------------------------------------------- pipes
    def _wait_any(self, workers: Iterable[Worker], timeout: float | None) -> None:
        """Wait until one of the live ``workers`` replies or ends (at most ``timeout`` seconds; None: no limit), and
        take in what it sent."""
        handles: dict[Any, Worker] = {}
        for worker in workers:
            if worker.death is None:
                handles[worker.conn] = worker
                handles[worker.process.sentinel] = worker
        for ready in wait_for(list(handles), timeout):
            worker = handles[ready]
            if ready is worker.conn:
                self._receive(worker)
            else:
                self._bury(worker)

    def _receive(self, worker: Worker) -> None:
        """Every reply waiting in ``worker``'s pipe; a closed pipe means the process is gone."""
        try:
            _drain(worker)
        except (EOFError, OSError):
            self._bury(worker)

    def _bury(self, worker: Worker) -> None:
        """Mark ``worker`` dead: the replies it sent before dying count, its other calls end in WorkerDied."""
        if worker.death is not None:
            return
        if not worker.conn.closed:
            with contextlib.suppress(EOFError, OSError):
                _drain(worker)
        worker.process.join(EXIT_SECONDS)
        code = worker.process.exitcode
        if code is None:
            worker.death = f"process {worker.process.pid} stopped answering"
        elif code < 0:
            worker.death = f"process {worker.process.pid} killed by {_signal_name(-code)}"
        else:
            worker.death = f"process {worker.process.pid} exited with code {code}"
        for call in worker.calls.values():
            call.done = True
        worker.calls.clear()


def _drain(worker: Worker) -> None:
    """Mark answered the calls whose replies wait in ``worker``'s pipe (EOFError or OSError once it is closed)."""
    while worker.conn.poll():
        call_id, ok, value = worker.conn.recv()
        call = worker.calls.pop(call_id)
        call.done, call.ok, call.value = True, ok, value


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def answer_in_processes(job: AnswerJob) -> Answered:
    """Answer the missing blocks of ``job.runs`` in ``job.options.workers`` child processes (``answer_missing``)."""
    options = job.options
    backend = ProcessBackend(options, visible_gpus(job.model.device) if (options.workers or 1) > 1 else [])
    cpus = os.cpu_count() or 1
    if backend.workers * threads_per_worker(backend.cpus) > cpus:
        print(
            f"warning: --workers {backend.workers} x --cpus-per-worker {backend.cpus:g} threads share this machine's "
            f"{cpus} CPUs; fewer workers or threads answer faster",
            file=sys.stderr,
        )
    return answer_with_pool(backend, job)


def visible_gpus(device: str) -> list[str]:
    """The GPUs this process sees, as ``CUDA_VISIBLE_DEVICES`` entries for the workers; none for ``--device cpu``,
    without torch, or without a GPU.

    The count is torch's (it applies CUDA's rules to ``CUDA_VISIBLE_DEVICES``: an invalid entry hides the ones after
    it); the names are that variable's entries (indices or UUIDs) when it is set, else ``0 .. count-1``."""
    if device == "cpu":
        return []
    try:
        import torch
    except ImportError:
        return []
    count = int(torch.cuda.device_count())
    if count <= 0:
        return []
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = [entry.strip() for entry in listed.split(",")] if listed is not None else [str(i) for i in range(count)]
    return names[:count]

"""Where a pool's workers run: the interface each kind of worker (a local process, a Ray actor) implements for the
driver loop of :mod:`harness.executors.pool`.

Why its own module: the pool and its two backends (:mod:`harness.executors.processes`,
:mod:`harness.executors.ray_driver`) all use it, and the backends need nothing else of the pool's internals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harness.models import ModelAdapter, ModelSpec


class WorkerDied(Exception):
    """The worker holding a call ended (its process killed, its node lost) before answering it."""


class Backend(Protocol):
    """Where the workers run. Calls are opaque, hashable handles; a worker answers its calls in the order sent."""

    #: The pool's name in its messages and ``execution.executor`` (``ray``, ``local``).
    name: str
    #: How many workers, and the CPUs and GPUs each is given.
    workers: int
    cpus: float
    gpus: float
    #: Blocks sent ahead to each worker: more than one hides a slow round trip (a cluster's network), but at the end
    #: of a run a worker may still hold queued blocks while another has none left.
    in_flight: int

    def start(self, index: int, adapter_cls: type[ModelAdapter], spec: ModelSpec, threads: int) -> Any:
        """A new worker in slot ``index`` (perhaps not placed yet, and not loaded: the pool calls ``placed`` and
        ``load``)."""

    def call(self, worker: Any, method: str, *args: Any) -> Any:
        """Ask ``worker`` to run ``ModelWorker.<method>(*args)``; a handle to wait on."""

    def wait(self, calls: list[Any], timeout: float) -> list[Any]:
        """Those of ``calls`` that are answered (or whose worker died), waiting at most ``timeout`` seconds for one."""

    def result(self, call: Any, timeout: float | None = None) -> Any:
        """The call's value; raises :class:`WorkerDied`, ``TimeoutError``, or the adapter's own exception."""

    def kill(self, worker: Any) -> None:
        """Stop ``worker`` now, whatever it is doing."""

    def where(self) -> str:
        """The progress bar's place, after the model's name: ``on ray``, ``in 2 processes``."""

    def execution(self) -> dict[str, Any]:
        """This backend's own entries of ``results.json``'s ``execution``."""

    def room(self) -> str:
        """What the workers' machine or cluster has free now, for a worker that cannot be placed: ``the Ray cluster
        has 0 CPUs and 0 GPUs free (of 2 CPUs and 0 GPUs)``."""

"""What the runner and an executor agree on: the options the user gives (``--executor`` and its settings), the job
to answer (:class:`AnswerJob`) and what answering leaves besides the stored responses.

Why its own module: every executor module imports these, and the package ``harness.executors`` imports the
executors; with the shared vocabulary here, below all of them, no executor imports the package (no import circle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.extras import require_extras

if TYPE_CHECKING:
    from harness.executors.task_run import TaskRun
    from harness.models import ModelAdapter, ModelSpec

EXECUTORS = ("local", "ray")
#: Who needs the ``ray`` extra, in its one-line error (``harness.extras``).
RAY_NEEDED_BY = "--executor ray"
#: Seconds a pool waits for a worker to be placed (a Ray actor scheduled on a node with its CPUs and GPUs free)
#: before it goes on without it, or stops with an error when no other worker is placed: long enough for a cluster's
#: autoscaler to add a node, short enough that a run whose workers can never be placed (a lost node's GPUs, and no
#: other free) does not wait forever.
PLACEMENT_SECONDS = 600.0


@dataclass(frozen=True)
class ExecutorOptions:
    """``--executor`` and its settings (the Ray-only ones are refused with the local executor, and the pool's ones
    with a local run in this process)."""

    name: str = "local"
    #: Ray: the cluster to join (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``); None starts one on this machine
    #: (or joins ``$RAY_ADDRESS``).
    ray_address: str | None = None
    #: Ray: how many actors hold the model; None fills the cluster (its GPUs, else its CPUs / ``cpus_per_worker``).
    #: Local: how many child processes hold the model; None answers in this process.
    workers: int | None = None
    #: CPUs per worker: Ray reserves them, and each worker's torch uses as many threads.
    cpus_per_worker: float = 1.0
    #: Ray: GPUs per actor; None asks one each when the cluster has GPUs and the model's device is not ``cpu``.
    gpus_per_worker: float | None = None
    #: How many times a block is sent again after the worker answering it died.
    max_retries: int = 3
    #: Seconds a pool's worker may wait to be placed (``PLACEMENT_SECONDS``).
    placement_timeout: float = PLACEMENT_SECONDS

    def check(self) -> None:
        """A one-line error for a setting that cannot work, before anything loads."""
        if self.name not in EXECUTORS:
            raise HarnessError(f"--executor: expected one of {', '.join(EXECUTORS)}, got '{self.name}'")
        if self.name == "local":
            ray_only = {
                "--ray-address": self.ray_address is not None,
                "--gpus-per-worker": self.gpus_per_worker is not None,
            }
            pool_only = {"--cpus-per-worker": self.cpus_per_worker != 1.0, "--max-retries": self.max_retries != 3}
            for flag, given in ray_only.items():
                if given:
                    raise HarnessError(f"{flag}: only used with --executor ray")
            for flag, given in pool_only.items():
                if given and self.workers is None:
                    raise HarnessError(f"{flag}: only used with --workers N or --executor ray")
        if self.name == "ray":  # checked before data loads; Ray itself is imported only when used
            require_extras(("ray",), RAY_NEEDED_BY)
        if self.workers is not None and self.workers < 1:
            raise HarnessError(f"--workers: expected a positive integer, got {self.workers}")
        if not self.cpus_per_worker > 0:
            raise HarnessError(f"--cpus-per-worker: expected a positive number, got {self.cpus_per_worker}")
        if self.gpus_per_worker is not None and self.gpus_per_worker < 0:
            raise HarnessError(f"--gpus-per-worker: expected a number >= 0, got {self.gpus_per_worker}")
        if self.max_retries < 0:
            raise HarnessError(f"--max-retries: expected an integer >= 0, got {self.max_retries}")
        if not self.placement_timeout > 0:
            raise HarnessError(
                f"placement_timeout: expected a positive number of seconds, got {self.placement_timeout}"
            )


@dataclass(frozen=True)
class AnswerJob:
    """What an executor is asked to answer, built once by the runner and passed down unchanged: every executor (and
    the pool's driver) reads what it needs of it. Frozen: no executor rebinds a field (the runs' stores and timings
    are what answering fills)."""

    #: The tasks' runs whose missing instances get a stored response (their stores open).
    runs: list[TaskRun]
    #: The model to load (``--model``, ``--model-args``, ``--device``, ...).
    model: ModelSpec
    #: The adapter class that loads and answers it.
    adapter_cls: type[ModelAdapter]
    #: The output folder (the responses' and the API cache's parent).
    out_dir: Path
    #: The run's seed, from which each block's requests are seeded.
    seed: int
    #: ``--executor`` and its settings (which executor answers is :func:`~harness.executors.dispatch.answer_missing`'s
    #: choice).
    options: ExecutorOptions


@dataclass
class Answered:
    """What answering left besides the stored responses, for ``results.json``."""

    #: ``ModelAdapter.info()`` of the model that answered (read back from a store when nothing was asked).
    model_info: dict[str, Any] = field(default_factory=dict)
    load_seconds: float | None = None
    #: ``ModelAdapter.run_stats()`` (summed over workers), or None.
    api_calls: dict[str, Any] | None = None
    #: How the run was executed (``results.json``'s ``execution``; volatile: a resumed run sends fewer blocks).
    execution: dict[str, Any] = field(default_factory=dict)

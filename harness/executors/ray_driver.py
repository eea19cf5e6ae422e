"""The Ray executor: the workers are Ray actors, one per worker, each holding a loaded model, on this machine or a
cluster; the driver loop that sends them blocks and stores the answers is :mod:`harness.executors.pool`'s.

This module joins or starts the cluster, plans how many actors fit it (``--workers``, ``--cpus-per-worker``,
``--gpus-per-worker``), and maps the pool's calls onto Ray's (``docs/distributed.md``).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError, one_line
from harness.executors.backend import WorkerDied
from harness.executors.base import RAY_NEEDED_BY, Answered, AnswerJob, ExecutorOptions
from harness.executors.pool import answer_with_pool
from harness.executors.worker import ModelWorker
from harness.extras import require_extras

if TYPE_CHECKING:
    from harness.models import ModelAdapter, ModelSpec

#: Environment variables the workers get from the driver (those that change what a worker does, not secrets).
FORWARDED_PREFIXES = ("HARNESS_",)
FORWARDED_SUFFIXES = ("_OFFLINE",)


def import_ray() -> Any:
    require_extras(("ray",), RAY_NEEDED_BY)
    import ray

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


class RayBackend:
    """Workers as Ray actors (:class:`~harness.executors.pool.Backend`), one per worker, each asking Ray for
    ``cpus_per_worker`` CPUs and ``gpus_per_worker`` GPUs."""

    name = "ray"
    #: Blocks sent ahead to each worker: one being answered, one waiting in the actor's queue (hides the round trip).
    in_flight = 2

    def __init__(self, ray: Any, options: ExecutorOptions, model: ModelSpec) -> None:
        self.ray = ray
        self.workers, self.cpus, self.gpus = plan_workers(options, model, ray.cluster_resources())
        self.actor_class = ray.remote(ModelWorker)

    def start(self, index: int, adapter_cls: type[ModelAdapter], spec: ModelSpec, threads: int) -> Any:
        return self.actor_class.options(
            num_cpus=self.cpus,
            num_gpus=self.gpus,
            max_restarts=0,
            max_task_retries=0,
            runtime_env={"env_vars": forwarded_environment()},
        ).remote(adapter_cls, spec, os.getcwd(), threads)

    def call(self, worker: Any, method: str, *args: Any) -> Any:
        return getattr(worker, method).remote(*args)

    def wait(self, calls: list[Any], timeout: float) -> list[Any]:
        ready, _ = self.ray.wait(calls, num_returns=1, timeout=timeout)
        return list(ready)

    def result(self, call: Any, timeout: float | None = None) -> Any:
        exceptions = self.ray.exceptions
        try:
            return self.ray.get(call, timeout=timeout)
        except exceptions.RayActorError as exc:
            raise WorkerDied(str(exc)) from exc
        except exceptions.GetTimeoutError as exc:
            raise TimeoutError(str(exc)) from exc
        except exceptions.RayTaskError as exc:
            # The adapter's own error (a bad argument, an API refusing): the same one line as locally.
            cause = getattr(exc, "cause", None)
            if isinstance(cause, HarnessError):
                raise cause from None
            raise

    def kill(self, worker: Any) -> None:
        self.ray.kill(worker, no_restart=True)

    def where(self) -> str:
        return "on ray"

    def execution(self) -> dict[str, Any]:
        return {"address": self.ray.get_runtime_context().gcs_address}

    def room(self) -> str:
        free, total = self.ray.available_resources(), self.ray.cluster_resources()
        return f"the Ray cluster has {_resources_text(free)} free (of {_resources_text(total)})"


def answer_on_ray(job: AnswerJob) -> Answered:
    """Answer the missing blocks of ``job.runs`` on Ray (some instance is missing: ``answer_missing``)."""
    connecting = time.perf_counter()
    ray = connect(job.options.ray_address)
    connect_seconds = time.perf_counter() - connecting
    backend = RayBackend(ray, job.options, job.model)
    answered = answer_with_pool(backend, job)
    answered.execution["connect_seconds"] = round(connect_seconds, 3)
    return answered

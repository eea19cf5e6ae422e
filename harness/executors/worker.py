"""The worker that holds one loaded model and answers blocks of requests for the driver (:mod:`harness.executors.pool`).

It stores nothing: the driver alone writes the response stores (one writer, the output folder's lock respected),
so a worker that dies loses at most the blocks it was answering, which the driver sends again. It imports nothing
from Ray or multiprocessing: the Ray executor wraps it with ``ray.remote``, the local one serves it in a child
process (:mod:`harness.executors.processes`), and tests can call it directly.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.kinds.base import RequestKind
from harness.models import ModelAdapter, ModelSpec


@dataclass(frozen=True)
class BlockAnswer:
    """One block's stored records, and the adapter's ``run_stats`` once it was answered.

    Why the counts travel with every block: the driver keeps each worker's latest counts, so the requests a worker
    made for the blocks it answered still count after it dies (asked at the end, they would die with it)."""

    records: list[dict[str, Any]]
    run_stats: dict[str, Any] | None


class ModelWorker:
    def __init__(self, adapter_cls: type[ModelAdapter], spec: ModelSpec, cwd: str, threads: int) -> None:
        # Relative paths in the model's name or arguments mean what they mean to the driver, wherever its folder
        # exists (the same machine, or a shared file system).
        if Path(cwd).is_dir():
            os.chdir(cwd)
        self.adapter_cls = adapter_cls
        self.spec = spec
        self.threads = threads
        self.adapter: ModelAdapter | None = None

    def placed(self) -> dict[str, Any]:
        """Answered as soon as the worker runs: on Ray, once its actor has been placed on a node with the resources
        it asks for (until then the pool's placement timeout runs)."""
        return {"pid": os.getpid(), "host": socket.gethostname()}

    def load(self) -> dict[str, Any]:
        """Build the adapter (load the model); returns what the driver needs to know about this worker."""
        start = time.perf_counter()
        self.adapter = self.adapter_cls(self.spec)
        seconds = time.perf_counter() - start
        torch = sys.modules.get("torch")
        if torch is not None:
            # As many threads as CPUs this worker was given, not as many as the machine has: workers share it.
            torch.set_num_threads(self.threads)
        return {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "group_size": self.adapter.group_size,
            "info": self.adapter.info(),
            "load_seconds": seconds,
            # Which GPUs this worker sees: set by Ray for an actor with GPUs, by the local pool on a multi-GPU box.
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            # What loading cost (an API adapter's probe), kept by the driver should this worker die before a block.
            "run_stats": self.adapter.run_stats(),
        }

    def answer(self, kind: RequestKind, requests: list[Any]) -> BlockAnswer:
        """The stored records of the responses to one block's requests (``RequestKind.answer``), with the counts
        so far."""
        assert self.adapter is not None, "load() first"
        records = kind.answer(self.adapter, requests)
        return BlockAnswer(records, self.adapter.run_stats())

    def run_stats(self) -> dict[str, Any] | None:
        return self.adapter.run_stats() if self.adapter is not None else None

    def close(self) -> None:
        if self.adapter is not None:
            self.adapter.close()
            self.adapter = None

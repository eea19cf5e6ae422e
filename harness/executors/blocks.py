"""The unit of work: a fixed block of one task's instances, and how its requests and responses are handled.

Why fixed: an adapter may share work inside a block (the trie sampler's lockstep contexts), so a block's
composition can change the last bits of a number. Blocks are therefore cut from the evaluated instance list, never
from what happens to be missing, and every executor cuts the same ones: a resumed run, a Ray run and a local run
ask the same requests in the same groups. A block with some instances already stored is asked whole again and only
its missing responses are stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.instances import Instance
from harness.outputs.store import ResponseStore
from harness.seeding import derive_seed

if TYPE_CHECKING:
    from harness.executors.task_run import TaskRun


@dataclass(frozen=True)
class Block:
    run: TaskRun
    #: Its place among the task's blocks (0-based), and how many the task has: ``provo block 3/40``.
    number: int
    of: int
    instances: tuple[Instance, ...]

    @property
    def label(self) -> str:
        return f"{self.run.name} block {self.number + 1}/{self.of}"

    @property
    def store(self) -> ResponseStore:
        assert isinstance(self.run.store, ResponseStore), "a block is answered only for a run with a store"
        return self.run.store

    def seeds(self, run_seed: int) -> list[int]:
        return [derive_seed(run_seed, self.run.name, inst.id) for inst in self.instances]

    def requests(self, run_seed: int) -> tuple[list[int], list[Any]]:
        """Each instance's seed and request, as the task's request kind builds them."""
        task = self.run.task
        seeds = self.seeds(run_seed)
        built = [
            task.kind.build(task.config, inst, s, task.scorers) for inst, s in zip(self.instances, seeds, strict=True)
        ]
        return seeds, built

    def store_answers(self, seeds: list[int], requests: list[Any], records: list[dict[str, Any]]) -> None:
        """Append the responses of the instances not stored yet."""
        store, kind = self.store, self.run.task.kind
        for inst, inst_seed, request, record in zip(self.instances, seeds, requests, records, strict=True):
            if inst.id not in store:
                store.append(inst.id, inst_seed, record, kind.request_record(request))


def cut_blocks(run: TaskRun, size: int) -> list[Block]:
    """The task's blocks of ``size`` instances that hold at least one instance without a stored response."""
    store = run.store
    assert isinstance(store, ResponseStore)
    instances = run.data.instances
    size = max(1, size)
    cut = [tuple(instances[k : k + size]) for k in range(0, len(instances), size)]
    return [
        Block(run, number, len(cut), block)
        for number, block in enumerate(cut)
        if any(inst.id not in store for inst in block)
    ]


def blocks_in(run: TaskRun, size: int) -> int:
    """How many blocks the task has in all (the denominator of ``blocks_sent``)."""
    return -(-len(run.data.instances) // max(1, size))


def stored_model_info(runs: list[TaskRun]) -> dict[str, Any]:
    """The model's provenance as the stores recorded it, so a finished run scored again without loading the model
    reports the same."""
    stores = [r.store for r in runs if isinstance(r.store, ResponseStore)]
    return next((s.model_info for s in stores if s.model_info), {})


def anything_missing(runs: list[TaskRun]) -> bool:
    return any(inst.id not in r.store for r in runs if r.store is not None for inst in r.data.instances)

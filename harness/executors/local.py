"""The local executor: this process loads the model (only when something is missing) and answers the blocks in
order, one task after another, storing each block's responses as soon as it is answered."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import Any

from harness.executors.base import Answered, AnswerJob
from harness.executors.blocks import blocks_in, cut_blocks, stored_model_info
from harness.outputs.store import ResponseStore
from harness.progress import progress


def answer_locally(job: AnswerJob) -> Answered:
    """Answer the missing blocks of ``job.runs`` in this process (some instance is missing: ``answer_missing``);
    ``job.options`` says nothing here."""
    runs, seed = job.runs, job.seed
    execution: dict[str, Any] = {"executor": "local", "blocks": {}}
    load_start = time.perf_counter()
    adapter = job.adapter_cls(replace(job.model, cache_dir=job.out_dir / "api-cache"))
    load_seconds = time.perf_counter() - load_start
    try:
        info = adapter.info()
        for r in runs:
            assert isinstance(r.store, ResponseStore)
            r.store.set_model_info(info)
        try:
            for r in runs:
                todo = cut_blocks(r, adapter.group_size)
                execution["blocks"][r.name] = {"total": blocks_in(r, adapter.group_size), "sent": len(todo)}
                if not todo:
                    continue
                start = time.perf_counter()
                total = sum(len(block.instances) for block in todo)
                for block in progress(
                    todo, total=total, desc=r.name, unit="instance", weight=lambda b: len(b.instances)
                ):
                    seeds, requests = block.requests(seed)
                    block.store_answers(seeds, requests, r.task.kind.answer(adapter, requests))
                r.timing["requests_seconds"] = round(time.perf_counter() - start, 3)
        finally:
            api_calls = adapter.run_stats()
    finally:
        adapter.close()
    torch = sys.modules.get("torch")
    if torch is not None:  # CPU sums depend on the thread count in their last bits (docs/distributed.md)
        execution["threads"] = torch.get_num_threads()
    return Answered(stored_model_info(runs), load_seconds, api_calls, execution)

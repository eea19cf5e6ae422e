"""One ``harness run``: check, load data, answer missing requests (resumably), score, write results.

Order matters for the user: every task file is checked and every data set loaded before a model is touched, so a
typo costs a second, not a model load. Responses go to the store one by one as they arrive; scoring reads them back
from the store, so a resumed run and an uninterrupted run score the very same records.

The steps live in their own modules, which this one strings together: :mod:`harness.run.checks` (what can be wrong
before anything loads), :mod:`harness.run.task_data` (each task's instances), :mod:`harness.executors` (who answers
the missing requests) and :mod:`harness.run.scoring` (scores and the results' content).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Collection, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from harness import __version__
from harness.data.loaders import LoadedData, resolve_data_dir
from harness.errors import HarnessError
from harness.executors import Answered, AnswerJob, answer_missing
from harness.executors.task_run import TaskRun
from harness.files import WriteError, ensure_output_dir
from harness.instances import Instance
from harness.models import ModelAdapter, ModelSpec
from harness.outputs.locking import OutputLock
from harness.outputs.run_dir import new_stamp, write_invocation
from harness.outputs.store import ResponseStore
from harness.registry.manager import Registry, get_registry
from harness.registry.task_loading import ResolvedTask
from harness.run.checks import check_run
from harness.run.options import RunOptions
from harness.run.scoring import score_runs
from harness.run.task_data import load_task_data, report_coverage


def run(options: RunOptions, registry: Registry | None = None) -> dict[str, Any]:
    """Run the tasks and write the results; returns the ``results.json`` content."""
    started = time.perf_counter()
    registry = registry or get_registry()
    tasks, adapter_cls = check_run(options, registry)
    cover: Callable[[list[Instance]], Collection[str] | None] | None = None
    if options.model is not None and adapter_cls is not None:
        cover = partial(adapter_cls.covered_instances, options.model)

    data_dir, _ = resolve_data_dir(options.data_dir)
    out_dir = options.run_dir
    ensure_output_dir(out_dir, "--output-dir")
    loaded: dict[str, LoadedData] = {}
    runs = []
    for t in tasks:
        # Decoding variants of one task read the same data: load it once.
        kind = registry.kind(t.config.request)
        shaping = {name: t.config.params.get(name) for name in kind.instance_params}
        key = json.dumps([t.config.loader, t.config.data, t.config.request, shaping], sort_keys=True, default=str)
        if key not in loaded:
            loaded[key] = load_task_data(t, registry, data_dir, options.limit, cover)
            if options.model is not None:
                report_coverage(t.name, loaded[key], options.model)
        runs.append(TaskRun(t, loaded[key]))

    with OutputLock(out_dir):
        return _run_locked(options, runs, adapter_cls, out_dir, data_dir, started)


def _run_locked(
    options: RunOptions,
    runs: list[TaskRun],
    adapter_cls: type[ModelAdapter] | None,
    out_dir: Path,
    data_dir: Path,
    started: float,
) -> dict[str, Any]:
    """Answer, score and write while holding the output folder's lock (no second process mixes in)."""
    answered = Answered()
    if options.model is not None and adapter_cls is not None:
        for r in runs:
            fingerprint = _fingerprint(
                r.task, r.data, options.model, options.seed, options.limit, adapter_cls.identity(options.model)
            )
            header = {"task": r.name, "model": options.model.label, "seed": options.seed}
            r.store = ResponseStore(out_dir / "responses" / f"{r.name}-{fingerprint}.jsonl", fingerprint, header)
        answered = answer_missing(AnswerJob(runs, options.model, adapter_cls, out_dir, options.seed, options.executor))

    results, samples = score_runs(runs, options, answered.model_info, answered.load_seconds)
    results["config"]["data_dir"] = str(data_dir.resolve())
    if answered.api_calls is not None:
        results["api_calls"] = answered.api_calls
    if answered.execution:
        results["execution"] = answered.execution
    results["total_evaluation_time_seconds"] = round(time.perf_counter() - started, 3)
    safe = (
        f"the model's responses are safe in {out_dir / 'responses'}; run the same command again to write the results "
        "without asking the model again"
        if options.model is not None
        else "nothing else was lost; run the same command again"
    )
    write_results(out_dir, results, samples, safe)
    return results


def _fingerprint(
    task: ResolvedTask,
    data: LoadedData,
    model: ModelSpec,
    seed: int,
    limit: int | None,
    identity: Mapping[str, Any] | None = None,
) -> str:
    """Everything that determines the stored responses. ``limit`` is included because adapters answer instances
    in fixed blocks of the evaluated list, and a block's composition can change the last bits of the numbers."""
    identity_record: dict[str, Any] = {
        "harness": __version__,
        "limit": limit,
        "task": task.config.to_dict(),
        "data_hash": data.data_hash,
        "model": {
            "kind": model.kind,
            "name": model.name,
            "args": dict(sorted(model.args.items())),
            "device": model.device,
            "batch_size": model.batch_size,
        },
        "seed": seed,
    }
    if identity:  # only when the adapter has one, so every other run keeps its store
        identity_record["model"]["identity"] = dict(identity)
    blob = json.dumps(identity_record, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def write_results(out_dir: Path, results: dict[str, Any], samples: dict[str, list[dict[str, Any]]], safe: str) -> Path:
    """Write one invocation's files (``harness.outputs.run_dir``); a failed write says what is still safe."""
    try:
        return write_invocation(out_dir, new_stamp(out_dir), results, samples)
    except WriteError as exc:
        raise HarnessError(f"{exc}; {safe}") from exc

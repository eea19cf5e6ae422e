"""One ``harness run``: validate, load data, answer missing requests (resumably), score, write results.

Order matters for the user: every task file is validated and every data set loaded before a model is touched,
so a typo costs a second, not a model load. Responses go to the store one by one as they arrive; scoring reads
them back from the store, so a resumed run and an uninterrupted run score the very same records.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from harness import __version__
from harness.data import LoadedData, resolve_data_dir
from harness.errors import HarnessError
from harness.executors import Answered, ExecutorOptions, answer_missing
from harness.files import WriteError, ensure_output_dir
from harness.instances import Instance
from harness.locking import OutputLock
from harness.models import ModelAdapter, ModelSpec
from harness.plugins import Registry, get_registry
from harness.results import (
    FORMAT_VERSION,
    PER_TASK_KEYS,
    add_cost,
    git_hash,
    library_versions,
    lm_eval_entries,
    lm_eval_hash,
    metric_record,
)
from harness.run_dir import new_stamp, write_invocation
from harness.scoring import Metric, Scorer, ScorerUnavailable
from harness.seeding import derive_rng
from harness.store import ResponseStore
from harness.task_loading import ResolvedTask, resolve_tasks

HUMAN_ONLY_LABEL = "human"


@dataclass
class RunOptions:
    tasks: list[str]
    model: ModelSpec | None
    task_args: Mapping[str, Any] = field(default_factory=dict)
    limit: int | None = None
    seed: int = 0
    output_dir: Path = Path("runs")
    data_dir: str | None = None
    #: Who answers the missing requests (``--executor``); the results do not depend on it.
    executor: ExecutorOptions = field(default_factory=ExecutorOptions)
    #: The run's folder under ``output_dir``; default ``<kind>__<name>`` (a sweep names two configurations of one
    #: model apart with it).
    folder: str | None = None

    @property
    def run_dir(self) -> Path:
        return self.output_dir / (self.folder or run_slug(self.model))


class ResponseSource(Protocol):
    """Where scoring reads each instance's record: the response store of a run, or a finished run's samples file
    when ``harness score`` re-scores it."""

    def __contains__(self, instance_id: str) -> bool: ...

    def get(self, instance_id: str) -> dict[str, Any]: ...


@dataclass
class TaskRun:
    task: ResolvedTask
    data: LoadedData
    store: ResponseSource | None = None
    timing: dict[str, float] = field(default_factory=dict)
    #: Which metrics each scorer reported (set when the task is scored), for the headline table.
    metrics_by_scorer: dict[str, list[str]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.task.name


def run_slug(model: ModelSpec | None) -> str:
    if model is None:
        return HUMAN_ONLY_LABEL
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{model.kind}__{model.name}").strip("_")


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


def load_task_data(
    task: ResolvedTask,
    registry: Registry,
    data_dir: Path,
    limit: int | None,
    cover: Callable[[list[Instance]], Collection[str] | None] | None = None,
    uncovered: Collection[str] = (),
) -> LoadedData:
    """The task's instances: those the model can answer (``cover`` of the loaded instances: the ids it has
    outputs for, None for all) and not ``uncovered`` (what a re-scored run recorded as missing), then the first
    ``limit`` of them.

    Instances left out because the model has no outputs for them are listed in the data source record
    (``missing``), so the results say which instances a partial import did not cover."""
    loader = registry.loader(task.config.loader)
    data = loader(task.config.data, data_dir)
    if not data.instances:
        raise HarnessError(f"task {task.config.task}: loader '{task.config.loader}' found no instances")
    ids = [inst.id for inst in data.instances]
    if len(set(ids)) != len(ids):
        raise HarnessError(f"task {task.config.task}: loader '{task.config.loader}' gave duplicate instance ids")
    source = {**data.source, "n_total": len(ids)}
    instances = list(data.instances)
    keep: set[str] | None = None
    unmatched: list[str] = []
    if cover is not None:
        offered = cover(instances)
        if offered is not None:
            keep = set(offered)
            unmatched = sorted(keep.difference(ids))
    if uncovered:
        keep = (set(ids) if keep is None else keep) - set(uncovered)
    if keep is not None:
        instances = [inst for inst in instances if inst.id in keep]
        if not instances:
            raise HarnessError(
                f"task {task.config.task}: the model has outputs for none of its {len(ids)} instances "
                f"(its ids look like {ids[0]!r}; the outputs' like {min(keep, default=None)!r})"
            )
        missing = [i for i in ids if i not in keep]
        if missing:
            source["missing"] = {"n": len(missing), "ids": missing}
    if unmatched:
        source["unmatched_outputs"] = {"n": len(unmatched), "ids": unmatched}
    if limit is not None:
        instances = instances[:limit]
    elif len(instances) == len(ids) and not unmatched:
        return data
    return LoadedData(instances, data.data_hash, source)


def _report_coverage(task: str, data: LoadedData, model: ModelSpec) -> None:
    """Say on stderr what a partial model covers: instances without outputs, outputs matching no instance."""
    missing = data.source.get("missing", {}).get("n", 0)
    if missing:
        print(
            f"warning: task {task}: {model.label} has no outputs for {missing} of {data.source['n_total']} "
            f"instances; scored on the {data.source['n_total'] - missing} it has (listed in data_sources.missing)",
            file=sys.stderr,
        )
    unmatched = data.source.get("unmatched_outputs")
    if unmatched:
        print(
            f"warning: task {task}: {unmatched['n']} of {model.label}'s outputs match no instance "
            f"(e.g. {unmatched['ids'][0]!r}); they are not scored",
            file=sys.stderr,
        )


def check_run(options: RunOptions, registry: Registry) -> tuple[list[ResolvedTask], type[ModelAdapter] | None]:
    """Everything about a run that can be wrong before data or a model loads: the options, the task files, the
    model kind and what it answers. The run's tasks and the model's adapter class."""
    if not options.tasks:
        raise HarnessError("--tasks: no task given (expected comma-separated task names or task YAML files)")
    if options.limit is not None and options.limit < 1:
        raise HarnessError(f"--limit: expected a positive integer, got {options.limit}")
    options.executor.check()
    tasks = resolve_tasks(options.tasks, options.task_args, registry, expand_decoding=options.model is not None)
    adapter_cls: type[ModelAdapter] | None = None
    if options.model is not None:
        adapter_cls = registry.model(options.model.kind)
        if len(adapter_cls.options):  # a typo in --model-args costs a second, not a data load (or a sweep's models)
            adapter_cls.options.parse(options.model.args, f"--model-args for {options.model.label}")
        _check_model_answers(adapter_cls, options.model, tasks)
    return tasks, adapter_cls


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
        key = json.dumps([t.config.loader, t.config.data], sort_keys=True, default=str)
        if key not in loaded:
            loaded[key] = load_task_data(t, registry, data_dir, options.limit, cover)
            if options.model is not None:
                _report_coverage(t.name, loaded[key], options.model)
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
        answered = answer_missing(runs, options.model, adapter_cls, out_dir, options.seed, options.executor)

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


def write_results(out_dir: Path, results: dict[str, Any], samples: dict[str, list[dict[str, Any]]], safe: str) -> Path:
    """Write one invocation's files (``harness.run_dir``); a failed write says what is still safe."""
    try:
        return write_invocation(out_dir, new_stamp(out_dir), results, samples)
    except WriteError as exc:
        raise HarnessError(f"{exc}; {safe}") from exc


def _check_model_answers(adapter_cls: type[ModelAdapter], model: ModelSpec, tasks: list[ResolvedTask]) -> None:
    """Refuse, before the model loads, a task whose kind (or whose scorers' requests) the model cannot answer."""
    able = [k for k in sorted(adapter_cls.supported_requests) if not adapter_cls.refusal(model, k)]
    answers = ", ".join(able) or "nothing"
    for t in tasks:
        for need in t.kind.needs(t.config, t.scorers):
            why = adapter_cls.refusal(model, need.kind)
            if why:
                raise HarnessError(
                    f"model {model.label} cannot answer the '{need.kind}' requests that {need.needed_by} needs: "
                    f"{why} (it answers: {answers}){need.hint}"
                )


def score_runs(
    runs: list[TaskRun],
    options: RunOptions,
    model_info: dict[str, Any],
    load_seconds: float | None,
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Score every task from its stored responses: the results file's content and each task's samples records."""
    results: dict[str, Any] = {"format_version": FORMAT_VERSION, **{key: {} for key in PER_TASK_KEYS}}
    samples_by_task: dict[str, list[dict[str, Any]]] = {}
    timing: dict[str, Any] = {}
    for r in runs:
        start = time.perf_counter()
        metrics, samples, response_summary, unavailable, reports = _score_task(r, options.seed)
        controls = _controls(r, metrics, unavailable)
        samples_by_task[r.name] = samples
        name = r.name
        results["results"][name] = lm_eval_entries(name, metrics)
        results["metrics"][name] = {k: metric_record(m) for k, m in metrics.items()}
        results["higher_is_better"][name] = {k: m.higher_is_better for k, m in metrics.items()}
        results["configs"][name] = r.task.config.to_dict()
        results["versions"][name] = r.task.config.version
        results["n-samples"][name] = {
            "original": r.data.source.get("n_total", len(r.data.instances)),
            "effective": len(r.data.instances),
        }
        results["task_hashes"][name] = r.data.data_hash
        results["data_sources"][name] = r.data.source
        if response_summary:
            if "usage" in response_summary:
                add_cost(response_summary["usage"], model_info.get("prices_usd_per_million_tokens"))
            results["responses"][name] = response_summary
        if unavailable:
            results["unavailable"][name] = unavailable
        if reports:
            results["reports"][name] = reports
        if controls:
            results["controls"][name] = controls
        results["headline"][name] = _headline(r, metrics, unavailable)
        notes = {s.name: s.notes for s in r.task.scorers if s.notes and s.name not in unavailable}
        if notes:
            results["notes"][name] = notes
        described = {s.name: s.describe() for s in r.task.scorers if s.name not in unavailable and s.describe()}
        if described:
            results["scorers"][name] = described
        timing[name] = {**r.timing, "scoring_seconds": round(time.perf_counter() - start, 3)}

    model = options.model
    results["config"] = {
        "model": model.kind if model else HUMAN_ONLY_LABEL,
        "model_name": model.name if model else None,
        "model_args": dict(sorted(model.args.items())) if model else {},
        "model_info": model_info,
        "human_only": model is None,
        "batch_size": model.batch_size if model else None,
        "device": model_info.get("device", model.device) if model else None,
        "limit": options.limit,
        "random_seed": options.seed,
        "task_args": dict(options.task_args),
    }
    results["library_versions"] = library_versions()
    results["git_hash"] = git_hash()
    results["date"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    if load_seconds is not None:
        timing["model_load_seconds"] = round(load_seconds, 3)
    results["timing"] = timing
    return results, samples_by_task


def _prepare_scorers(
    r: TaskRun, records: list[dict[str, Any] | None], responses: list[Any | None]
) -> tuple[list[Scorer], dict[str, str]]:
    """Let each scorer batch its work over the whole task; set aside those that cannot run, with their reason."""
    ready: list[Scorer] = []
    unavailable: dict[str, str] = {}
    for scorer in r.task.scorers:
        try:
            scorer.prepare(list(r.data.instances), responses)
        except ScorerUnavailable as exc:
            unavailable[scorer.name] = str(exc)
            print(f"warning: task {r.name}: scorer '{scorer.name}' unavailable: {exc}", file=sys.stderr)
        else:
            ready.append(scorer)
    return ready, unavailable


def _score_task(
    r: TaskRun, seed: int
) -> tuple[dict[str, Metric], list[dict[str, Any]], dict[str, Any], dict[str, str], dict[str, Any]]:
    config = r.task.config
    kind = r.task.kind
    records = [r.store.get(inst.id) if r.store is not None else None for inst in r.data.instances]
    where = str(getattr(r.store, "path", "the saved responses"))
    responses = [
        kind.read_response(rec["response"], f"{where}: instance {inst.id}") if rec else None
        for inst, rec in zip(r.data.instances, records, strict=True)
    ]
    scorers, unavailable = _prepare_scorers(r, records, responses)
    per_scorer: dict[str, list[dict[str, Any]]] = {s.name: [] for s in scorers}
    samples: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    for doc_id, (inst, record, response) in enumerate(zip(r.data.instances, records, responses, strict=True)):
        values: dict[str, Any] = {}
        for scorer in scorers:
            own = kind.for_scorer(response, scorer.name) if response is not None else None
            v = scorer.score(inst, own, derive_rng(seed, config.task, scorer.name, inst.id))
            per_scorer[scorer.name].append(v)
            clash = set(v) & set(values)
            if clash:
                raise HarnessError(f"task {config.task}: scorers report the same value name {sorted(clash)[0]!r}")
            values.update(v)
        sample: dict[str, Any] = {
            "doc_id": doc_id,
            "id": inst.id,
            "doc": inst.inputs(),
            "human": inst.human(),
            "metrics": values,
        }
        for optional in ("target", "meta"):
            value = getattr(inst, optional, None)
            if value:
                sample[optional] = value
        # Keys sorted, as the samples file stores the doc: the hash can be checked from the file alone.
        doc_text = json.dumps(sample["doc"], indent=2, ensure_ascii=False, sort_keys=True, default=str)
        sample["doc_hash"] = lm_eval_hash(doc_text)
        sample["target_hash"] = lm_eval_hash(str(sample.get("target", "")))
        if record is not None:
            sample["seed"] = record["seed"]
            sample["response"] = record["response"]
            arguments = record.get("request") or kind.request_record(
                kind.build(config, inst, record["seed"], r.task.scorers)
            )
            if arguments is not None:
                sample["arguments"] = arguments
                prompt = kind.prompt_text(arguments)
                if prompt is not None:
                    sample["prompt_hash"] = lm_eval_hash(prompt)
            kind.summarize(summary, record["response"])
        samples.append(sample)

    metrics: dict[str, Metric] = {}
    for scorer in scorers:
        agg = scorer.aggregate(per_scorer[scorer.name], derive_rng(seed, config.task, scorer.name, "aggregate"))
        r.metrics_by_scorer[scorer.name] = list(agg)
        clash = set(agg) & set(metrics)
        if clash:
            raise HarnessError(f"task {config.task}: scorers report the same metric {sorted(clash)[0]!r}")
        metrics.update(agg)
    reports: dict[str, Any] = {}
    for scorer in scorers:
        report = scorer.report(list(r.data.instances), [s["metrics"] for s in samples], metrics)
        if report is None:
            continue
        per_instance = report.pop("per_instance", None)
        if per_instance is not None:
            if len(per_instance) != len(samples):
                raise HarnessError(f"task {config.task}: scorer '{scorer.name}' reported on the wrong number of items")
            for sample, entry in zip(samples, per_instance, strict=True):
                sample.setdefault("reports", {})[scorer.name] = entry
        reports[scorer.name] = report
    return metrics, samples, summary, unavailable, reports


def _headline(r: TaskRun, metrics: dict[str, Metric], unavailable: dict[str, str]) -> list[str]:
    """The task's few headline metrics (each scorer's ``headline``), for the short table ``harness run`` prints."""
    names: list[str] = []
    for scorer in r.task.scorers:
        if scorer.name not in unavailable:
            own = r.metrics_by_scorer.get(scorer.name, [])
            names += [m for m in scorer.headline_metrics(own, list(metrics)) if m not in names]
    return names


def _controls(r: TaskRun, metrics: dict[str, Metric], unavailable: dict[str, str]) -> dict[str, str]:
    """Model metric -> the human control metric scored the same way, where the task reported both."""
    pairs: dict[str, str] = {}
    for scorer in r.task.scorers:
        if scorer.name in unavailable:
            continue
        for metric, control in scorer.controls(list(metrics)).items():
            if metric in metrics and control in metrics and metric != control:
                pairs[metric] = control
    return pairs

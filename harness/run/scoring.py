"""Scoring a run: every task's instances scored from their stored responses, aggregated with their intervals, into
the content of ``results.json`` and each task's samples records.

Why its own module: a fresh run, a resumed run and ``harness score`` (a finished run re-scored) all score through
this one path, from records read back from a store or a samples file, with the same seeds; so re-scoring an
unchanged run gives its results exactly.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from dataclasses import replace
from typing import Any

from harness.errors import HarnessError
from harness.executors.task_run import TaskRun
from harness.outputs.results import (
    FORMAT_VERSION,
    PER_TASK_KEYS,
    add_cost,
    git_hash,
    library_versions,
    lm_eval_entries,
    lm_eval_hash,
    metric_record,
)
from harness.run.options import HUMAN_ONLY_LABEL, RunOptions
from harness.scoring.base import Metric, Scorer, ScorerUnavailable
from harness.seeding import derive_rng


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
        agg = _with_levels(
            scorer, scorer.aggregate(per_scorer[scorer.name], derive_rng(seed, config.task, scorer.name, "aggregate"))
        )
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


def _with_levels(scorer: Scorer, metrics: dict[str, Metric]) -> dict[str, Metric]:
    """Every interval with its level: a metric a scorer built with an interval but no ``ci_level`` (a plugin's own
    interval) gets the scorer's ``confidence`` where it has that option, else stays of unknown level."""
    confidence = getattr(scorer, "confidence", None)
    if not isinstance(confidence, float):
        return metrics
    return {
        name: replace(m, ci_level=confidence) if m.ci_low is not None and m.ci_level is None else m
        for name, m in metrics.items()
    }


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

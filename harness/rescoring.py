"""``harness score``: score a finished run's saved outputs again, with the current or with other scorers.

Why it exists: a probe added a year after a run, or a scorer bug fixed, should not cost a model run. The saved
outputs are the ``response`` of each record of ``samples_<task>.jsonl``; the run's ``results.json`` says how they
were produced (task configuration, limit, seed, model). The data set is loaded again through the task's loader,
and its hash must equal the one recorded: the stored responses answer those inputs and no others. Scoring is the
runner's own code path, with the same seeds, so re-scoring an unchanged run gives the original results exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.data import LoadedData, resolve_data_dir
from harness.errors import HarnessError, TaskConfigError
from harness.models import ModelSpec
from harness.plugins import Registry, get_registry
from harness.results import read_jsonl, read_results, samples_path, write_json
from harness.runner import RunOptions, TaskRun, load_task_data, score_and_write
from harness.task_config import TaskConfig, apply_overrides, validate
from harness.task_loading import ResolvedTask, check_against_registry


@dataclass
class SavedResponses:
    """The responses of one task, read from its samples file; answers ``in`` and ``get`` like the response store."""

    records: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __contains__(self, instance_id: str) -> bool:
        return instance_id in self.records

    def get(self, instance_id: str) -> dict[str, Any]:
        return self.records[instance_id]


@dataclass
class SavedRun:
    """A finished run: its ``results.json`` and the samples files beside it."""

    results_path: Path
    results: dict[str, Any]

    @property
    def directory(self) -> Path:
        return self.results_path.parent

    @property
    def human_only(self) -> bool:
        return bool(self.results.get("config", {}).get("human_only"))

    def samples_path(self, task: str) -> Path:
        return samples_path(self.directory, task)


def open_run(target: Path) -> tuple[SavedRun, list[str]]:
    """A run directory (every task) or one ``samples_<task>.jsonl`` (that task); the results file is beside it."""
    if target.is_dir():
        results_path, only = target / "results.json", None
    elif target.is_file() and target.name.startswith("samples_") and target.suffix == ".jsonl":
        results_path, only = target.parent / "results.json", target.name[len("samples_") : -len(".jsonl")]
    else:
        raise HarnessError(f"{target}: expected a run directory (with results.json) or a samples_<task>.jsonl file")
    if not results_path.is_file():
        raise HarnessError(f"{results_path}: not found; re-scoring needs the run's results.json beside its samples")
    results = read_results(results_path)
    run = SavedRun(results_path, results)
    tasks = list(results["configs"])
    if only is not None and only not in tasks:
        raise HarnessError(f"{target}: task '{only}' is not in {results_path} (tasks: {', '.join(tasks)})")
    return run, [only] if only is not None else tasks


def choose_scorers(recorded: list[dict[str, Any]], selection: str | None, where: str) -> list[dict[str, Any]]:
    """The scorer entries to use. ``selection`` is either an exact list (``tvd,entropy``: recorded arguments are
    kept for scorers the run had) or changes to the recorded list (``+lexical_variability,-ece``).

    >>> rec = [{"name": "tvd", "args": {}}, {"name": "ece", "args": {"n_bins": 10}}]
    >>> [s["name"] for s in choose_scorers(rec, "+entropy,-tvd", "t")]
    ['ece', 'entropy']
    >>> choose_scorers(rec, "ece", "t")
    [{'name': 'ece', 'args': {'n_bins': 10}}]
    """
    if not selection:
        return recorded
    items = [s.strip() for s in selection.split(",") if s.strip()]
    by_name = {entry["name"]: entry for entry in recorded}
    signed = [s[0] in "+-" for s in items]
    if any(signed) and not all(signed):
        raise HarnessError(f"--scorers: either names (an exact list) or +name/-name changes, not both: '{selection}'")
    if not all(signed):
        return [by_name.get(name, {"name": name, "args": {}}) for name in items]
    chosen = list(recorded)
    for item in items:
        name = item[1:]
        if item[0] == "+":
            if name in by_name:
                raise HarnessError(f"--scorers: {where} already has scorer '{name}'")
            chosen.append({"name": name, "args": {}})
        else:
            if name not in by_name:
                raise HarnessError(f"--scorers: {where} has no scorer '{name}' to remove (it has {', '.join(by_name)})")
            chosen = [entry for entry in chosen if entry["name"] != name]
    if not chosen:
        raise HarnessError(f"--scorers: no scorer left for {where}")
    return chosen


def _task_config(run: SavedRun, task: str, scorers: str | None, scorer_args: Mapping[str, Any]) -> TaskConfig:
    where = f"{run.results_path}: configs.{task}"
    raw = dict(run.results["configs"][task])
    raw["scorers"] = choose_scorers(list(raw.get("scorers") or []), scorers, f"task {task}")
    if scorer_args:
        raw = apply_overrides(raw, scorer_args, where)
    return validate(raw, where)


def _resolve(run: SavedRun, task: str, config: TaskConfig, registry: Registry) -> ResolvedTask:
    try:
        scorers = check_against_registry(config, registry)
    except TaskConfigError as exc:
        raise HarnessError(f"re-scoring {task}: {exc}") from exc
    _, _, variant = task.partition("@")
    return ResolvedTask(config, registry.kind(config.request), scorers, variant or None)


def _saved_responses(run: SavedRun, task: str, data: LoadedData) -> SavedResponses:
    path = run.samples_path(task)
    if not path.is_file():
        raise HarnessError(f"{path}: not found; the run's samples file holds the outputs to score")
    saved = SavedResponses()
    ids: list[str] = []
    for sample in read_jsonl(path):
        ids.append(str(sample.get("id")))
        if "response" in sample:
            record = {"id": sample["id"], "seed": sample["seed"], "response": sample["response"]}
            saved.records[str(sample["id"])] = record
    expected = [inst.id for inst in data.instances]
    if ids != expected:
        raise HarnessError(
            f"{path}: holds {len(ids)} instances that are not the {len(expected)} the task's loader gives now "
            "(same ids in the same order); the run and the data no longer match"
        )
    missing = [i for i in expected if i not in saved]
    if missing and not run.human_only:
        raise HarnessError(f"{path}: instance {missing[0]} has no response ({len(missing)} without); was the run cut?")
    return saved


def _check_answers(r: TaskRun, saved: SavedResponses) -> None:
    """The saved outputs must serve the scorers chosen now (a scorer added later may need requests never asked)."""
    for inst in r.data.instances:
        if inst.id in saved:
            r.task.kind.check_saved(r.task.config, r.task.scorers, inst, saved.get(inst.id))


def rescore(
    target: Path,
    *,
    output_dir: Path | None = None,
    scorers: str | None = None,
    scorer_args: Mapping[str, Any] | None = None,
    tasks: list[str] | None = None,
    data_dir: str | None = None,
    registry: Registry | None = None,
) -> tuple[dict[str, Any], Path]:
    """Score a saved run again; returns the new ``results.json`` content and where it was written.

    ``output_dir`` defaults to ``<run dir>/rescored`` so the original results are never overwritten.
    """
    registry = registry or get_registry()
    run, chosen = open_run(target)
    if tasks:
        unknown = [t for t in tasks if t not in run.results["configs"]]
        if unknown:
            known = ", ".join(run.results["configs"])
            raise HarnessError(f"--tasks: '{unknown[0]}' is not in {run.results_path} ({known})")
        chosen = [t for t in chosen if t in tasks]
    args = dict(scorer_args or {})
    params = [k for k in args if "." not in k]
    if params:
        raise HarnessError(
            f"--task-args: '{params[0]}' is a request parameter; re-scoring cannot change what the model was asked "
            "(only scorer arguments, scorer.key=value)"
        )
    recorded = run.results["config"]
    limit = recorded.get("limit")
    data_root, _ = resolve_data_dir(data_dir)
    task_runs: list[TaskRun] = []
    for task in chosen:
        config = _task_config(run, task, scorers, args)
        resolved = _resolve(run, task, config, registry)
        data = load_task_data(resolved, registry, data_root, limit)
        if data.data_hash != run.results["task_hashes"].get(task):
            raise HarnessError(
                f"task {task}: the data read now (hash {data.data_hash[:12]}) differs from the run's "
                f"(hash {str(run.results['task_hashes'].get(task))[:12]}); its outputs answer other inputs"
            )
        r = TaskRun(resolved, data)
        saved = _saved_responses(run, task, data)
        if not run.human_only:
            _check_answers(r, saved)
            r.store = saved
        task_runs.append(r)

    model = None
    if not run.human_only:
        model = ModelSpec(
            kind=recorded["model"],
            name=recorded["model_name"],
            args=dict(recorded.get("model_args") or {}),
            device=recorded.get("device") or "auto",
            batch_size=recorded.get("batch_size") or "auto",
        )
    options = RunOptions(
        tasks=chosen,
        model=model,
        task_args={**(recorded.get("task_args") or {}), **args},
        limit=limit,
        seed=int(recorded.get("random_seed", 0)),
    )
    out_dir = output_dir if output_dir is not None else run.directory / "rescored"
    model_info = recorded.get("model_info") or {}
    results = score_and_write(task_runs, options, out_dir, model_info, None)
    results["config"]["rescored_from"] = str(run.results_path)
    write_json(out_dir / "results.json", results)
    return results, out_dir / "results.json"

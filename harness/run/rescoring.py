"""``harness score``: score a finished run's saved outputs again, with the current or with other scorers.

Why it exists: a probe added a year after a run, or a scorer bug fixed, should not cost a model run. The saved
outputs are the ``response`` of each record of ``samples_<task>.jsonl``; the run's ``results.json`` says how they
were produced (task configuration, limit, seed, model). The data set is loaded again through the task's loader,
and its hash must equal the one recorded: the stored responses answer those inputs and no others. Scoring is the
runner's own code path, with the same seeds, so re-scoring an unchanged run gives the original results exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.data.loaders import LoadedData, resolve_data_dir
from harness.data.paths import reading_task_file
from harness.errors import HarnessError, TaskConfigError
from harness.executors.task_run import TaskRun
from harness.files import ensure_output_dir
from harness.models import ModelSpec
from harness.outputs.locking import OutputLock
from harness.outputs.run_dir import MERGED, TaskSource, read_samples, rebuild_merged, task_sources
from harness.registry.manager import Registry, get_registry
from harness.registry.task_loading import ResolvedTask, check_against_registry, require_scorer_extras
from harness.registry.task_validation import validate
from harness.run.options import RunOptions
from harness.run.runner import write_results
from harness.run.scoring import score_runs
from harness.run.task_data import load_task_data
from harness.task_config import TaskConfig, apply_overrides


@dataclass
class SavedResponses:
    """The responses of one task, read from its samples file; answers ``in`` and ``get`` like the response store."""

    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The samples file they were read from (named in errors).
    path: Path | None = None

    def __contains__(self, instance_id: str) -> bool:
        return instance_id in self.records

    def get(self, instance_id: str) -> dict[str, Any]:
        return self.records[instance_id]


def open_run(target: Path) -> list[TaskSource]:
    """The tasks to score: a run folder or its ``results.json`` (every task's latest result), a
    ``results_<date>.json`` (that invocation's tasks) or one samples file (that task)."""
    if target.is_file() and target.name.startswith("samples_") and target.suffix == ".jsonl":
        sources = task_sources(target.parent)
        chosen = [s for s in sources if s.samples_path.resolve() == target.resolve()]
        if not chosen:
            raise HarnessError(f"{target}: no results file in {target.parent} names this samples file")
        return chosen
    if not target.exists():
        raise HarnessError(f"{target}: not found; expected a run folder, a results file or a samples_<task> file")
    return task_sources(target)


def choose_scorers(recorded: list[dict[str, Any]], selection: str | None, where: str) -> list[dict[str, Any]]:
    """The scorer entries to use. ``selection`` is either an exact list (``tvd,entropy``: recorded arguments are
    kept for scorers the run had) or changes to the recorded list (``+sample_size,-ece``).

    >>> rec = [{"name": "tvd", "args": {}}, {"name": "ece", "args": {"n_bins": 10}}]
    >>> [s["name"] for s in choose_scorers(rec, "+entropy,-tvd", "t")]
    ['ece', 'entropy']
    >>> [s["name"] for s in choose_scorers(rec, "+ece", "t")]
    ['tvd', 'ece']
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
            # Adding a scorer the run already has keeps it as recorded: ``+entropy`` means "with entropy".
            if name not in by_name and all(entry["name"] != name for entry in chosen):
                chosen.append({"name": name, "args": {}})
        else:
            if name not in by_name:
                raise HarnessError(f"--scorers: {where} has no scorer '{name}' to remove (it has {', '.join(by_name)})")
            chosen = [entry for entry in chosen if entry["name"] != name]
    if not chosen:
        raise HarnessError(f"--scorers: no scorer left for {where}")
    return chosen


def _task_config(source: TaskSource, scorers: str | None, scorer_args: Mapping[str, Any]) -> TaskConfig:
    task = source.task
    where = f"{source.results_path}: configs.{task}"
    raw = dict(source.results["configs"][task])
    raw["scorers"] = choose_scorers(list(raw.get("scorers") or []), scorers, f"task {task}")
    if scorer_args:
        raw = apply_overrides(raw, scorer_args, where)
    return validate(raw, where)


def _resolve(task: str, config: TaskConfig, registry: Registry) -> ResolvedTask:
    try:
        scorers = check_against_registry(config, registry)
    except TaskConfigError as exc:
        raise HarnessError(f"re-scoring {task}: {exc}") from exc
    _, _, variant = task.partition("@")
    resolved = ResolvedTask(config, registry.kind(config.request), scorers, variant or None)
    require_scorer_extras([resolved])
    return resolved


def _saved_responses(source: TaskSource, data: LoadedData, human_only: bool) -> SavedResponses:
    path = source.samples_path
    saved = SavedResponses(path=path)
    ids: list[str] = []
    for line_no, sample in enumerate(read_samples(source), start=1):
        if "id" not in sample:
            raise HarnessError(f"{path}: record {line_no}: field 'id' missing")
        ids.append(str(sample["id"]))
        if "response" in sample:
            if not isinstance(sample["response"], dict) or not isinstance(sample.get("seed"), int):
                raise HarnessError(f"{path}: record {line_no}: 'response' must be an object and 'seed' an integer")
            record = {"id": sample["id"], "seed": sample["seed"], "response": sample["response"]}
            if isinstance(sample.get("arguments"), dict):
                record["request"] = sample["arguments"]
            saved.records[str(sample["id"])] = record
    expected = [inst.id for inst in data.instances]
    if ids != expected:
        raise HarnessError(
            f"{path}: holds {len(ids)} instances that are not the {len(expected)} the task's loader gives now "
            "(same ids in the same order); the run and the data no longer match"
        )
    missing = [i for i in expected if i not in saved]
    if missing and not human_only:
        raise HarnessError(f"{path}: instance {missing[0]} has no response ({len(missing)} without); was the run cut?")
    return saved


def _check_answers(r: TaskRun, saved: SavedResponses) -> None:
    """The saved outputs must serve the scorers chosen now (a scorer added later may need requests never asked)."""
    for inst in r.data.instances:
        if inst.id in saved:
            try:
                r.task.kind.check_saved(r.task.config, r.task.scorers, inst, saved.get(inst.id))
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise HarnessError(f"task {r.name}: instance {inst.id}: saved response is malformed ({exc!r})") from exc


def run_task_name(name: str, known: Sequence[str], target: Path) -> str:
    """The task of a run that ``--tasks NAME`` means: ``NAME`` itself, or the run's one variant of it.

    A ``generate`` task is stored under its decoding variant (``asset-valid@ancestral``), so the name the user
    ran it by finds it when the run has that one variant; with several (a decoding sweep), the full name is needed.
    """
    if name in known:
        return name
    variants = [task for task in known if task.partition("@")[0] == name and "@" in task]
    if len(variants) == 1:
        return variants[0]
    if variants:
        raise HarnessError(
            f"--tasks: {target} has {len(variants)} variants of '{name}' ({', '.join(variants)}): name one in full"
        )
    raise HarnessError(f"--tasks: '{name}' is not in {target} ({', '.join(known)})")


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
    """Score a saved run again; returns the merged ``results.json`` content of the output folder and its path.

    ``output_dir`` defaults to ``<run folder>/rescored``, so the original results are never touched. Tasks that
    came from different invocations are scored with each invocation's own settings (limit, seed, model) and
    written as separate results files, as the run wrote them.
    """
    registry = registry or get_registry()
    sources = open_run(target)
    if tasks:
        chosen = [run_task_name(t, [s.task for s in sources], target) for t in tasks]
        sources = [s for s in sources if s.task in chosen]
    args = dict(scorer_args or {})
    params = [k for k in args if "." not in k]
    if params:
        raise HarnessError(
            f"--task-args: '{params[0]}' is a request parameter; re-scoring cannot change what the model was asked "
            "(only scorer arguments, scorer.key=value)"
        )
    # Tasks run with the same settings are scored together, as one invocation.
    groups: dict[str, list[TaskSource]] = {}
    for source in sources:
        groups.setdefault(json.dumps(source.run_config, sort_keys=True, default=str), []).append(source)
    run_dir = sources[0].results_path.parent
    out_dir = output_dir if output_dir is not None else run_dir / "rescored"
    # Every task's scorers are built and checked (arguments, extras) before any task's data loads.
    resolved = [
        [_resolve(source.task, _task_config(source, scorers, args), registry) for source in group]
        for group in groups.values()
    ]
    prepared = [
        _prepare_group(group, tasks_of_group, args, data_dir, registry)
        for group, tasks_of_group in zip(groups.values(), resolved, strict=True)
    ]
    ensure_output_dir(out_dir, "--output-dir")
    with OutputLock(out_dir):
        for group, (task_runs, options, model_info, data_root) in zip(groups.values(), prepared, strict=True):
            results, samples = score_runs(task_runs, options, model_info, None)
            results["config"]["data_dir"] = str(data_root.resolve())
            results["config"]["rescored_from"] = str(group[0].results_path)
            write_results(out_dir, results, samples, "the run's own files are untouched")
        merged = rebuild_merged(out_dir)
    return merged, out_dir / MERGED


def _recorded_data_dir(recorded: Mapping[str, Any], given: str | None) -> Path:
    """``--data-dir`` if given, else the folder the run read (when it still exists), else the default."""
    if given is None and isinstance(recorded.get("data_dir"), str) and Path(recorded["data_dir"]).is_dir():
        return Path(recorded["data_dir"])
    return resolve_data_dir(given)[0]


def _prepare_group(
    group: list[TaskSource], tasks: list[ResolvedTask], args: dict[str, Any], data_dir: str | None, registry: Registry
) -> tuple[list[TaskRun], RunOptions, dict[str, Any], Path]:
    """The tasks of one invocation (``tasks``: each source's, resolved), ready to score: data loaded and checked,
    saved responses read."""
    results = group[0].results
    recorded = group[0].run_config
    human_only = bool(recorded.get("human_only"))
    limit = recorded.get("limit")
    data_root = _recorded_data_dir(recorded, data_dir)
    task_runs: list[TaskRun] = []
    for source, resolved in zip(group, tasks, strict=True):
        task = source.task
        # A partial import scored only the instances it had outputs for: the same ones again.
        recorded_source = results.get("data_sources", {}).get(task) or {}
        missing = recorded_source.get("missing") or {}
        # A task file given by path may read data beside it (task: paths); the run recorded where it was.
        with reading_task_file(recorded_source.get("task_file")):
            data = load_task_data(resolved, registry, data_root, limit, uncovered=missing.get("ids") or ())
        if data.data_hash != results["task_hashes"].get(task):
            raise HarnessError(
                f"task {task}: the data read now (hash {data.data_hash[:12]}) differs from the run's "
                f"(hash {str(results['task_hashes'].get(task))[:12]}); its outputs answer other inputs"
            )
        r = TaskRun(resolved, data)
        saved = _saved_responses(source, data, human_only)
        if not human_only:
            _check_answers(r, saved)
            r.store = saved
        task_runs.append(r)
    model = None
    if not human_only:
        for key in ("model", "model_name"):
            if not isinstance(recorded.get(key), str):
                raise HarnessError(f"{group[0].results_path}: field 'config.{key}': expected the model's {key}")
        model = ModelSpec(
            kind=recorded["model"],
            name=recorded["model_name"],
            args=dict(recorded.get("model_args") or {}),
            device=recorded.get("device") or "auto",
            batch_size=recorded.get("batch_size") or "auto",
        )
    options = RunOptions(
        tasks=[s.task for s in group],
        model=model,
        task_args={**(recorded.get("task_args") or {}), **args},
        limit=limit,
        seed=int(recorded.get("random_seed", 0)),
    )
    return task_runs, options, recorded.get("model_info") or {}, data_root

"""The layout of a model's output folder, ``<output-dir>/<model>/``, and how readers find a task's latest result.

Why this layout: a finished result must never be destroyed by a later run. Every ``harness run`` (and every
``harness score``) writes new files named by its start time, as lm-evaluation-harness names them, and never
overwrites one::

    results_2026-11-23T16-05-03.123456.json            one invocation's tasks (lm-eval's results layout)
    samples_provo_2026-11-23T16-05-03.123456.jsonl     one task's per-instance records of that invocation
    results.json                                       every task's LATEST result in this folder, merged

``results.json`` is rebuilt from the timestamped files after each invocation, so running ``--tasks provo`` and
then ``--tasks asset-valid`` into one folder leaves both tasks in it; its ``sources`` say which file each task
came from. Readers (``harness score``, ``harness leaderboard``, ``harness export``) resolve a task through
``sources`` to the file it came from, so a task's run configuration (limit, seed, model arguments) is always the
one it was produced with. Timestamps are UTC. Folders written before this layout (one ``results.json`` and
``samples_<task>.jsonl``) are read as one invocation and kept when a new run is added.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.files import read_json_object, read_jsonl, write_json, write_jsonl
from harness.outputs.results import PER_TASK_KEYS, check_results

MERGED = "results.json"
RESULTS_RE = re.compile(r"^results_(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{6})\.json$")
STAMP_FORMAT = "%Y-%m-%dT%H-%M-%S.%f"


def new_stamp(run_dir: Path, now: dt.datetime | None = None) -> str:
    """lm-eval's file timestamp (``2026-11-23T16-05-03.123456``, UTC), unique in ``run_dir``."""
    moment = now or dt.datetime.now(dt.timezone.utc)
    while True:
        stamp = moment.strftime(STAMP_FORMAT)
        if not (run_dir / f"results_{stamp}.json").exists():
            return stamp
        moment += dt.timedelta(microseconds=1)


def samples_name(task: str, stamp: str | None) -> str:
    """``samples_<task>_<stamp>.jsonl`` (``task`` with its decoding variant, if any); the legacy name without."""
    return f"samples_{task}_{stamp}.jsonl" if stamp else f"samples_{task}.jsonl"


@dataclass(frozen=True)
class TaskSource:
    """One task of a results file: the file, the task's samples file and the settings it was run with."""

    task: str
    results_path: Path
    results: dict[str, Any]

    @property
    def samples_path(self) -> Path:
        return samples_file(self.results_path, self.results, self.task)

    @property
    def run_config(self) -> dict[str, Any]:
        return run_config(self.results, self.task)


def samples_file(results_path: Path, results: Mapping[str, Any], task: str) -> Path:
    """The samples file of ``task`` named by a results file (merged ``sources``, an invocation's
    ``samples_files``, or the legacy ``samples_<task>.jsonl``)."""
    source = (results.get("sources") or {}).get(task)
    if isinstance(source, dict) and isinstance(source.get("samples"), str):
        return results_path.parent / Path(source["samples"]).name
    named = (results.get("samples_files") or {}).get(task)
    if isinstance(named, str):
        return results_path.parent / Path(named).name
    return results_path.parent / samples_name(task, None)


def run_config(results: Mapping[str, Any], task: str) -> dict[str, Any]:
    """The settings ``task`` was run with (model, limit, seed, ...): the invocation's ``config``; in a merged
    ``results.json``, the task's own invocation's (``run_config``)."""
    own = (results.get("run_config") or {}).get(task)
    return dict(own) if isinstance(own, dict) else dict(results["config"])


def write_invocation(
    run_dir: Path, stamp: str, results: dict[str, Any], samples: Mapping[str, list[dict[str, Any]]]
) -> Path:
    """Write one invocation's samples and results files (never over an existing file), then rebuild the merged
    ``results.json``. Returns the timestamped results file."""
    results["samples_files"] = {task: samples_name(task, stamp) for task in samples}
    for task, records in samples.items():
        write_jsonl(run_dir / samples_name(task, stamp), records)
    path = run_dir / f"results_{stamp}.json"
    write_json(path, results)
    try:
        rebuild_merged(run_dir)
    except HarnessError as exc:
        raise HarnessError(f"{exc}; {run_dir / MERGED} not updated, this run's results are in {path}") from exc
    return path


def _invocations(run_dir: Path) -> list[Path]:
    """The timestamped results files of ``run_dir``, oldest first."""
    if not run_dir.is_dir():
        return []
    found = [(m.group(1), p) for p in run_dir.iterdir() if (m := RESULTS_RE.match(p.name))]
    return [p for _, p in sorted(found)]


def _read(path: Path) -> dict[str, Any]:
    results = read_json_object(path, "a results file")
    check_results(results, path)
    return results


def merge(run_dir: Path) -> dict[str, Any]:
    """The latest result of every task in ``run_dir``, as one results file.

    Per-task sections come from the task's latest invocation; ``run_config`` keeps each task's own settings and
    ``sources`` its files; the other top-level keys (``config``, ``date``, versions) are the newest invocation's.
    """
    latest: dict[str, tuple[Path, dict[str, Any]]] = {}
    newest: dict[str, Any] = {}
    for path in _invocations(run_dir):
        newest = _read(path)
        for task in newest["configs"]:
            latest[task] = (path, newest)
    merged: dict[str, Any] = {key: value for key, value in newest.items() if key not in PER_TASK_KEYS}
    merged.pop("samples_files", None)
    for key in (*PER_TASK_KEYS, "run_config", "sources"):
        merged[key] = {}
    for task, (path, results) in latest.items():
        for key in PER_TASK_KEYS:
            section = results.get(key) or {}
            if task in section:
                merged[key][task] = section[task]
        merged["run_config"][task] = results["config"]
        merged["sources"][task] = {"results": path.name, "samples": samples_file(path, results, task).name}
    return merged


def rebuild_merged(run_dir: Path) -> dict[str, Any]:
    """Fold the latest result of every task into ``results.json`` (adopting a pre-timestamp one first)."""
    legacy = run_dir / MERGED
    if legacy.is_file():
        old = read_json_object(legacy, "a results file")
        if "sources" not in old:
            check_results(old, legacy)
            _adopt_legacy(run_dir, old)
    merged = merge(run_dir)
    write_json(run_dir / MERGED, merged)
    return merged


def _adopt_legacy(run_dir: Path, legacy: dict[str, Any]) -> None:
    """Give a pre-timestamp ``results.json`` a timestamped name so that rebuilding the merged file keeps it.

    Its samples files keep their names (``samples_<task>.jsonl``); the adopted file lists them."""
    try:
        moment = dt.datetime.fromisoformat(str(legacy.get("date") or ""))
    except ValueError:
        moment = dt.datetime.fromtimestamp((run_dir / MERGED).stat().st_mtime, dt.timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    stamp = new_stamp(run_dir, moment.astimezone(dt.timezone.utc))
    adopted = {**legacy, "samples_files": {task: samples_name(task, None) for task in legacy["configs"]}}
    write_json(run_dir / f"results_{stamp}.json", adopted)


def task_sources(target: Path) -> list[TaskSource]:
    """Every task a target holds: a run folder (its ``results.json``, or the merge of its timestamped files when
    there is none yet) or any results file (merged or timestamped)."""
    if target.is_dir():
        path = target / MERGED
        if path.is_file():
            results = _read(path)
        elif _invocations(target):
            results = merge(target)
        else:
            raise HarnessError(f"{target}: no results.json or results_<date>.json here; is this a run folder?")
    else:
        path = target
        results = _read(target)
    # A merged file's tasks are read from the invocation that produced each (exact settings and provenance).
    invocations: dict[str, dict[str, Any]] = {}
    out: list[TaskSource] = []
    for task in results["configs"]:
        source = (results.get("sources") or {}).get(task)
        own = path.parent / Path(str(source.get("results"))).name if isinstance(source, dict) else None
        if own is not None and own.is_file() and own != path:
            if own.name not in invocations:
                invocations[own.name] = _read(own)
            if task in invocations[own.name]["configs"]:
                out.append(TaskSource(task, own, invocations[own.name]))
                continue
        out.append(TaskSource(task, path, results))
    return out


def read_samples(source: TaskSource) -> list[dict[str, Any]]:
    path = source.samples_path
    if not path.exists():
        raise HarnessError(f"{path}: not found; {source.results_path} names it for task {source.task}")
    return read_jsonl(path)


def latest_invocation(run_dir: Path) -> Path:
    """The newest timestamped results file of ``run_dir`` (what the last run or re-scoring wrote)."""
    found = _invocations(run_dir)
    return found[-1] if found else run_dir / MERGED

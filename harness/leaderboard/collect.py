"""Fold ``results.json`` files into leaderboard rows: one row per system, one column per task metric.

A system is a model with its arguments, its decoding (a decoding sweep's variant, or a cloze task's sampling
temperature) and, for tasks asked several ways (multiple choice), the scoring method: ``string.prob/acc`` is the
``acc`` column of the ``string.prob`` row. Human-only runs give the human control row: under each model metric's
column it shows the control metric the run paired with it (``results.json``, ``controls``), and its other metrics
under their own names. Results that are not comparable are refused unless the caller allows them, and then every
affected cell says why. Every cell keeps the level of its interval (``ci_level``); a column whose cells were computed
at different levels (``--task-args NAME.confidence=...`` in one run) is merged and marked, not refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.outputs.results import metrics_with_levels
from harness.outputs.run_dir import samples_file, task_sources
from harness.registry.manager import get_registry

HUMAN = "human"
#: Metric prefixes that are reference rows rather than scoring methods of the model.
REFERENCE_METHODS = {"human": HUMAN, "chance": "chance"}


@dataclass
class TaskResult:
    """One task of one results file."""

    source: Path
    results: dict[str, Any]
    key: str

    @property
    def task(self) -> str:
        return self.key.partition("@")[0]

    @property
    def variant(self) -> str | None:
        return self.key.partition("@")[2] or None

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.results["configs"][self.key])

    @property
    def human_only(self) -> bool:
        return bool(self.results["config"].get("human_only"))

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        """The task's metric records, each with the level of its interval (``ci_level``; for a file written before
        results.json recorded it, the level its scorers were configured with)."""
        return metrics_with_levels(self.results, self.key)

    @property
    def samples_path(self) -> Path:
        return samples_file(self.source, self.results, self.key)

    def decoding(self) -> str | None:
        """How the outputs were drawn, as a label shared across request kinds (``ancestral``, ``top_p=0.9``)."""
        if self.human_only:
            return None
        registry = get_registry()
        request = self.config.get("request")
        if request not in registry.kinds:
            return None
        return registry.kind(request).decoding_label(self.config.get("params", {}), self.variant)

    def comparability(self) -> dict[str, Any]:
        """What must agree between two results of one task for their numbers to be compared."""
        params = self.config.get("params", {})
        facts: dict[str, Any] = {
            "task version": self.results.get("versions", {}).get(self.key),
            "data hash": self.results.get("task_hashes", {}).get(self.key),
            "instances": self.results.get("n-samples", {}).get(self.key, {}).get("effective"),
        }
        if not self.human_only and "n_samples" in params:
            facts["samples per input"] = params["n_samples"]
        return facts


@dataclass
class System:
    """A leaderboard row."""

    kind: str  # "model", "human" or "chance"
    model: str | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    decoding: str | None = None
    method: str | None = None
    metrics: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    mixed: dict[str, list[str]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.kind != "model":
            return self.kind
        parts = [str(self.model)]
        if self.decoding:
            parts.append(self.decoding)
        if self.method:
            parts.append(self.method)
        return " · ".join(parts)

    @property
    def key(self) -> str:
        return json.dumps([self.kind, self.model, self.model_args, self.decoding, self.method], sort_keys=True)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "kind": self.kind}
        if self.kind == "model":
            out.update(model=self.model, model_args=self.model_args, decoding=self.decoding, method=self.method)
        out.update(metrics=self.metrics, sources=self.sources)
        if self.mixed:
            out["mixed"] = self.mixed
        return out


def read_results(paths: list[Path]) -> list[TaskResult]:
    entries: list[TaskResult] = []
    for path in paths:
        entries.extend(TaskResult(s.results_path, s.results, s.task) for s in task_sources(path))
    if not entries:
        raise HarnessError("no task results in the given files")
    return entries


#: Files named per value in a "not comparable" message; more are counted, so the message stays one short line.
SHOWN_FILES = 2


def _files(sources: list[str]) -> str:
    """``a.json`` / ``a.json, b.json`` / ``a.json, b.json and 2 more files``."""
    shown = ", ".join(sources[:SHOWN_FILES])
    more = len(sources) - SHOWN_FILES
    return f"{shown} and {more} more file{'s' if more > 1 else ''}" if more > 0 else shown


def _differs(task: str, name: str, by_value: dict[str, list[str]], common: str) -> str:
    """``task T: N differs: 10 in a.json; 20 in the other 2 files (b.json, c.json)``: each differing value with the
    files that have it, each file once (a results file holds one entry per decoding variant of a task, all alike),
    then the value most files share."""
    odd = [f"{json.loads(value)} in {_files(files)}" for value, files in by_value.items() if value != common]
    others = by_value[common]
    where = f"the other {len(others)} files" if len(others) > 1 else "the other file"
    return f"task {task}: {name} differs: {'; '.join(odd)}; {json.loads(common)} in {where} ({_files(others)})"


def check_comparable(entries: list[TaskResult], allow_mixed: bool) -> dict[tuple[str, str], list[str]]:
    """Per (task, source): why it differs from the task's other results. Raises unless ``allow_mixed``."""
    problems: dict[tuple[str, str], list[str]] = {}
    by_task: dict[str, list[TaskResult]] = {}
    for entry in entries:
        by_task.setdefault(entry.task, []).append(entry)
    messages: list[str] = []
    for task, group in by_task.items():
        facts = [e.comparability() for e in group]
        for name in sorted({k for f in facts for k in f}):
            by_value: dict[str, list[str]] = {}
            for entry, fact in zip(group, facts, strict=True):
                if name in fact:
                    files = by_value.setdefault(json.dumps(fact[name]), [])
                    if str(entry.source) not in files:
                        files.append(str(entry.source))
            if len(by_value) < 2:
                continue
            # The value most files share is the reference; on a tie, the one seen first.
            common = max(by_value, key=lambda value: len(by_value[value]))
            messages.append(_differs(task, name, by_value, common))
            for value, files in by_value.items():
                if value == common:
                    continue
                for source in files:
                    why = f"{name} {json.loads(value)}, others {json.loads(common)}"
                    listed = problems.setdefault((task, source), [])
                    if why not in listed:
                        listed.append(why)
    if messages and not allow_mixed:
        raise HarnessError(
            f"results are not comparable: {messages[0]}"
            + (f" (and {len(messages) - 1} more)" if len(messages) > 1 else "")
            + "; pass --allow-mixed to merge them anyway, marked in the leaderboard"
        )
    return problems


def split_metric(name: str) -> tuple[str | None, str]:
    """``string.prob/acc/Irony`` -> (``string.prob``, ``acc/Irony``); ``tvd`` -> (None, ``tvd``)."""
    method, sep, rest = name.partition("/")
    return (method, rest) if sep else (None, name)


def control_pairs(entries: list[TaskResult]) -> dict[str, dict[str, str]]:
    """Per task: model metric -> human control metric, from every model result of the task."""
    pairs: dict[str, dict[str, str]] = {}
    for entry in entries:
        if not entry.human_only:
            pairs.setdefault(entry.task, {}).update(entry.results.get("controls", {}).get(entry.key, {}))
    return pairs


def build_systems(entries: list[TaskResult], problems: dict[tuple[str, str], list[str]]) -> list[System]:
    """The rows: every model system, then the reference rows (human control, chance)."""
    systems: dict[str, System] = {}
    controls = control_pairs(entries)
    human_side: dict[str, set[str]] = {}
    for entry in entries:
        if entry.human_only:
            human_side.setdefault(entry.task, set()).update(entry.metrics)
    for task, pairs in controls.items():
        human_side.setdefault(task, set()).update(pairs.values())

    def row(kind: str, entry: TaskResult | None = None, method: str | None = None) -> System:
        probe = System(kind)
        if kind == "model" and entry is not None:
            config = entry.results["config"]
            probe = System(
                kind,
                model=f"{config['model']}:{config['model_name']}",
                model_args=dict(config.get("model_args") or {}),
                decoding=entry.decoding(),
                method=method,
            )
        return systems.setdefault(probe.key, probe)

    def put(system: System, entry: TaskResult, column: str, record: dict[str, Any]) -> None:
        cells = system.metrics.setdefault(entry.task, {})
        source = system.sources.get(entry.task)
        if system.kind != "model" and source is not None and source != str(entry.source):
            return  # reference rows depend on the data only: every run of the task has the same numbers
        if column in cells and source != str(entry.source):
            raise HarnessError(
                f"task {entry.task}: system '{system.label}' appears in both {source} and {entry.source}; "
                "give each run once"
            )
        cells[column] = record
        system.sources[entry.task] = str(entry.source)
        why = problems.get((entry.task, str(entry.source)))
        if why:
            system.mixed[entry.task] = why

    human_sources = {e.task for e in entries if e.human_only}
    for entry in entries:
        if entry.human_only:
            continue
        for name, record in entry.metrics.items():
            method, column = split_metric(name)
            if name in human_side.get(entry.task, set()) or method in REFERENCE_METHODS:
                if method in REFERENCE_METHODS and entry.task not in human_sources:
                    put(row(REFERENCE_METHODS[method]), entry, column, record)
                continue
            put(row("model", entry, method), entry, name if method is None else column, record)
    # The human row: the human-only run's numbers, each control under the column of the metric it controls.
    for entry in entries:
        if entry.human_only:
            reverse: dict[str, list[str]] = {}
            for metric, control in controls.get(entry.task, {}).items():
                column = split_metric(metric)[1]
                reverse.setdefault(control, [])
                if column not in reverse[control]:
                    reverse[control].append(column)
            for name, record in entry.metrics.items():
                method, column = split_metric(name)
                target = REFERENCE_METHODS.get(method or "", HUMAN)
                for col in reverse.get(name, []) or [column]:
                    put(row(target), entry, col, record)
    # A task without a human-only run: the controls its model runs reported (the same data, the same numbers).
    for entry in entries:
        if entry.human_only or entry.task in human_sources:
            continue
        for metric, control in controls.get(entry.task, {}).items():
            if control in entry.metrics and metric in entry.metrics:
                put(row(HUMAN), entry, split_metric(metric)[1], entry.metrics[control])
    order = {"model": 0, HUMAN: 1, "chance": 2}
    return sorted(systems.values(), key=lambda s: (order[s.kind], s.label))

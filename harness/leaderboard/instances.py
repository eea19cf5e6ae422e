"""Per-instance data for the leaderboard's plots and its instance view, read from the runs' samples files.

The page lets a reader pick a context and see the human and model distributions (cloze), productions
(generation) or option choices (multiple choice); the plots need each instance's value of a task's headline metric
for every system and for the human control. Both come from ``samples_<task>.jsonl`` beside each results file.
"""

from __future__ import annotations

import math
from typing import Any

from harness.files import read_jsonl
from harness.leaderboard.collect import TaskResult, control_pairs, split_metric
from harness.registry.manager import get_registry


def _number(value: Any) -> float | None:
    """A per-instance value: a number, or the mean of a list of numbers (a metric computed per split)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, list) and value and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        finite = [float(v) for v in value if math.isfinite(v)]
        return sum(finite) / len(finite) if finite else None
    return None


def per_instance(metrics: dict[str, Any], name: str) -> float | None:
    """The value of metric ``name`` in one sample's ``metrics`` (``string.prob/tvd`` looks in ``string.prob``)."""
    if name in metrics:
        return _number(metrics[name])
    method, rest = split_metric(name)
    if method is not None and isinstance(metrics.get(method), dict):
        return _number(metrics[method].get(rest))
    return None


def _read(entry: TaskResult) -> list[dict[str, Any]]:
    return read_jsonl(entry.samples_path) if entry.samples_path.is_file() else []


def _item_text(doc: dict[str, Any]) -> str:
    if "context" in doc:
        return str(doc["context"])
    if "turns" in doc:
        return "\n".join(str(t) for t in doc["turns"])
    if "scenario" in doc:
        return str(doc["scenario"])
    return str(doc.get("source", ""))


def collect_instances(entries: list[TaskResult], board: dict[str, Any]) -> dict[str, Any]:
    """``{task: {kind, items, systems: {label: [view per item]}, values: {column: {label: [value per item]}}}}``."""
    controls = control_pairs(entries)
    out: dict[str, Any] = {}
    registry = get_registry()
    for task, info in board["tasks"].items():
        request_kind = registry.kind(info["request"]) if info["request"] in registry.kinds else None
        kind = request_kind.view if request_kind is not None else "other"
        # Columns with a human control, and every W1 distance (a task without a control still gets its figure).
        columns = [
            c
            for c, meta in info["columns"].items()
            if not meta["group"] and (meta["human_control"] or c.endswith("_w1_mh"))
        ]
        task_entries = [e for e in entries if e.task == task]
        view: dict[str, Any] = {"kind": kind, "items": [], "systems": {}, "values": {c: {} for c in columns}}
        human_entry = next((e for e in task_entries if e.human_only), None)
        reference = human_entry or next((e for e in task_entries if not e.human_only), None)
        reference_samples = _read(reference) if reference else []
        for sample in reference_samples:
            doc = sample.get("doc", {})
            item: dict[str, Any] = {"id": sample.get("id"), "text": _item_text(doc)}
            if kind == "choice":
                item["options"] = list(doc.get("options", []))
                item["target"] = sample.get("target")
            view["items"].append(item)
        if reference_samples:
            view["systems"]["human"] = [request_kind.human_view(s) if request_kind else None for s in reference_samples]
            # The human control of each column, per instance, under the control metric the runs paired with it.
            for metric, control in controls.get(task, {}).items():
                column = split_metric(metric)[1]
                if column in view["values"]:
                    view["values"][column]["human"] = [per_instance(s["metrics"], control) for s in reference_samples]
        for system in board["systems"]:
            if system["kind"] != "model" or task not in system["sources"]:
                continue
            entry = next(
                (
                    e
                    for e in task_entries
                    if not e.human_only
                    and str(e.source) == system["sources"][task]
                    and e.decoding() == system["decoding"]
                ),
                None,
            )
            if entry is None:
                continue
            samples = _read(entry)
            if [s.get("id") for s in samples] != [item["id"] for item in view["items"]]:
                continue  # a run over other instances (allowed with --allow-mixed): no instance view for it
            method = system["method"]
            view["systems"][system["label"]] = [
                request_kind.model_view(s, method) if request_kind else None for s in samples
            ]
            for column in columns:
                name = f"{method}/{column}" if method else column
                view["values"][column][system["label"]] = [per_instance(s["metrics"], name) for s in samples]
        out[task] = view
    return out

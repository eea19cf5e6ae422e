"""Per-instance data for the leaderboard's plots and its instance view, read from the runs' samples files.

The page lets a reader pick a context and see the human and model distributions (cloze), productions
(generation) or option choices (multiple choice); the plots need each instance's value of a task's headline metric
for every system and for the human control. Both come from ``samples_<task>.jsonl`` beside each results file.
"""

from __future__ import annotations

import math
from typing import Any

from harness.leaderboard.collect import TaskResult, control_pairs, split_metric
from harness.results import read_jsonl

#: Words kept per context and side for the bar charts (the papers show the 15 most probable).
TOP_WORDS = 15
#: Model outputs kept per instance for the generation view.
MAX_TEXTS = 20
KINDS = {"sample_words": "cloze", "generate": "generation", "multiple_choice": "choice"}


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


def _top(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values())
    if not total:
        return {}
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_WORDS]
    return {word: round(count / total, 5) for word, count in ranked}


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


def _human_view(kind: str, sample: dict[str, Any]) -> Any:
    human = sample.get("human", {})
    if kind == "cloze":
        return _top(human.get("counts", {}))
    if kind == "generation":
        return list(human.get("references", []))
    if kind == "choice":
        counts = list(human.get("counts", []))
        total = sum(counts) or 1
        return [round(c / total, 5) for c in counts]
    return None


def _model_view(kind: str, sample: dict[str, Any], method: str | None) -> Any:
    response = sample.get("response") or {}
    if kind == "cloze":
        return _top(response.get("counts", {}))
    if kind == "generation":
        return list(response.get("texts", []))[:MAX_TEXTS]
    if kind == "choice" and method is not None:
        row = sample.get("metrics", {}).get(method)
        if isinstance(row, dict) and isinstance(row.get("p"), list):
            return [round(float(p), 5) for p in row["p"]]
    return None


def collect_instances(entries: list[TaskResult], board: dict[str, Any]) -> dict[str, Any]:
    """``{task: {kind, items, systems: {label: [view per item]}, values: {column: {label: [value per item]}}}}``."""
    controls = control_pairs(entries)
    out: dict[str, Any] = {}
    for task, info in board["tasks"].items():
        kind = KINDS.get(info["request"], "other")
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
            view["systems"]["human"] = [_human_view(kind, s) for s in reference_samples]
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
            view["systems"][system["label"]] = [_model_view(kind, s, method) for s in samples]
            for column in columns:
                name = f"{method}/{column}" if method else column
                view["values"][column][system["label"]] = [per_instance(s["metrics"], name) for s in samples]
        out[task] = view
    return out

"""``mcq_robustness``: how much the conclusions about a model move with the way it is asked.

It reads every system (method and score) that the task's other multiple-choice scorers produced and reports,
in ``results.json`` under ``reports`` and as a table in the CLI output:

- ``spread``: for accuracy, TVD to humans and the two fit measures, the range and standard deviation across
  systems, with the best and the worst system;
- ``kendall_tau``: for every pair of systems, Kendall's tau-b between their item-level predictions (the
  model's probability of the target option, per item), with the number of items;
- ``winners``: per phenomenon, the system with the highest accuracy, the lowest TVD and the best fit per choice
  (ties all listed), beside the human accuracy;
- ``references``: the human row (accuracy, split-half control) and the chance row (uniform choices), which the
  CLI table prints under the systems;
- per item (in ``samples_<task>.jsonl``, ``reports``): the range of the target probability across systems and
  how many systems put the target first in most orders.

It needs no queries of its own; list it after the methods in the task file.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, ClassVar

import numpy as np
from scipy.stats import kendalltau

from harness.api import ChoiceInstance, Instance, Metric, Options, Scorer
from harness.scorers.choice.common import SYSTEM_KEYS

#: Measures compared across systems, with their direction (True: higher is better).
MEASURES: dict[str, bool] = {"acc": True, "tvd": False, "logprob_per_choice": True, "ll_binomial": True}


def find_systems(values: list[dict[str, Any]]) -> list[str]:
    """Systems in the order they first appear in the per-item values."""
    names: list[str] = []
    for row in values:
        for key, value in row.items():
            if isinstance(value, dict) and SYSTEM_KEYS - {"scores"} <= set(value) and key not in names:
                names.append(key)
    return names


def _best(systems: list[str], scores: list[float], higher: bool) -> list[str]:
    finite = [s for s in scores if math.isfinite(s)]
    if not finite:
        return []
    best = max(finite) if higher else min(finite)
    return [name for name, s in zip(systems, scores, strict=True) if s == best]


class RobustnessScorer(Scorer):
    name: ClassVar[str] = "mcq_robustness"
    headline: ClassVar[tuple[str, ...] | None] = ()
    request_kinds: ClassVar[frozenset[str]] = frozenset({"multiple_choice"})
    #: No arguments: it reads the other scorers' values and metrics (an argument given to it is a typo).
    options: ClassVar[Options] = Options()

    def __init__(self, **args: Any) -> None:
        super().__init__(**self.options.parse_arguments(args, f"scorer '{self.name}'"))

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        return {}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        return {}

    def report(
        self, instances: list[Instance], values: list[dict[str, Any]], metrics: dict[str, Metric]
    ) -> dict[str, Any] | None:
        systems = find_systems(values)
        if not systems:
            return None
        items = [i for i in instances if isinstance(i, ChoiceInstance)]
        phenomena = list(dict.fromkeys(i.phenomenon for i in items))

        def value(name: str) -> float:
            metric = metrics.get(name)
            return float(metric.value) if metric is not None else float("nan")

        spread: dict[str, Any] = {}
        for measure, higher in MEASURES.items():
            scores = [value(f"{s}/{measure}") for s in systems]
            finite = [x for x in scores if math.isfinite(x)]
            if not finite:
                continue
            spread[measure] = {
                "min": min(finite),
                "max": max(finite),
                "range": max(finite) - min(finite),
                "sd": float(np.std(finite, ddof=1)) if len(finite) > 1 else 0.0,
                "best": _best(systems, scores, higher),
                "worst": _best(systems, scores, not higher),
                "by_system": dict(zip(systems, scores, strict=True)),
            }

        p_target = {s: [row.get(s, {}).get("p_target") for row in values] for s in systems}
        taus: dict[str, dict[str, Any]] = {}
        for a, b in itertools.combinations(systems, 2):
            pairs = [(x, y) for x, y in zip(p_target[a], p_target[b], strict=True) if x is not None and y is not None]
            tau = float("nan")
            if len(pairs) > 1:
                result = kendalltau([x for x, _ in pairs], [y for _, y in pairs])
                tau = float(result.statistic)
            taus[f"{a}|{b}"] = {"tau": None if math.isnan(tau) else tau, "n": len(pairs)}

        winners: dict[str, Any] = {}
        for phenomenon in phenomena:
            entry: dict[str, Any] = {"human_acc": value(f"human/acc/{phenomenon}")}
            for measure, higher in (("acc", True), ("tvd", False), ("logprob_per_choice", True)):
                scores = [value(f"{s}/{measure}/{phenomenon}") for s in systems]
                best = _best(systems, scores, higher)
                entry[measure] = {"systems": best, "value": scores[systems.index(best[0])] if best else None}
            winners[phenomenon] = entry

        per_item = []
        for row in values:
            targets = [row[s]["p_target"] for s in systems if s in row and row[s]["p_target"] is not None]
            per_item.append(
                {
                    "p_target_range": float(max(targets) - min(targets)) if targets else None,
                    "n_systems_target_first": sum(
                        1 for s in systems if s in row and row[s]["acc"] is not None and row[s]["acc"] > 0.5
                    ),
                    "n_systems": len(targets),
                }
            )
        references = {
            name: value(name)
            for name in (
                "human/acc",
                "human/control_tvd",
                "human/control_logprob_per_choice",
                "chance/acc",
                "chance/tvd",
                "chance/logprob_per_choice",
            )
            if name in metrics
        }
        report: dict[str, Any] = {
            "systems": systems,
            "spread": spread,
            "kendall_tau": taus,
            "winners": winners,
            "references": references,
        }
        report["text"] = format_report(report)
        report["per_instance"] = per_item
        return report


def _fmt(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.3f}"


def format_report(report: dict[str, Any]) -> str:
    """The robustness report as plain-text tables for the CLI."""
    systems: list[str] = report["systems"]
    spread = report["spread"]
    lines = ["robustness across ways of asking", ""]
    header = ["system", *spread]
    rows = [[s, *(_fmt(spread[m]["by_system"][s]) for m in spread)] for s in systems]
    references = report.get("references", {})
    for who in ("human", "chance"):
        cells = [references.get(f"{who}/{m}", references.get(f"{who}/control_{m}")) for m in spread]
        if any(c is not None for c in cells):
            label = "human (control: half vs half)" if who == "human" else "chance (uniform)"
            rows.append([label, *(_fmt(c) for c in cells)])
    rows.append(["range", *(_fmt(spread[m]["range"]) for m in spread)])
    rows.append(["sd", *(_fmt(spread[m]["sd"]) for m in spread)])
    lines += _table(header, rows)
    taus = [v["tau"] for v in report["kendall_tau"].values() if v["tau"] is not None]
    if taus:
        lines += [
            "",
            f"Kendall's tau of item-level target probabilities over {len(taus)} system pairs: "
            f"median {np.median(taus):.3f}, min {min(taus):.3f}, max {max(taus):.3f}",
        ]
    lines.append("")
    rows = []
    for phenomenon, entry in report["winners"].items():
        rows.append(
            [
                phenomenon,
                _fmt(entry["human_acc"]),
                f"{'/'.join(entry['acc']['systems'][:2])} ({_fmt(entry['acc']['value'])})",
                f"{'/'.join(entry['tvd']['systems'][:2])} ({_fmt(entry['tvd']['value'])})",
            ]
        )
    lines += _table(["phenomenon", "human acc", "best acc", "lowest tvd"], rows)
    return "\n".join(lines)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out

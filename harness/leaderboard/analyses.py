"""The next-word study's further analyses on the leaderboard: the reports of the ``sample_size``, ``replacement``
and ``gap_predictors`` scorers, collected per task and model, and drawn as figures.

Why apart from ``plots.py``: those figures come from the per-instance values every run has; these come from
reports that only runs scored with the analysis scorers have (``harness score RUN --scorers +sample_size,...``),
one curve or coefficient table per model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness.leaderboard.collect import System, TaskResult
from harness.leaderboard.plots import file_slug, intervals_label, save_figure
from harness.outputs.results import DEFAULT_CI_LEVEL, level_text

#: The scorers whose reports the leaderboard keeps and draws.
ANALYSIS_REPORTS = ("sample_size", "replacement", "gap_predictors")


def collect_analyses(entries: list[TaskResult]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{task: {model label: {scorer: report}}}`` for the model runs that carry an analysis report."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in entries:
        if entry.human_only:
            continue
        reports = entry.results.get("reports", {}).get(entry.key, {})
        found = {name: reports[name] for name in ANALYSIS_REPORTS if isinstance(reports.get(name), dict)}
        if not found:
            continue
        config = entry.results["config"]
        row = System("model", model=f"{config['model']}:{config['model_name']}", decoding=entry.decoding())
        out.setdefault(entry.task, {})[row.label] = found  # the label of the model's leaderboard row
    return out


def sample_size_plot(task: str, by_model: dict[str, dict[str, Any]], path: Path) -> bool:
    """Error of the TVD against the number of samples (log scale), one line per model with its interval."""
    import matplotlib.pyplot as plt

    curves = {label: r["sample_size"]["curve"] for label, r in by_model.items() if "sample_size" in r}
    if not curves:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, curve in curves.items():
        n = [p["n"] for p in curve]
        ax.plot(n, [p["abs_error"] for p in curve], marker="o", label=label)
        low = [p["abs_error_ci"][0] for p in curve]
        high = [p["abs_error_ci"][1] for p in curve]
        if all(v is not None for v in low + high):
            ax.fill_between(n, low, high, alpha=0.2)
    ax.set_xscale("log")
    ax.set_xlabel("model samples per context")
    ax.set_ylabel("mean |TVD - all-samples TVD|")
    levels = [r["sample_size"].get("ci_level", DEFAULT_CI_LEVEL) for r in by_model.values() if "sample_size" in r]
    ax.set_title(f"{task}: how many samples are enough ({intervals_label(levels)})")
    ax.legend(fontsize=8)
    save_figure(fig, path)
    return True


def replacement_plot(task: str, by_model: dict[str, dict[str, Any]], path: Path) -> bool:
    """Mean mixed TVD against the share of contexts replaced by a human group, one panel per group size; the
    points where the mixed TVDs match the humans' (KS test) are filled."""
    import matplotlib.pyplot as plt

    reports = {label: r["replacement"] for label, r in by_model.items() if "replacement" in r}
    sizes = sorted({int(m) for r in reports.values() for m in r.get("curves", {})})
    if not sizes:
        return False
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4), squeeze=False)
    for ax, m in zip(axes[0], sizes, strict=True):
        for label, report in reports.items():
            curve = report["curves"].get(str(m))
            if curve is None:
                continue
            points = curve["points"]
            k = [p["k"] for p in points]
            (line,) = ax.plot(k, [p["tvd"] for p in points], label=label)
            matched = [(p["k"], p["tvd"]) for p in points if p["share_matching"] >= 0.5]
            if matched:
                ax.scatter(*zip(*matched, strict=True), color=line.get_color(), zorder=3)
        ax.set_xlabel("% of contexts replaced by a human group")
        ax.set_ylabel("mean TVD to another group")
        ax.set_title(f"groups of {m} (filled: most seeds match the humans)", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"{task}: the k% replacement experiment", fontsize=10)
    save_figure(fig, path)
    return True


def gap_predictors_plot(task: str, label: str, report: dict[str, Any], path: Path) -> bool:
    """The ARD coefficients with their credible intervals (at the report's ``ci_level``, 95% in reports written
    before it was recorded); pruned features shown at 0 in grey."""
    import matplotlib.pyplot as plt

    coefficients = report.get("coefficients") or []
    if not coefficients:
        return False
    names = [c["feature"] for c in coefficients]
    values = np.array([c["coef"] for c in coefficients])
    errors = np.array([[c["coef"] - c["ci"][0] for c in coefficients], [c["ci"][1] - c["coef"] for c in coefficients]])
    colours = ["#999999" if c["pruned"] else "#3b75af" for c in coefficients]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(names) + 1.5))
    ax.barh(names, values, xerr=errors, color=colours)
    pruned = [name for name, c in zip(names, coefficients, strict=True) if c["pruned"]]
    if pruned:
        ax.scatter([0.0] * len(pruned), pruned, marker="x", color="#999999", zorder=3)
    ax.axvline(0, color="#222222", linewidth=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("change in TVD (continuous features: per standard deviation)")
    level = level_text(report.get("ci_level", DEFAULT_CI_LEVEL))
    title = f"{task}, {label}: predictors of the gap (R^2 {report['r2']:.2f}; {level} intervals; grey: pruned)"
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=8)
    save_figure(fig, path)
    return True


def write_analysis_plots(board: dict[str, Any], folder: Path) -> dict[str, list[str]]:
    """Every analysis figure the board's reports allow; per task, their paths relative to the board's folder."""
    by_task: dict[str, list[str]] = {}
    for task, by_model in board.get("analyses", {}).items():
        written = by_task.setdefault(task, [])
        path = folder / f"{file_slug(task)}-sample-size.png"
        if sample_size_plot(task, by_model, path):
            written.append(f"plots/{path.name}")
        path = folder / f"{file_slug(task)}-replacement.png"
        if replacement_plot(task, by_model, path):
            written.append(f"plots/{path.name}")
        for label, reports in by_model.items():
            if "gap_predictors" in reports:
                path = folder / f"{file_slug(task)}-gap-predictors-{file_slug(label)}.png"
                if gap_predictors_plot(task, label, reports["gap_predictors"], path):
                    written.append(f"plots/{path.name}")
    return by_task

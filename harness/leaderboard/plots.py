"""The leaderboard's figures as PNG files (matplotlib), for papers and for the HTML page.

The papers argue with pictures: the density of per-context TVD for each model against the human control, bar
charts of the 15 most probable next words for people and for the model in single contexts, and distributions of
Wasserstein distances per probe and decoder. Each is drawn from the per-instance values of the runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from harness.outputs.results import level_text

#: Contexts drawn in the PNG bar charts (the page shows any context).
BAR_CONTEXTS = 6
HUMAN_COLOUR = "#222222"


def file_slug(text: str) -> str:
    """A task or system label as a file name part; every figure's name is built with it (``analyses`` too)."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_")


def _finite(values: list[float | None]) -> np.ndarray:
    return np.array([v for v in values if v is not None], dtype=float)


def _density(ax: Any, values: np.ndarray, label: str, colour: str | None) -> None:
    from scipy.stats import gaussian_kde

    lo, hi = float(values.min()), float(values.max())
    if values.size >= 3 and hi > lo:
        grid = np.linspace(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), 256)
        ax.plot(grid, gaussian_kde(values)(grid), label=f"{label} (n={values.size})", color=colour)
    else:
        ax.hist(values, bins=10, histtype="step", density=True, label=f"{label} (n={values.size})", color=colour)


def save_figure(fig: Any, path: Path, dpi: int = 100) -> None:
    """Write and close a figure, laid out the same way for every figure of the board (``analyses`` too)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def density_plot(task: str, column: str, series: dict[str, list[float | None]], path: Path) -> bool:
    import matplotlib.pyplot as plt

    drawn = {label: _finite(values) for label, values in series.items()}
    drawn = {label: v for label, v in drawn.items() if v.size}
    if not drawn:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, values in drawn.items():
        _density(ax, values, "human control" if label == "human" else label, HUMAN_COLOUR if label == "human" else None)
    ax.set_xlabel(f"{column} per instance")
    ax.set_ylabel("density")
    ax.set_title(f"{task}: {column}, model systems against the human control")
    ax.legend(fontsize=8)
    save_figure(fig, path, dpi=110)
    return True


def top_words_plot(task: str, label: str, view: dict[str, Any], path: Path) -> bool:
    """Per context: the 15 most probable words for people and for one model system, side by side."""
    import matplotlib.pyplot as plt

    human, model = view["systems"].get("human"), view["systems"].get(label)
    if not human or not model:
        return False
    n = min(BAR_CONTEXTS, len(view["items"]))
    fig, axes = plt.subplots(n, 2, figsize=(10, 2.6 * n), squeeze=False)
    for i in range(n):
        for j, (who, dist) in enumerate((("people", human[i]), (label, model[i]))):
            ax = axes[i][j]
            words = list(dist or {})[::-1]
            ax.barh(words, [dist[w] for w in words], color=HUMAN_COLOUR if j == 0 else "#3b75af")
            ax.tick_params(labelsize=7)
            ax.set_xlim(0, 1)
            context = view["items"][i]["text"]
            short = context if len(context) <= 60 else "…" + context[-59:]
            ax.set_title(f"{who}: {short}", fontsize=8)
    fig.suptitle(f"{task}: the 15 most probable next words", fontsize=10)
    save_figure(fig, path)
    return True


def wasserstein_plot(task: str, view: dict[str, Any], path: Path) -> bool:
    """Per probe measure: the per-input W1(model, human) of every system (decoder) beside the human control."""
    import matplotlib.pyplot as plt

    columns = [c for c in view["values"] if c.endswith("_w1_mh") and "paper" not in c]
    columns = [c for c in columns if any(_finite(v).size for v in view["values"][c].values())]
    if not columns:
        return False
    fig, axes = plt.subplots(1, len(columns), figsize=(3.2 * len(columns), 4.2), squeeze=False)
    for ax, column in zip(axes[0], columns, strict=True):
        series = {k: _finite(v) for k, v in view["values"][column].items()}
        series = {("human control" if k == "human" else k): v for k, v in series.items() if v.size}
        ax.boxplot(list(series.values()), tick_labels=list(series), showmeans=True)
        ax.set_title(column.removesuffix("_w1_mh"), fontsize=9)
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        ax.set_ylabel("W1 per input" if column == columns[0] else "")
    fig.suptitle(f"{task}: Wasserstein-1 distance to human variability, per probe and decoder", fontsize=10)
    save_figure(fig, path)
    return True


def intervals_label(levels: list[float | None]) -> str:
    """``90% intervals``, or ``intervals at 90%, 95%`` when a figure's intervals differ in level."""
    distinct = sorted(set(levels), key=lambda level: (level is None, level or 0.0))
    if len(distinct) == 1:
        return f"{level_text(distinct[0])} intervals"
    return "intervals at " + ", ".join(level_text(level) for level in distinct) if distinct else "no intervals"


def methods_plot(task: str, board: dict[str, Any], path: Path) -> bool:
    """Multiple choice: accuracy and TVD of every way of asking, with the human control as a line."""
    import matplotlib.pyplot as plt

    rows = [s for s in board["systems"] if task in s["metrics"] and s["kind"] == "model"]
    human = next((s for s in board["systems"] if s["kind"] == "human" and task in s["metrics"]), None)
    keys = [k for k in ("acc", "tvd") if any(k in s["metrics"][task] for s in rows)]
    if not rows or not keys:
        return False
    fig, axes = plt.subplots(1, len(keys), figsize=(6 * len(keys), 0.35 * len(rows) + 1.5), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        shown = [s for s in rows if key in s["metrics"][task]]
        values = [s["metrics"][task][key]["value"] for s in shown]
        errors = [s["metrics"][task][key].get("ci") for s in shown]
        xerr = np.array([[v - (c[0] if c else v) for v, c in zip(values, errors, strict=True)],
                         [(c[1] if c else v) - v for v, c in zip(values, errors, strict=True)]])  # fmt: skip
        ax.barh([s["method"] or s["label"] for s in shown], values, xerr=xerr, color="#3b75af")
        if human and key in human["metrics"][task]:
            ax.axvline(human["metrics"][task][key]["value"], color=HUMAN_COLOUR, linestyle="--", label="human control")
            ax.legend(fontsize=8)
        ax.set_xlabel(key)
        ax.tick_params(labelsize=7)
    cells = [s["metrics"][task].get(key, {}) for key in keys for s in rows]
    levels = [cell.get("ci_level") for cell in cells if cell.get("ci")]
    fig.suptitle(f"{task}: every way of asking ({intervals_label(levels)})", fontsize=10)
    save_figure(fig, path)
    return True


def write_plots(board: dict[str, Any], instances: dict[str, Any], output: Path) -> dict[str, list[str]]:
    """Every figure the runs' per-instance values allow, in a fresh ``output/plots``; returns, per task, their paths
    relative to ``output``. (The analysis reports' figures are ``analyses.write_analysis_plots``'s, drawn after.)"""
    import matplotlib

    matplotlib.use("Agg")
    folder = output / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    by_task: dict[str, list[str]] = {}
    for task, info in board["tasks"].items():
        view = instances.get(task)
        if view is None:
            continue
        written = by_task.setdefault(task, [])
        headline = info.get("headline")
        if headline and headline in view["values"]:
            path = folder / f"{file_slug(task)}-{file_slug(headline)}-density.png"
            if density_plot(task, headline, view["values"][headline], path):
                written.append(f"plots/{path.name}")
        if view["kind"] == "cloze":
            for label in view["systems"]:
                path = folder / f"{file_slug(task)}-top15-{file_slug(label)}.png"
                if label != "human" and top_words_plot(task, label, view, path):
                    written.append(f"plots/{path.name}")
        if view["kind"] == "generation":
            path = folder / f"{file_slug(task)}-w1.png"
            if wasserstein_plot(task, view, path):
                written.append(f"plots/{path.name}")
        if view["kind"] == "choice":
            path = folder / f"{file_slug(task)}-methods.png"
            if methods_plot(task, board, path):
                written.append(f"plots/{path.name}")
    return by_task

"""``harness leaderboard``: results files in, one leaderboard JSON, an HTML page and PNG plots out."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import HarnessError
from harness.files import write_json
from harness.leaderboard.analyses import collect_analyses
from harness.leaderboard.collect import (
    TaskResult,
    build_systems,
    check_comparable,
    control_pairs,
    read_results,
    split_metric,
)

#: Layout version of leaderboard.json; bump when a reader would have to change.
LEADERBOARD_FORMAT = 1


def _tasks(entries: list[TaskResult], systems: list[dict[str, Any]]) -> dict[str, Any]:
    """Per task: provenance, and every column with its direction and whether the human row has it."""
    controls = control_pairs(entries)
    tasks: dict[str, Any] = {}
    for entry in entries:
        info = tasks.setdefault(
            entry.task,
            {
                "version": entry.results["versions"].get(entry.key),
                "data_hash": entry.results["task_hashes"].get(entry.key),
                "instances": entry.results["n-samples"].get(entry.key, {}).get("effective"),
                "instances_in_data": entry.results["n-samples"].get(entry.key, {}).get("original"),
                "request": entry.config.get("request"),
                "description": entry.config.get("description", ""),
                "columns": {},
            },
        )
        if not entry.human_only and "n_samples" in entry.config.get("params", {}):
            info.setdefault("samples_per_input", entry.config["params"]["n_samples"])
    for task, info in tasks.items():
        controlled = {split_metric(m)[1] for m in controls.get(task, {})}
        for system in systems:
            for column, record in system["metrics"].get(task, {}).items():
                meta = info["columns"].setdefault(
                    column, {"higher_is_better": record.get("higher_is_better"), "human_control": False}
                )
                meta["human_control"] = meta["human_control"] or column in controlled
                meta["group"] = column.count("/") >= 1
                if record.get("ci"):
                    levels = meta.setdefault("ci_levels", [])
                    if record.get("ci_level") not in levels:
                        levels.append(record.get("ci_level"))
        for meta in info["columns"].values():
            levels = sorted(meta.pop("ci_levels", []), key=lambda level: (level is None, level or 0.0))
            meta["ci_levels"] = levels
            meta["mixed_ci_levels"] = len(levels) > 1
        model_columns = [c for s in systems if s["kind"] == "model" for c in s["metrics"].get(task, {})]
        headline = next((c for c in model_columns if c in controlled), model_columns[0] if model_columns else None)
        info["headline"] = headline
    return tasks


def build(
    paths: list[Path], output: Path, *, allow_mixed: bool = False, plots: bool = True, html: bool = True
) -> dict[str, Any]:
    """Write ``<output>/leaderboard.json`` (and the page and plots); returns the leaderboard."""
    entries = read_results(paths)
    problems = check_comparable(entries, allow_mixed)
    systems = [s.to_dict() for s in build_systems(entries, problems)]
    if not any(s["kind"] == "model" for s in systems) and not any(s["kind"] == "human" for s in systems):
        raise HarnessError("no model or human rows in the given results")
    sources = sorted({str(e.source) for e in entries})
    by_source = {str(e.source): e.results for e in entries}
    board: dict[str, Any] = {
        "format": LEADERBOARD_FORMAT,
        "name": output.name,
        "harness_version": __version__,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "tasks": _tasks(entries, systems),
        "systems": systems,
        "sources": {
            s: {
                "harness_version": by_source[s].get("library_versions", {}).get("harness"),
                "limit": by_source[s]["config"].get("limit"),
                "seed": by_source[s]["config"].get("random_seed"),
                "task_args": by_source[s]["config"].get("task_args", {}),
                "model_info": by_source[s]["config"].get("model_info", {}),
                "date": by_source[s].get("date"),
            }
            for s in sources
        },
        "mixed": [{"task": task, "source": source, "differs": why} for (task, source), why in sorted(problems.items())],
    }
    board["mixed_ci_levels"] = [
        {"task": task, "column": column, "levels": meta["ci_levels"]}
        for task, info in board["tasks"].items()
        for column, meta in info["columns"].items()
        if meta["mixed_ci_levels"]
    ]
    analyses = collect_analyses(entries)
    if analyses:  # only boards with runs scored by the analysis scorers (sample_size, replacement, gap_predictors)
        board["analyses"] = analyses
    output.mkdir(parents=True, exist_ok=True)
    files: dict[str, Any] = {"json": "leaderboard.json"}
    instances = None
    plots_by_task: dict[str, list[str]] = {}
    if plots or html:
        from harness.leaderboard.instances import collect_instances

        instances = collect_instances(entries, board)
    if plots:
        from harness.leaderboard.analyses import write_analysis_plots
        from harness.leaderboard.plots import write_plots

        plots_by_task = write_plots(board, instances or {}, output)
        for task, drawn in write_analysis_plots(board, output / "plots").items():
            plots_by_task.setdefault(task, []).extend(drawn)
        files["plots"] = [plot for task_plots in plots_by_task.values() for plot in task_plots]
    if html:
        from harness.leaderboard.page import write_page

        files["html"] = write_page(board, instances or {}, plots_by_task, output)
    board["files"] = files
    write_json(output / "leaderboard.json", board)
    return board

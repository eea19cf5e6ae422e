"""The leaderboard as one static HTML page that opens from disk: no server, no network, no JavaScript library.

Tables are rendered here, so the page reads without JavaScript; ``page.js`` adds sorting and the instance view
(pick a context, see the human and model distributions or productions), reading the per-instance data embedded in
the page as JSON. Figures are the PNG files in ``plots/`` beside the page.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

from harness.files import atomic_write_text
from harness.outputs.results import level_text

PAGE = "index.html"


def _asset(name: str) -> str:
    return resources.files("harness.leaderboard").joinpath(name).read_text(encoding="utf-8")


def _fmt(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.4f}" if abs(value) < 1000 else f"{value:.1f}"


def _cell(record: dict[str, Any] | None, mixed: bool, show_level: bool = False) -> str:
    """One value with its interval; the title gives the interval's level, and ``show_level`` (a column whose
    intervals differ in level) puts it in the cell too."""
    if record is None:
        return '<td class="num" data-v=""></td>'
    value = record.get("value")
    ci = record.get("ci")
    level = level_text(record.get("ci_level"))
    title = f"{level} CI [{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else "no interval"
    if record.get("spread") is not None:
        title += f"; ±{_fmt(record['spread'])} over human splits"
    shown_level = f'<span class="level">{level}</span> ' if show_level else ""
    text = _fmt(value) + (f'<span class="ci"> {shown_level}[{_fmt(ci[0])}, {_fmt(ci[1])}]</span>' if ci else "")
    mark = ' <span class="mixed" title="not comparable: see the notes">†</span>' if mixed else ""
    data = "" if value is None else repr(float(value))
    return f'<td class="num" data-v="{data}" title="{html.escape(title)}">{text}{mark}</td>'


def _arrow(direction: bool | None) -> str:
    return {True: " ↑", False: " ↓", None: ""}[direction]


def _levels_heading(meta: dict[str, Any], board_levels: list[float | None]) -> str:
    """A column heading's interval level: nothing where the whole board has one level (the page says it once),
    ``90% CI`` where the column has one, ``90%/95% CI, mixed levels`` where its runs computed different levels."""
    levels = meta.get("ci_levels") or []
    if not levels or len(board_levels) <= 1:
        return ""
    text = "/".join(level_text(level) for level in levels) + " CI"
    if meta.get("mixed_ci_levels"):
        return f'<br><small class="mixed-levels">{html.escape(text)}, mixed levels</small>'
    return f"<br><small>{html.escape(text)}</small>"


def board_levels(board: dict[str, Any]) -> list[float | None]:
    """Every interval level on the board, across tasks and columns."""
    levels: list[float | None] = []
    for info in board["tasks"].values():
        for meta in info["columns"].values():
            levels += [level for level in meta.get("ci_levels", []) if level not in levels]
    return sorted(levels, key=lambda level: (level is None, level or 0.0))


def _table(
    table_id: str, systems: list[dict[str, Any]], cells: list[tuple[str, str, str]], board: dict[str, Any]
) -> str:
    """``cells``: (task, column, heading) per column."""
    head = ['<th data-type="text">system</th>']
    everywhere = board_levels(board)
    for task, column, heading in cells:
        levels = _levels_heading(board["tasks"][task]["columns"].get(column, {}), everywhere)
        head.append(f'<th data-type="num" title="{html.escape(task)}: {html.escape(column)}">{heading}{levels}</th>')
    rows = []
    for system in systems:
        if not any(task in system["metrics"] for task, _, _ in cells):
            continue
        kind = system["kind"]
        tds = [f'<td class="system" data-v="{html.escape(system["label"])}">{html.escape(system["label"])}</td>']
        for task, column, _ in cells:
            record = system["metrics"].get(task, {}).get(column)
            show_level = bool(board["tasks"][task]["columns"].get(column, {}).get("mixed_ci_levels"))
            tds.append(_cell(record, task in system.get("mixed", {}) and record is not None, show_level))
        rows.append(f'<tr class="{kind}">' + "".join(tds) + "</tr>")
    return (
        f'<table class="sortable" id="{table_id}"><thead><tr>{"".join(head)}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _overview(board: dict[str, Any]) -> str:
    cells = []
    for task, info in board["tasks"].items():
        column = info.get("headline")
        if column:
            meta = info["columns"][column]
            cells.append(
                (
                    task,
                    column,
                    f"{html.escape(task)}<br><small>{html.escape(column)}{_arrow(meta['higher_is_better'])}</small>",
                )
            )
    return _table("overview", board["systems"], cells, board)


def _task_section(index: int, task: str, info: dict[str, Any], board: dict[str, Any], plots: list[str]) -> str:
    """One task's tables and figures; ``plots`` are the task's own figure files."""
    columns = {c: m for c, m in info["columns"].items() if not m["group"]}
    compared = [c for c, m in columns.items() if m["human_control"]]
    others = [c for c in columns if c not in compared]

    def cells(names: list[str]) -> list[tuple[str, str, str]]:
        return [(task, c, html.escape(c) + _arrow(columns[c]["higher_is_better"])) for c in names]

    facts = (
        f"version {info['version']} · data {html.escape(str(info['data_hash'])[:19])}… · "
        f"{info['instances']} of {info['instances_in_data']} instances"
        + (f" · {info['samples_per_input']} model samples per input" if info.get("samples_per_input") else "")
    )
    parts = [
        f'<section class="task" id="task-{index}" data-task="{html.escape(task)}"><h2>{html.escape(task)}</h2>',
        f'<p class="facts">{facts}</p><p class="description">{html.escape(info.get("description", ""))}</p>',
    ]
    for m in board.get("mixed_ci_levels", []):
        if m["task"] == task:
            levels = ", ".join(level_text(level) for level in m["levels"])
            parts.append(
                f'<p class="warning">{html.escape(m["column"])}: intervals at different levels ({levels}): '
                "each cell gives its own level</p>"
            )
    mixed = [m for m in board["mixed"] if m["task"] == task]
    for m in mixed:
        parts.append(
            f'<p class="warning">† merged although not comparable: {html.escape(m["source"])}: '
            f"{html.escape('; '.join(m['differs']))}</p>"
        )
    if compared:
        parts.append("<h3>Compared with the human control</h3>")
        parts.append(_table(f"t{index}-compared", board["systems"], cells(compared), board))
    if others:
        parts.append(f"<details><summary>Other metrics ({len(others)})</summary>")
        parts.append(_table(f"t{index}-other", board["systems"], cells(others), board) + "</details>")
    groups = len(info["columns"]) - len(columns)
    if groups:
        parts.append(f'<p class="note">{groups} per-group metrics (e.g. per phenomenon) are in leaderboard.json.</p>')
    for plot in plots:
        parts.append(f'<figure><img src="{html.escape(plot)}" alt="{html.escape(plot)}" loading="lazy"></figure>')
    parts.append("</section>")
    return "".join(parts)


def _levels_sentence(board: dict[str, Any]) -> str:
    """What the brackets are, with their level: one level for the whole board, or where to read it."""
    levels = board_levels(board)
    if len(levels) == 1:
        return f"brackets are {level_text(levels[0])} bootstrap intervals."
    if not levels:
        return "no value has an interval."
    return (
        f"brackets are bootstrap intervals at different levels ({', '.join(level_text(x) for x in levels)}): each "
        "column heading gives its level, and a column marked 'mixed levels' gives it in each cell."
    )


def render(board: dict[str, Any], instances: dict[str, Any], plots: dict[str, list[str]]) -> str:
    sources = "".join(
        f"<li><code>{html.escape(path)}</code> · limit {meta['limit']} · seed {meta['seed']} · "
        f"harness {html.escape(str(meta['harness_version']))}</li>"
        for path, meta in board["sources"].items()
    )
    tasks = "".join(
        _task_section(i, task, info, board, plots.get(task, []))
        for i, (task, info) in enumerate(board["tasks"].items())
    )
    data = json.dumps(instances, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    title = html.escape(f"Leaderboard: {board['name']}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_asset("page.css")}</style></head>
<body>
<h1>{title}</h1>
<p class="facts">harness {html.escape(board["harness_version"])} · built {html.escape(board["created"])} ·
rows are systems (model · decoding · scoring method); the human row is the human control; ↓ lower is better,
↑ higher is better; {_levels_sentence(board)} Click a column heading to sort.</p>
<h2>Overview</h2>
{_overview(board)}
{tasks}
<section id="instances"><h2>One instance</h2>
<p><label>task <select id="instance-task"></select></label>
<label>instance <select id="instance-item"></select></label></p>
<div id="instance-view"></div></section>
<h2>Sources</h2><ul class="sources">{sources}</ul>
<script type="application/json" id="instance-data">{data}</script>
<script>{_asset("page.js")}</script>
</body></html>
"""


def write_page(board: dict[str, Any], instances: dict[str, Any], plots: dict[str, list[str]], output: Path) -> str:
    atomic_write_text(output / PAGE, render(board, instances, plots))
    return PAGE

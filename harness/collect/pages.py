"""The study server's HTML: the participant page's shell, one-line message pages, and the admin status page.

Why Jinja2 with autoescape and nothing else: participant ids arrive in the URL and answers are typed by anyone, and
the admin page lists both; every value reaches the HTML through an autoescaped Jinja2 expression, so no text a
participant controls is ever markup. The participant page itself is a shell: ``static/study.js`` fills it with
``textContent`` only. No page has inline script or style (the Content-Security-Policy forbids both).

The admin page shows whatever ``harness.collect.status.progress`` returns, drawn generically (numbers and texts as
a list, lists of records as tables), so it keeps up when that report gains a field; above the tables, two plots an
organiser reads at a glance: every item's answers against its target (``coverage_plot``) and the answers received
per minute (``activity_strip``: a stalled study shows as a flat end). Both are inline SVG whose geometry is computed
here and written by the autoescaped template (no markup is built from strings; colours come from ``admin.css``
classes, since the Content-Security-Policy forbids style attributes).
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).parent / "templates"
#: Rows of one table shown on the admin page at most (the JSON report has them all).
MAX_ADMIN_ROWS = 500
#: The coverage plot's width in SVG units (the page scales it down to fit), its left margin (the axis labels),
#: and the narrowest and widest slot one item's bar gets: 3 items get wide labelled bars, 500 wrap into rows.
PLOT_WIDTH, PLOT_LEFT, MIN_SLOT, MAX_SLOT = 1000, 44, 8, 64
#: A slot this wide or wider shows its item id under the bar (about 7 units a character).
LABEL_SLOT = 40
#: The activity strip: units per minute and the bars' height.
STRIP_SLOT, STRIP_HEIGHT = 8, 40


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


def render(template: str, **values: Any) -> str:
    return _environment().get_template(template).render(**values)


def study_page(title: str) -> str:
    """The participant page: a shell the script fills in (it asks ``api/state`` for everything else). ``title`` is
    the title participants see (the study's ``title``, never its internal name)."""
    return render("study.html", title=title)


def message_page(title: str, message: str) -> str:
    """A page with one message: a refused link, a missing session, a missing admin token."""
    return render("message.html", title=title, message=message)


def admin_page(study_name: str, kind: str, report: dict[str, Any]) -> str:
    """The status page: the activity strip (when the report has ``activity``), the coverage plot (when it has
    ``items``), then every other part of the report as tables."""
    activity = report.get("activity")
    rest = {k: v for k, v in report.items() if k != "activity"}
    return render(
        "admin.html",
        title=f"{study_name}: status",
        kind=kind,
        activity=activity_strip(activity) if isinstance(activity, dict) else None,
        coverage=coverage_plot(report["items"]) if report.get("items") else None,
        sections=describe(rest),
    )


def coverage_plot(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The coverage plot's geometry: one bar per item (``progress()["items"]``), in the study's order, in rows of
    equal scale: the target as a pale track with a line at its top, finished answers solid, answers in progress
    lighter above them. Each bar has a title with its numbers."""
    n = len(items)
    slot = min(MAX_SLOT, max(MIN_SLOT, (PLOT_WIDTH - PLOT_LEFT) / n))
    per_row = max(1, int((PLOT_WIDTH - PLOT_LEFT) // slot))
    n_rows = math.ceil(n / per_row)
    labelled = slot >= LABEL_SLOT
    bar_h = 110 if n_rows == 1 else 60 if n_rows <= 4 else 40
    row_h = bar_h + (22 if labelled else 12)
    top = max(1, *(max(i["target"], i["finished"] + i["in_progress"]) for i in items))

    def height(value: float) -> float:  # every row has the same scale
        return bar_h * value / top

    rows = []
    for r in range(n_rows):
        base = 8 + r * row_h + bar_h  # the row's baseline
        end = PLOT_LEFT + min(per_row, n - r * per_row) * slot
        rows.append({"base": _num(base), "max_y": _num(base - bar_h + 10), "end": _num(end)})
    bars = []
    for k, item in enumerate(items):
        r, c = divmod(k, per_row)
        base = 8 + r * row_h + bar_h
        x = PLOT_LEFT + c * slot + slot * 0.12
        width = max(1.0, slot * 0.76)
        fin, prog, target = item["finished"], item["in_progress"], item["target"]
        title = f"{item['item_id']}: {fin} finished, {prog} in progress, target {target}"
        if item.get("released"):
            title += f", {item['released']} released (abandoned)"
        bar: dict[str, Any] = {
            "title": title,
            "done": fin >= target,
            "x": _num(x),
            "width": _num(width),
            "track": (_num(base - height(target)), _num(height(target))),
            "finished": (_num(base - height(fin)), _num(height(fin))) if fin else None,
            "progress": (_num(base - height(fin + prog)), _num(height(prog))) if prog else None,
            "target_y": _num(base - height(target)),
            "x1": _num(x - slot * 0.08),
            "x2": _num(x + width + slot * 0.08),
            "label": None,
        }
        if labelled:
            label = str(item["item_id"])
            chars = int(slot // 7)
            bar["label"] = label if len(label) <= chars else label[: max(1, chars - 1)] + "\u2026"
            bar["label_x"], bar["label_y"] = _num(x + width / 2), _num(base + 15)
        bars.append(bar)
    at_target = sum(b["done"] for b in bars)
    return {
        "width": PLOT_WIDTH,
        "height": _num(8 + n_rows * row_h),
        "left": PLOT_LEFT,
        "rows": rows,
        "max": top,
        "bars": bars,
        "summary": f"{at_target} of {n} items at target",
    }


def activity_strip(activity: dict[str, Any]) -> dict[str, Any]:
    """The activity strip's geometry: one bar per minute of ``activity["per_minute"]`` (oldest first), scaled to the
    busiest minute, each with a title; ``last_minute`` and ``last_10_minutes`` are shown beside it."""
    counts = [int(c) for c in activity.get("per_minute", [])]
    most = max([1, *counts])
    n = len(counts)
    bars = []
    for i, count in enumerate(counts):
        ago = n - 1 - i
        when = "in the last minute" if ago == 0 else f"{ago} to {ago + 1} minutes ago"
        h = max(1.0, STRIP_HEIGHT * count / most) if count else 0.0
        bars.append({
            "x": _num(i * STRIP_SLOT + 1), "y": _num(2 + STRIP_HEIGHT - h), "height": _num(h),
            "title": f"{count} answer{'' if count == 1 else 's'} {when}",
        })  # fmt: skip
    return {
        "width": n * STRIP_SLOT,
        "height": STRIP_HEIGHT + 3,
        "base": STRIP_HEIGHT + 2,
        "bars": bars,
        "minutes": n,
        "most": max(counts, default=0),
        "last_minute": int(activity.get("last_minute", 0)),
        "last_10_minutes": int(activity.get("last_10_minutes", 0)),
    }


def _num(value: float) -> str:
    """An SVG coordinate: at most one decimal, no trailing zero."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def describe(value: Any, name: str = "") -> list[dict[str, Any]]:
    """A report as sections for the admin template: ``{"name", "pairs"}`` (scalars), ``{"name", "columns",
    "rows"}`` (a list of records) or ``{"name", "items"}`` (a list of scalars), nested mappings flattened into
    sections named by their path."""
    if not isinstance(value, dict):
        return [{"name": name or "report", "pairs": [("value", _cell(value))]}]
    pairs = [(str(k), _cell(v)) for k, v in value.items() if not isinstance(v, (dict, list))]
    sections: list[dict[str, Any]] = [{"name": name or "summary", "pairs": pairs}] if pairs else []
    for key, sub in value.items():
        path = f"{name}.{key}" if name else str(key)
        if isinstance(sub, dict):
            if sub and all(isinstance(v, dict) for v in sub.values()):  # a mapping of records: a table keyed by id
                sections.append(_table(path, [{"": k, **v} for k, v in sub.items()]))
            else:
                sections.extend(describe(sub, path))
        elif isinstance(sub, list):
            if sub and all(isinstance(v, dict) for v in sub):
                sections.append(_table(path, sub))
            else:
                sections.append({"name": path, "items": [_cell(v) for v in sub[:MAX_ADMIN_ROWS]]})
    return sections


def _table(name: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    columns: list[str] = []
    for record in records[:MAX_ADMIN_ROWS]:
        columns.extend(str(k) for k in record if str(k) not in columns)
    rows = [[_cell(r.get(c)) for c in columns] for r in records[:MAX_ADMIN_ROWS]]
    more = len(records) - len(rows)
    return {"name": name, "columns": columns, "rows": rows, "more": more}


def _cell(value: Any) -> str:
    """A report value as text (Jinja escapes it); floats to four significant digits, nested values as JSON-ish."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)[:300]
    return str(value)

"""The study server's HTML: the participant page's shell, one-line message pages, and the admin status page.

Why Jinja2 with autoescape and nothing else: participant ids arrive in the URL and answers are typed by anyone, and
the admin page lists both; every value reaches the HTML through an autoescaped Jinja2 expression, so no text a
participant controls is ever markup. The participant page itself is a shell: ``static/study.js`` fills it with
``textContent`` only. No page has inline script or style (the Content-Security-Policy forbids both).

The admin page shows whatever ``harness.collect.status.progress`` returns, drawn generically (numbers and texts as
a list, lists of records as tables), so it keeps up when that report gains a field.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).parent / "templates"
#: Rows of one table shown on the admin page at most (the JSON report has them all).
MAX_ADMIN_ROWS = 500


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


def study_page(study_name: str) -> str:
    """The participant page: a shell the script fills in (it asks ``api/state`` for everything else)."""
    return render("study.html", title=study_name)


def message_page(title: str, message: str) -> str:
    """A page with one message: a refused link, a missing session, a missing admin token."""
    return render("message.html", title=title, message=message)


def admin_page(study_name: str, kind: str, report: dict[str, Any]) -> str:
    return render("admin.html", title=f"{study_name}: status", kind=kind, sections=describe(report))


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

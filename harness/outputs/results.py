"""Write ``results.json`` and ``samples_<task>.jsonl`` in a layout close to lm-evaluation-harness's.

``results.json`` keeps lm-eval's top-level keys (``results`` with ``"<metric>,none"`` and
``"<metric>_stderr,none"`` entries, ``configs``, ``versions``, ``n-samples``, ``higher_is_better``,
``task_hashes``, ``config``, ``date``) so scripts written for lm-eval read it, and adds ``metrics`` (value,
direction, confidence interval and its level ``ci_level``, spread, n for every metric). Everything except ``date``
and ``timing`` is a deterministic function of the command, so two runs of one command give identical files apart
from those keys.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import HarnessError, shorten
from harness.files import read_json_object
from harness.scoring.base import Metric

#: Keys that legitimately differ between two runs of the same command.
VOLATILE_KEYS = ("date", "timing", "total_evaluation_time_seconds", "api_calls", "git_hash", "execution")
#: Keys that name files by the time they were written (``results_<date>.json``), also dropped when two runs are
#: compared.
FILE_NAME_KEYS = ("sources", "samples_files")

_LIBRARIES = ("torch", "transformers", "numpy", "scipy", "pluggy", "pyyaml", "accelerate", "gguf", "openai", "httpx")


def library_versions() -> dict[str, str]:
    versions = {"harness": __version__, "python": platform.python_version()}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


@functools.lru_cache(maxsize=1)
def git_hash() -> str | None:
    """The harness checkout's commit (``git describe --always --dirty``), as lm-eval records it; None when the
    harness is not run from a git checkout."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def lm_eval_hash(text: str) -> str:
    """sha256 hex of ``text``, as lm-eval hashes a sample's document, prompt and target (``doc_hash`` ...)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def metric_record(metric: Metric) -> dict[str, Any]:
    has_ci = metric.ci_low is not None
    record: dict[str, Any] = {
        "value": metric.value,
        "higher_is_better": metric.higher_is_better,
        "ci": [metric.ci_low, metric.ci_high] if has_ci else None,
        "ci_level": metric.ci_level if has_ci else None,
        "stderr": metric.stderr,
        "n": metric.n,
    }
    if metric.spread is not None:
        record["spread"] = metric.spread
    return record


#: The level of every interval in a results file written before results.json recorded ``ci_level`` per metric,
#: unless the task's scorer configuration gave another ``confidence`` (the scorers' default).
DEFAULT_CI_LEVEL = 0.95


def _table(results: Mapping[str, Any], key: str, task: str) -> Any:
    table = results.get(key)
    return table.get(task) if isinstance(table, Mapping) else None


def configured_ci_levels(results: Mapping[str, Any], task: str) -> set[float]:
    """The interval levels the task's scorers were configured with (``configs[task].scorers[*].args.confidence``,
    which holds ``--task-args name.confidence=...`` too), the default for a scorer that gives none."""
    config = _table(results, "configs", task)
    scorers = config.get("scorers") if isinstance(config, Mapping) else None
    levels: set[float] = set()
    for scorer in scorers if isinstance(scorers, list) else []:
        args = scorer.get("args") if isinstance(scorer, Mapping) else None
        level = args.get("confidence", DEFAULT_CI_LEVEL) if isinstance(args, Mapping) else DEFAULT_CI_LEVEL
        if isinstance(level, (int, float)) and not isinstance(level, bool):
            levels.add(float(level))
    return levels or {DEFAULT_CI_LEVEL}


def record_ci_level(record: Mapping[str, Any], configured: set[float]) -> float | None:
    """The level of a metric record's interval: its ``ci_level``; for a record written before results.json had
    that field, the one level its task's scorers were configured with (``configured_ci_levels``). None where the
    record has no interval, or the level cannot be told (scorers of the task configured with different levels)."""
    if not record.get("ci"):
        return None
    if "ci_level" in record:
        level = record["ci_level"]
        return float(level) if isinstance(level, (int, float)) and not isinstance(level, bool) else None
    return next(iter(configured)) if len(configured) == 1 else None


def metrics_with_levels(results: Mapping[str, Any], task: str) -> dict[str, Any]:
    """The task's metric records, each with its ``ci_level`` (``record_ci_level``: older files lack it); copies,
    in the file's order (a record that is not an object is passed through as it is)."""
    configured = configured_ci_levels(results, task)
    metrics = _table(results, "metrics", task)
    out: dict[str, Any] = {}
    for name, record in metrics.items() if isinstance(metrics, Mapping) else ():
        if isinstance(record, Mapping):
            record = {**record, "ci_level": record_ci_level(record, configured)}
        out[name] = record
    return out


def level_text(level: float | None) -> str:
    """``0.9`` -> ``90%``; None (an interval whose level is not known) -> ``level unknown``.

    >>> [level_text(x) for x in (0.9, 0.95, 0.975, None)]
    ['90%', '95%', '97.5%', 'level unknown']
    """
    return "level unknown" if level is None else f"{round(level * 100, 6):g}%"


def interval_levels(records: list[dict[str, Any]]) -> list[float | None]:
    """The distinct levels of the records' intervals (records without an interval left out), in first-seen order."""
    levels: list[float | None] = []
    for record in records:
        if record.get("ci") and record.get("ci_level") not in levels:
            levels.append(record.get("ci_level"))
    return levels


def ci_heading(levels: list[float | None]) -> str:
    """A table's interval heading: ``90% CI`` when every interval shown has that level, else ``CI`` (each cell then
    gives its own level)."""
    return f"{level_text(levels[0])} CI" if len(levels) == 1 and levels[0] is not None else "CI"


def lm_eval_entries(task: str, metrics: dict[str, Metric]) -> dict[str, Any]:
    entries: dict[str, Any] = {"alias": task}
    for name, metric in metrics.items():
        entries[f"{name},none"] = metric.value
        entries[f"{name}_stderr,none"] = metric.stderr if metric.stderr is not None else "N/A"
    return entries


def add_cost(usage: dict[str, Any], prices: dict[str, float] | None) -> None:
    """Put ``cost_usd`` into an API usage total, from prices in USD per million prompt and completion tokens.

    >>> u = {"prompt_tokens": 2_000_000, "completion_tokens": 500_000}
    >>> add_cost(u, {"input_per_million": 0.15, "output_per_million": 0.6}); u["cost_usd"]
    0.6
    """
    if prices is None:
        return
    cost = usage.get("prompt_tokens", 0) * prices["input_per_million"] / 1e6
    cost += usage.get("completion_tokens", 0) * prices["output_per_million"] / 1e6
    usage["cost_usd"] = round(cost, 6)


#: The sections of a results file keyed by task; everything else describes the invocation.
PER_TASK_KEYS = (
    "results",
    "metrics",
    "higher_is_better",
    "configs",
    "versions",
    "n-samples",
    "task_hashes",
    "data_sources",
    "responses",
    "unavailable",
    "notes",
    "scorers",
    "reports",
    "controls",
    "headline",
)

#: Version of this file layout (``format_version``): 2 added timestamped files, ``sources``, ``git_hash``, and
#: the samples' ``arguments`` and hashes.
FORMAT_VERSION = 2

#: Fields every results file written by ``harness run`` has, and that re-scoring and leaderboards read.
RESULTS_FIELDS = ("metrics", "configs", "config", "task_hashes", "versions", "n-samples")


def check_results(results: Any, path: Path) -> None:
    """Refuse, naming the file and the field, a results file that readers would trip over later."""
    for key in RESULTS_FIELDS:
        if not isinstance(results, dict) or key not in results:
            raise HarnessError(f"{path}: field '{key}' missing; is this a results file written by harness run?")
        if not isinstance(results[key], dict):
            raise HarnessError(f"{path}: field '{key}': expected an object, got {type(results[key]).__name__}")
    if not results["configs"]:
        raise HarnessError(f"{path}: field 'configs' is empty; the file holds no task")
    for task, config in results["configs"].items():
        if not isinstance(config, dict) or not isinstance(config.get("request"), str):
            raise HarnessError(f"{path}: field 'configs.{task}': expected a task configuration with 'request'")
    for key in ("metrics", "task_hashes", "versions", "n-samples"):
        for task, value in results[key].items():
            if task not in results["configs"]:
                raise HarnessError(f"{path}: field '{key}.{task}': task not in 'configs'")
            if key in ("metrics", "n-samples") and not isinstance(value, dict):
                raise HarnessError(f"{path}: field '{key}.{task}': expected an object, got {type(value).__name__}")
    for task, metrics in results["metrics"].items():
        for name, record in metrics.items():
            value = record.get("value") if isinstance(record, dict) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise HarnessError(
                    f"{path}: field 'metrics.{task}.{name}.value': expected a number, got {shorten(repr(value))}"
                )
    config = results["config"]
    for key, kind in (("human_only", bool), ("random_seed", int)):
        if key in config and not isinstance(config[key], kind):
            raise HarnessError(f"{path}: field 'config.{key}': expected {kind.__name__}, got {shorten(config[key])}")
    limit = config.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise HarnessError(f"{path}: field 'config.limit': expected a positive integer or null, got {shorten(limit)}")


def read_results(path: Path) -> dict[str, Any]:
    """A results file written by ``harness run`` (or ``harness score``), checked for the fields readers need."""
    results = read_json_object(path, "a results file")
    check_results(results, path)
    return results


def strip_volatile(results: dict[str, Any]) -> dict[str, Any]:
    """``results`` without the keys that change from run to run (for comparing two runs)."""
    return {k: v for k, v in results.items() if k not in VOLATILE_KEYS + FILE_NAME_KEYS}


def _ci_text(m: dict[str, Any], with_level: bool = False) -> str:
    """The interval as ``[low, high]``; ``with_level`` (a table whose intervals differ in level) puts the level
    first: ``90% [low, high]``."""
    ci = m.get("ci")
    text = f"[{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""
    if ci and with_level:
        text = f"{level_text(m.get('ci_level'))} {text}"
    if m.get("spread") is not None:
        text += f" ±{m['spread']:.4f} over splits"
    return text


def _direction(m: dict[str, Any]) -> str:
    return {True: "higher", False: "lower", None: ""}[m.get("higher_is_better")]


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


#: Metrics a task without declared headline metrics shows in the short table.
FALLBACK_HEADLINE = 6


def headline_rows(results: dict[str, Any]) -> tuple[list[tuple[str, ...]], int]:
    """The short table: per task its headline metrics (the scorers' ``headline``), each with its human control
    beside it; a control shown beside its metric gets no row of its own. Also returns how many metrics are not
    shown. The interval column's heading gives the level (``90% CI``) when every interval shown has one level;
    otherwise it is ``CI`` and every interval gives its own level."""
    picked: list[tuple[str, str, dict[str, Any], str]] = []
    hidden = 0
    for task in results.get("metrics", {}):
        metrics = metrics_with_levels(results, task)
        names = [m for m in (results.get("headline") or {}).get(task) or [] if m in metrics]
        if not names:
            names = [m for m in metrics if "/" not in m][:FALLBACK_HEADLINE]
        controls = (results.get("controls") or {}).get(task, {})
        beside = {controls[m] for m in names if m in controls}
        shown = [m for m in names if m not in beside]
        hidden += len(metrics) - len(shown) - len(beside & set(metrics))
        for name in shown:
            control = controls.get(name)
            human = f"{metrics[control]['value']:.4f} ({control})" if control in metrics else ""
            picked.append((task, name, metrics[name], human))
    levels = interval_levels([m for _, _, m, _ in picked])
    mixed = ci_heading(levels) == "CI"
    rows: list[tuple[str, ...]] = [("task", "metric", "value", ci_heading(levels), "human control", "better")]
    for task, name, m, human in picked:
        rows.append((task, name, f"{m['value']:.4f}", _ci_text(m, mixed), human, _direction(m)))
    return rows, hidden


def format_table(results: dict[str, Any], full: bool = False) -> str:
    """A plain-text table for the end of ``harness run``: the headline metrics with their human controls, or
    (``full``) every task metric."""
    if full:
        picked: list[tuple[str, str, dict[str, Any]]] = []
        groups: dict[str, int] = {}
        for task in results.get("metrics", {}):
            for name, m in metrics_with_levels(results, task).items():
                if name.count("/") >= 2:
                    # A per-group breakdown (``string.prob/acc/Irony``): in results.json, summarised below.
                    groups[task] = groups.get(task, 0) + 1
                    continue
                picked.append((task, name, m))
        levels = interval_levels([m for _, _, m in picked])
        mixed = ci_heading(levels) == "CI"
        rows: list[tuple[str, ...]] = [("task", "metric", "value", ci_heading(levels), "better")]
        rows += [(task, name, f"{m['value']:.4f}", _ci_text(m, mixed), _direction(m)) for task, name, m in picked]
        lines = _aligned(rows)
        for task, count in groups.items():
            lines.append(f"{task}: {count} per-group metrics (e.g. per phenomenon) are in results.json")
    else:
        rows, hidden = headline_rows(results)
        lines = _aligned(rows)
        if hidden:
            lines.append(f"{hidden} more metrics are in results.json (--full-table prints them)")
    for task, scorers in results.get("unavailable", {}).items():
        for scorer, reason in scorers.items():
            lines.append(f"{task}: {scorer} unavailable: {reason}")
    for task, reports in results.get("reports", {}).items():
        for scorer, report in reports.items():
            if report.get("text"):
                lines += ["", f"{task}: {scorer}", report["text"]]
    if full:
        for task, scorers in results.get("notes", {}).items():
            for scorer, notes in scorers.items():
                for key, note in notes.items():
                    lines.append(f"{task}: {scorer}: {key}: {note}")
    return "\n".join(lines)

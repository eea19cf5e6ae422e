"""Write ``results.json`` and ``samples_<task>.jsonl`` in a layout close to lm-evaluation-harness's.

``results.json`` keeps lm-eval's top-level keys (``results`` with ``"<metric>,none"`` and
``"<metric>_stderr,none"`` entries, ``configs``, ``versions``, ``n-samples``, ``higher_is_better``,
``task_hashes``, ``config``, ``date``) so scripts written for lm-eval read it, and adds ``metrics`` (value,
direction, confidence interval, spread, n for every metric). Everything except ``date`` and ``timing`` is a
deterministic function of the command, so two runs of one command give identical files apart from those keys.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import HarnessError
from harness.scoring import Metric

#: Keys that legitimately differ between two runs of the same command.
VOLATILE_KEYS = ("date", "timing", "total_evaluation_time_seconds", "api_calls")

_LIBRARIES = ("torch", "transformers", "numpy", "scipy", "pluggy", "pyyaml", "accelerate", "gguf", "openai", "httpx")


def library_versions() -> dict[str, str]:
    versions = {"harness": __version__, "python": platform.python_version()}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def metric_record(metric: Metric) -> dict[str, Any]:
    record: dict[str, Any] = {
        "value": metric.value,
        "higher_is_better": metric.higher_is_better,
        "ci": [metric.ci_low, metric.ci_high] if metric.ci_low is not None else None,
        "stderr": metric.stderr,
        "n": metric.n,
    }
    if metric.spread is not None:
        record["spread"] = metric.spread
    return record


def lm_eval_entries(task: str, metrics: dict[str, Metric]) -> dict[str, Any]:
    entries: dict[str, Any] = {"alias": task}
    for name, metric in metrics.items():
        entries[f"{name},none"] = metric.value
        entries[f"{name}_stderr,none"] = metric.stderr if metric.stderr is not None else "N/A"
    return entries


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a kill never leaves a half-written results file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes the file private (0600); results and pages are for sharing, so use the usual mode.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    lines = (json.dumps(r, ensure_ascii=False, sort_keys=True) for r in records)
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def write_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


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


def samples_path(run_dir: Path, task: str) -> Path:
    """Where a run keeps one task's per-instance records (``task`` with its decoding variant, if any)."""
    return run_dir / f"samples_{task}.jsonl"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every record of a JSON-lines file the harness wrote; a bad line is a one-line error naming file and line."""
    records: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise HarnessError(f"{path}: line {line_no}: not JSON ({exc})") from exc
    return records


#: Fields every ``results.json`` written by ``harness run`` has, and that re-scoring and leaderboards read.
RESULTS_FIELDS = ("metrics", "configs", "config", "task_hashes", "versions", "n-samples")


def read_results(path: Path) -> dict[str, Any]:
    """A ``results.json`` written by ``harness run`` (or ``harness score``), checked for the fields readers need."""
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read ({exc.strerror})") from exc
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}: not JSON ({exc})") from exc
    for key in RESULTS_FIELDS:
        if not isinstance(results, dict) or key not in results:
            raise HarnessError(f"{path}: field '{key}' missing; is this a results.json written by harness run?")
    return results


def strip_volatile(results: dict[str, Any]) -> dict[str, Any]:
    """``results`` without the keys that change from run to run (for comparing two runs)."""
    return {k: v for k, v in results.items() if k not in VOLATILE_KEYS}


def format_table(results: dict[str, Any]) -> str:
    """A plain-text table of every task's metrics, for the end of ``harness run``."""
    rows = [("task", "metric", "value", "95% CI", "better")]
    hidden: dict[str, int] = {}
    for task, metrics in results.get("metrics", {}).items():
        for name, m in metrics.items():
            if name.count("/") >= 2:
                # A per-group breakdown (``string.prob/acc/Irony``): in results.json, summarised below.
                hidden[task] = hidden.get(task, 0) + 1
                continue
            ci = m.get("ci")
            ci_text = f"[{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""
            if m.get("spread") is not None:
                ci_text += f" ±{m['spread']:.4f} over splits"
            direction = {True: "higher", False: "lower", None: ""}[m.get("higher_is_better")]
            rows.append((task, name, f"{m['value']:.4f}", ci_text, direction))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for task, count in hidden.items():
        lines.append(f"{task}: {count} per-group metrics (e.g. per phenomenon) are in results.json")
    for task, scorers in results.get("unavailable", {}).items():
        for scorer, reason in scorers.items():
            lines.append(f"{task}: {scorer} unavailable: {reason}")
    for task, reports in results.get("reports", {}).items():
        for scorer, report in reports.items():
            if report.get("text"):
                lines += ["", f"{task}: {scorer}", report["text"]]
    for task, scorers in results.get("notes", {}).items():
        for scorer, notes in scorers.items():
            for key, note in notes.items():
                lines.append(f"{task}: {scorer}: {key}: {note}")
    return "\n".join(lines)

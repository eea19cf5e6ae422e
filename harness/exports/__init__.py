"""Export a finished run into other tools' formats: lm-evaluation-harness's output layout (``lm-eval``) and
inspect_ai's eval logs (``inspect``).

The API is pure: ``export_run`` takes the parsed results file of a run and the parsed records of each task's
samples file and writes the export; it never reads the run's files (``harness export``, in ``harness.cli``, finds
and reads them). Neither format needs its tool installed to be written; ``tests/test_exports.py`` reads every
export back with lm_eval's and inspect_ai's own functions. ``docs/results.md`` (Exporting to lm-eval and inspect)
describes what each export holds; the modules' docstrings give the exact mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.exports import inspect_log, lm_eval


@dataclass(frozen=True)
class Exporter:
    """One export format: its name (``--format``), a line for help texts, and the function that writes it."""

    name: str
    description: str
    write: Callable[[dict[str, Any], Mapping[str, list[dict[str, Any]]], Path], list[Path]]


FORMATS: dict[str, Exporter] = {
    "lm-eval": Exporter(
        "lm-eval",
        "lm-evaluation-harness's results_<date>.json and samples_<task>_<date>.jsonl under <out>/<model>/",
        lm_eval.export,
    ),
    "inspect": Exporter("inspect", "one inspect_ai eval log (JSON) per task", inspect_log.export),
}


def export_run(
    results: dict[str, Any], samples: Mapping[str, list[dict[str, Any]]], fmt: str, out_dir: Path
) -> list[Path]:
    """Write the tasks of ``samples`` (task -> its samples records) of the run whose results file is ``results``
    into ``out_dir`` in format ``fmt``; returns the files written. Tasks of ``results`` without samples are left
    out (an invocation's results file can hold more tasks than the caller exports from it)."""
    exporter = FORMATS.get(fmt)
    if exporter is None:
        raise HarnessError(f"export format {fmt!r}: unknown (known: {', '.join(FORMATS)})")
    return exporter.write(results, samples, Path(out_dir))


__all__ = ["FORMATS", "Exporter", "export_run"]

"""Finished runs to damage: one mock run made once per test session and copied into each case's folder."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import run_main
from tests.helpers import shared_data_dir

#: Where the copied run lives under a case's ``{tmp}``: ``{tmp}/runs/mock__m/``.
RUN = "runs/mock__m"
_template: Path | None = None


def _made() -> Path:
    global _template
    if _template is None:
        root = Path(tempfile.mkdtemp(prefix="malformed-runs-"))
        common = ["--data-dir", str(shared_data_dir()), "--output-dir", str(root / "runs"), "--limit", "2"]
        run_main("run", "--tasks", "provo", "--model", "mock:m", "--task-args", "n_samples=20", *common)
        run_main("run", "--tasks", "provo", "--human-only", *common)
        _template = root
    return _template


def finished_run(tmp: Path) -> None:
    """``{tmp}/runs/mock__m`` (provo, 2 instances) and ``{tmp}/runs/human`` (the human-only run)."""
    shutil.copytree(_made() / "runs", tmp / "runs")


def invocation(tmp: Path, folder: str = RUN) -> Path:
    (path,) = sorted((tmp / folder).glob("results_*.json"))
    return path


def samples(tmp: Path, folder: str = RUN) -> Path:
    (path,) = sorted((tmp / folder).glob("samples_provo_*.jsonl"))
    return path


def store(tmp: Path) -> Path:
    (path,) = sorted((tmp / RUN / "responses").glob("provo-*.jsonl"))
    return path


def edit_results(change: Callable[[dict[str, Any]], None], folder: str = RUN) -> Callable[[Path], None]:
    """A ``prepare`` step: copy the finished runs, then edit the invocation's results file as JSON."""

    def step(tmp: Path) -> None:
        finished_run(tmp)
        path = invocation(tmp, folder)
        results = json.loads(path.read_text())
        change(results)
        path.write_text(json.dumps(results))

    return step


def write_results(data: bytes, folder: str = RUN) -> Callable[[Path], None]:
    def step(tmp: Path) -> None:
        finished_run(tmp)
        invocation(tmp, folder).write_bytes(data)

    return step


def edit_samples(change: Callable[[list[Any]], list[Any]], raw: bytes | None = None) -> Callable[[Path], None]:
    """A ``prepare`` step: copy the finished runs, then edit the samples records (or write ``raw`` bytes)."""

    def step(tmp: Path) -> None:
        finished_run(tmp)
        path = samples(tmp)
        if raw is not None:
            path.write_bytes(raw)
            return
        records = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in change(records)))

    return step


def edit_store(
    change: Callable[[list[str]], list[str]] | None = None, raw: bytes | None = None
) -> Callable[[Path], None]:
    """A ``prepare`` step: copy the finished runs, then edit the response store's lines (or write ``raw``)."""

    def step(tmp: Path) -> None:
        finished_run(tmp)
        path = store(tmp)
        if raw is not None:
            path.write_bytes(raw)
            return
        assert change is not None
        path.write_text("".join(line + "\n" for line in change(path.read_text().splitlines())))

    return step

"""The further analyses on the leaderboard: a run scored with ``sample_size``, ``replacement`` and
``gap_predictors`` gets their reports in ``leaderboard.json`` and their figures on the page."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from tests.helpers import require_provo


def test_analyses_reach_the_leaderboard(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    require_provo()
    cli("run", "--tasks", "provo", "--model", "mock:a", "--limit", "30", "--task-args", "n_samples=60",
        "--output-dir", str(tmp_path / "runs"))  # fmt: skip
    run = tmp_path / "runs" / "mock__a"
    cli("score", str(run), "--scorers", "+sample_size,+replacement,+gap_predictors",
        "--task-args", "replacement.n_seeds=3,sample_size.n_repeats=5",
        "--output-dir", str(tmp_path / "scored"))  # fmt: skip
    board_dir = tmp_path / "board"
    cli("leaderboard", str(tmp_path / "scored"), "-o", str(board_dir))
    board = json.loads((board_dir / "leaderboard.json").read_text())
    (label,) = board["analyses"]["provo"]
    assert label.startswith("mock:a")
    reports = board["analyses"]["provo"][label]
    assert sorted(reports) == ["gap_predictors", "replacement", "sample_size"]
    assert [p["n"] for p in reports["sample_size"]["curve"]] == [10, 20, 40]
    plots = board["files"]["plots"]
    for name in ("plots/provo-sample-size.png", "plots/provo-replacement.png"):
        assert name in plots and (board_dir / name).stat().st_size > 1000
    gap = [p for p in plots if p.startswith("plots/provo-gap-predictors-mock_a")]
    assert len(gap) == 1 and (board_dir / gap[0]).is_file()
    page = (board_dir / "index.html").read_text()
    assert "provo-replacement.png" in page and "provo-sample-size.png" in page


def test_boards_without_analyses_have_no_such_key(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    require_provo()
    cli("run", "--tasks", "provo", "--model", "mock:a", "--limit", "5", "--output-dir", str(tmp_path / "runs"))
    cli("leaderboard", str(tmp_path / "runs" / "mock__a"), "-o", str(tmp_path / "board"), "--no-plots")
    assert "analyses" not in json.loads((tmp_path / "board" / "leaderboard.json").read_text())

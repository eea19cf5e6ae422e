"""Every output of a fixed set of runs on the mock adapter matches the recorded snapshot: identical words, counts and
ids; numbers within 1e-9 relative (their last bits differ between CPUs).

This is the guard for refactorings (``tests/snapshot.py`` says what runs and how to compare real-model runs;
``tests/test_snapshot_compare.py`` shows that the comparison still catches a real change of a number).
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import require_provo
from tests.snapshot import compare, load_fixture, snapshot


def test_mock_runs_match_the_snapshot(tmp_path: Path) -> None:
    data = require_provo()
    expected = load_fixture()
    got = snapshot("mock:snapshot", tmp_path / "snap", data)
    assert len(got) == len(expected) == 39
    problems = compare(expected, got)
    assert not problems, "\n".join(problems)

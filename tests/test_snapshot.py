"""Every output of a fixed set of runs on the mock adapter is byte-identical to the recorded snapshot.

This is the guard for refactorings (``tests/snapshot.py`` says what runs and how to compare real-model runs).
"""

from __future__ import annotations

import difflib
from pathlib import Path

from tests.helpers import require_provo
from tests.snapshot import compare, load_fixture, snapshot


def test_mock_runs_are_byte_identical_to_the_snapshot(tmp_path: Path) -> None:
    data = require_provo()
    expected = load_fixture()
    got = snapshot("mock:snapshot", tmp_path / "snap", data)
    problems = compare(expected, got)
    detail = ""
    for problem in problems:
        if problem.startswith("differs: "):
            name = problem.removeprefix("differs: ")
            diff = difflib.unified_diff(expected[name].splitlines(), got[name].splitlines(), lineterm="", n=1)
            detail = f"\nfirst difference, {name}:\n" + "\n".join(list(diff)[:40])
            break
    assert not problems, "\n".join(problems) + detail

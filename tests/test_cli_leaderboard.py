"""``harness leaderboard`` refusing results that cannot be compared names each differing file once, with its value,
and the files that hold the other value (trap 8: a results file of a decoding sweep holds one entry per decoder,
and the message used to name that file once per entry: ``(a.json: 10, a.json: 10; the others: 20)``).

Real result files: the mock model's runs of ``saved_mock_runs`` (``tests/conftest.py``), and one more run of the
same task on fewer instances.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_main
from tests.helpers import require_provo, source_of

GEN = "n_samples=4,max_new_tokens=16,decoding=ancestral;top_p=0.9"


@pytest.fixture(scope="module")
def fewer_instances(saved_mock_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ASSET sweep of ``saved_mock_runs`` (two decoders, 3 instances) run again on 2 instances, another model."""
    data = require_provo()
    out = tmp_path_factory.mktemp("fewer")
    run_main("run", "--tasks", "asset-test", "--task-args", GEN, "--model", "mock:fewer", "--limit", "2",
             "--data-dir", str(data), "--output-dir", str(out))  # fmt: skip
    return out / "mock__fewer"


def test_the_mismatch_names_each_file_once_with_its_value(
    saved_mock_runs: Path, fewer_instances: Path, tmp_path: Path
) -> None:
    three = source_of(saved_mock_runs / "gen" / "mock__test", "asset-test@ancestral")
    human = source_of(saved_mock_runs / "human", "asset-test")
    two = source_of(fewer_instances, "asset-test@ancestral")
    result = run_main(
        "leaderboard", str(three), str(two), str(human), "-o", str(tmp_path / "board"), "--no-plots", check=False
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        f"error: results are not comparable: task asset-test: instances differs: 2 in {two}; "
        f"3 in the other 2 files ({three}, {human}); pass --allow-mixed to merge them anyway, marked in the "
        "leaderboard\n"
    )
    for path in (three, two, human):
        assert result.stderr.count(str(path)) == 1


def test_allowed_mixed_results_record_each_reason_once(
    saved_mock_runs: Path, fewer_instances: Path, tmp_path: Path
) -> None:
    three = source_of(saved_mock_runs / "gen" / "mock__test", "asset-test@ancestral")
    two = source_of(fewer_instances, "asset-test@ancestral")
    result = run_main("leaderboard", str(three), str(two), "-o", str(tmp_path / "b"), "--no-plots", "--allow-mixed")
    # Two files, one each: the first given is the reference on a tie.
    assert result.stdout.count("warning: merged although not comparable") == 1
    assert f"warning: merged although not comparable: asset-test: {two}: instances 2, others 3\n" in result.stdout
    board: dict[str, Any] = json.loads((tmp_path / "b" / "leaderboard.json").read_text())
    assert board["mixed"] == [{"task": "asset-test", "source": str(two), "differs": ["instances 2, others 3"]}]
    rows = {s["label"]: s for s in board["systems"]}
    assert rows["mock:fewer · top_p=0.9"]["mixed"] == {"asset-test": ["instances 2, others 3"]}
    assert rows["mock:fewer · ancestral"]["mixed"] == {"asset-test": ["instances 2, others 3"]}
    assert "mixed" not in rows["mock:test · ancestral"]

"""Every interval is shown at the level it was computed at (issue 43, part 4).

``--task-args tvd.confidence=0.9`` makes the TVD's interval a 90% one: results.json records ``ci_level`` per metric,
the run's table says 90% (in the heading when every interval shown has that level, in each cell when levels
differ), the leaderboard marks a column whose runs computed different levels, and the lm-eval and inspect exports
carry the level. Results written before ``ci_level`` existed are read as 95%, unless their scorer configuration
says otherwise. All on a two-context cloze task in a temporary folder, with the mock model (fast).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.outputs.results import format_table, headline_rows, metrics_with_levels

CLOZE_TASK = """\
task: levels-cloze
version: 1
loader: generic_cloze
data:
  files: cloze/norms.csv
  group_by: [sentence, position]
  id: "{{ sentence }}-{{ position }}"
  context: context
  target: word
  human: {shape: long, responses: guess, counts: n}
request: sample_words
params: {n_samples: 40}
scorers: [tvd, entropy]
"""

GUESSES = [
    ("The cat sat on the", "mat", {"mat": 5, "floor": 3, "sofa": 1, "bed": 1}),
    ("She drank a cup of", "tea", {"tea": 6, "coffee": 4}),
    ("He opened the", "door", {"door": 7, "window": 2, "box": 1}),
    ("We walked to the", "park", {"park": 4, "shop": 3, "beach": 3}),
]


def _task(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data"
    rows = ["sentence,position,context,word,guess,n"]
    for position, (context, word, guesses) in enumerate(GUESSES, start=1):
        rows += [f"s1,{position},{context},{word},{g},{n}" for g, n in guesses.items()]
    (data / "cloze").mkdir(parents=True)
    (data / "cloze" / "norms.csv").write_text("\n".join(rows) + "\n")
    task_file = tmp_path / "levels-cloze.yaml"
    task_file.write_text(CLOZE_TASK)
    return task_file, data


def _run(cli: Any, task_file: Path, data: Path, out: Path, model: str, *extra: str) -> tuple[Path, Any]:
    args = ["run", "--tasks", str(task_file), "--model", model, "--data-dir", str(data), "--output-dir", str(out)]
    result = cli(*args, *extra)
    return out / model.replace(":", "__"), result


@pytest.fixture
def runs(cli: Any, tmp_path: Path) -> dict[str, Any]:
    """The task run three ways on one seed: every interval 95% (default), TVD's 90%, and every interval 90%."""
    task_file, data = _task(tmp_path)
    default, default_out = _run(cli, task_file, data, tmp_path / "runs", "mock:a")
    mixed, mixed_out = _run(cli, task_file, data, tmp_path / "runs", "mock:b", "--task-args", "tvd.confidence=0.9")
    every = "tvd.confidence=0.9,entropy.confidence=0.9"
    all90, all90_out = _run(cli, task_file, data, tmp_path / "all90", "mock:a", "--task-args", every, "--full-table")
    return {
        "task_file": task_file,
        "data": data,
        "default": default,
        "mixed": mixed,
        "all90": all90,
        "out": {"default": default_out.stdout, "mixed": mixed_out.stdout, "all90": all90_out.stdout},
    }


def _metrics(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "results.json").read_text())["metrics"]["levels-cloze"])


def _row(stdout: str, metric: str) -> str:
    return next(line for line in stdout.splitlines() if line.split()[1:2] == [metric])


def test_results_json_records_each_intervals_level_and_a_90_interval_is_narrower(runs: dict[str, Any]) -> None:
    default, mixed, all90 = _metrics(runs["default"]), _metrics(runs["mixed"]), _metrics(runs["all90"])
    assert mixed["tvd"]["ci_level"] == 0.9
    assert mixed["entropy_model"]["ci_level"] == 0.95
    assert default["tvd"]["ci_level"] == 0.95
    assert all90["entropy_human"]["ci_level"] == 0.9
    # The same bootstrap draws (one seed, the people's entropy): the 90% interval lies inside the 95% one.
    low90, high90 = all90["entropy_human"]["ci"]
    low95, high95 = default["entropy_human"]["ci"]
    assert low95 <= low90 <= high90 <= high95 and (low90, high90) != (low95, high95)
    # A metric with no interval has no level.
    no_interval = [m for m in mixed.values() if m["ci"] is None]
    assert all(m["ci_level"] is None for m in no_interval)


def test_the_table_says_the_level_computed(runs: dict[str, Any]) -> None:
    # Every interval 95%: the heading says so, as before.
    head = runs["out"]["default"].splitlines()[0].split()
    assert head == ["task", "metric", "value", "95%", "CI", "human", "control", "better"]
    # Every interval 90% (and --full-table): the heading says 90%, no cell repeats it.
    lines = runs["out"]["all90"].splitlines()
    assert lines[0].split() == ["task", "metric", "value", "90%", "CI", "better"]
    assert "%" not in _row(runs["out"]["all90"], "tvd")
    # TVD at 90%, entropy at 95%: the heading claims no level, each interval gives its own.
    out = runs["out"]["mixed"]
    assert out.splitlines()[0].split()[3] == "CI" and "95%" not in out.splitlines()[0]
    tvd = _metrics(runs["mixed"])["tvd"]
    assert f"90% [{tvd['ci'][0]:.4f}, {tvd['ci'][1]:.4f}]" in _row(out, "tvd")
    assert "95% [" in _row(out, "entropy_model")


def test_a_results_file_without_levels_reads_as_95_unless_its_scorers_say_otherwise(runs: dict[str, Any]) -> None:
    results = json.loads((runs["mixed"] / "results.json").read_text())
    for record in results["metrics"]["levels-cloze"].values():
        del record["ci_level"]  # as written before results.json recorded the level
    # The scorer configuration says tvd ran at 0.9 and entropy at the default: which metric came from which
    # scorer is not in the file, so the level cannot be told.
    assert {m["ci_level"] for m in metrics_with_levels(results, "levels-cloze").values() if m["ci"]} == {None}
    rows, _ = headline_rows(results)
    assert rows[0][3] == "CI" and "level unknown [" in rows[1][3]
    # Every scorer at 0.9 in the configuration: 90%.
    for scorer in results["configs"]["levels-cloze"]["scorers"]:
        scorer["args"] = {"confidence": 0.9}
    assert format_table(results).splitlines()[0].split()[3:5] == ["90%", "CI"]
    # No confidence anywhere: the default, 95%.
    for scorer in results["configs"]["levels-cloze"]["scorers"]:
        scorer["args"] = {}
    assert format_table(results, full=True).splitlines()[0].split()[3:5] == ["95%", "CI"]


def test_the_leaderboard_marks_a_column_computed_at_different_levels(
    cli: Any, runs: dict[str, Any], tmp_path: Path
) -> None:
    board_dir = tmp_path / "board"
    result = cli("leaderboard", str(runs["default"]), str(runs["mixed"]), "-o", str(board_dir), "--no-plots")
    assert (
        "warning: levels-cloze: tvd: intervals at different levels (90%, 95%); marked in the leaderboard, "
        "each cell with its level" in result.stdout
    )
    board = json.loads((board_dir / "leaderboard.json").read_text())
    columns = board["tasks"]["levels-cloze"]["columns"]
    assert columns["tvd"]["ci_levels"] == [0.9, 0.95] and columns["tvd"]["mixed_ci_levels"] is True
    assert columns["entropy_model"]["ci_levels"] == [0.95] and columns["entropy_model"]["mixed_ci_levels"] is False
    # Every interval the tvd scorer computed (tvd, model_reject_rate), no other column.
    mixed = [(m["column"], m["levels"]) for m in board["mixed_ci_levels"] if m["task"] == "levels-cloze"]
    assert sorted(mixed) == [("model_reject_rate", [0.9, 0.95]), ("tvd", [0.9, 0.95])]
    cells = {s["model"]: s["metrics"]["levels-cloze"]["tvd"] for s in board["systems"] if s["kind"] == "model"}
    assert cells["mock:a"]["ci_level"] == 0.95 and cells["mock:b"]["ci_level"] == 0.9
    page = (board_dir / "index.html").read_text()
    assert "90%/95% CI, mixed levels" in page
    low, high = cells["mock:b"]["ci"]
    assert f'title="90% CI [{low:.4f}, {high:.4f}]"' in page
    assert f'<span class="level">90%</span> [{low:.4f}, {high:.4f}]' in page
    assert "brackets are bootstrap intervals at different levels (90%, 95%)" in page
    assert "95% CI [" in page and "brackets are 95% bootstrap intervals" not in page


def test_a_leaderboard_at_one_level_says_it_once(cli: Any, runs: dict[str, Any], tmp_path: Path) -> None:
    board_dir = tmp_path / "board90"
    result = cli("leaderboard", str(runs["all90"]), "-o", str(board_dir), "--no-plots")
    assert "intervals at different levels" not in result.stdout
    page = (board_dir / "index.html").read_text()
    assert "brackets are 90% bootstrap intervals." in page and "95%" not in page
    assert json.loads((board_dir / "leaderboard.json").read_text())["mixed_ci_levels"] == []


def test_the_exports_carry_the_level(cli: Any, runs: dict[str, Any], tmp_path: Path) -> None:
    cli("export", str(runs["mixed"]), "--format", "lm-eval", "-o", str(tmp_path / "lm"))
    exported = json.loads(next((tmp_path / "lm").rglob("results_*.json")).read_text())
    metrics = exported["harness"]["metrics"]["levels-cloze"]
    assert metrics["tvd"]["ci_level"] == 0.9 and metrics["entropy_model"]["ci_level"] == 0.95
    cli("export", str(runs["mixed"]), "--format", "inspect", "-o", str(tmp_path / "inspect"))
    log = json.loads(next((tmp_path / "inspect").glob("*.json")).read_text())
    scores = {s["name"]: s for s in log["results"]["scores"]}
    assert scores["tvd"]["metadata"]["ci_level"] == 0.9
    assert scores["tvd"]["metrics"]["ci_low"]["params"] == {"level": 0.9}
    assert scores["tvd"]["metrics"]["ci_high"]["params"] == {"level": 0.9}
    assert scores["entropy_model"]["metadata"]["ci_level"] == 0.95
    inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect-ai is in the test extra (.[test])")
    read = inspect_log.read_eval_log(str(next((tmp_path / "inspect").glob("*.json"))))
    assert read.results is not None
    tvd = next(s for s in read.results.scores if s.name == "tvd")
    assert tvd.metrics["ci_low"].params == {"level": 0.9}


def test_an_export_of_a_run_written_before_levels_takes_them_from_the_configuration(
    cli: Any, runs: dict[str, Any], tmp_path: Path
) -> None:
    run = tmp_path / "old-run"
    run.mkdir()
    for path in runs["all90"].iterdir():
        if path.is_file():
            (run / path.name).write_bytes(path.read_bytes())
    for path in run.glob("results*.json"):
        results = json.loads(path.read_text())
        for record in results["metrics"]["levels-cloze"].values():
            del record["ci_level"]
        path.write_text(json.dumps(results))
    cli("export", str(run), "--format", "lm-eval", "-o", str(tmp_path / "lm"))
    exported = json.loads(next((tmp_path / "lm").rglob("results_*.json")).read_text())
    assert exported["harness"]["metrics"]["levels-cloze"]["tvd"]["ci_level"] == 0.9

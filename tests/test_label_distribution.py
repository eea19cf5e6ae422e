"""A multiple-choice task without a target (a label distribution) has a headline (issue 43, part 5).

``tests/fixtures/label-votes/``: three sentences, 100 people's labels each over happy / sad / angry, and no target
option, loaded by ``generic_choice`` from a long CSV and run with ``mcq_human``, ``mcq_string`` and ``mcq_label`` on
the mock model. Without a target there is no accuracy, so the headline is each method's TVD to the people's
distribution, with the split-half human control beside it and the chance row's TVD; checked by hand here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.outputs.results import format_table, headline_rows
from tests.helpers import REPO, samples_of

FIXTURES = REPO / "tests" / "fixtures"
TASK = FIXTURES / "label-votes" / "label-votes.yaml"
#: The people's labels per sentence (happy, sad, angry), as in votes.csv.
VOTES = {"a": [80, 5, 15], "b": [2, 70, 28], "c": [10, 40, 50]}
METHODS = [
    "string.prob",
    "string.token_prob",
    "string.logprob",
    "string.prior_corrected",
    "string.surprisal_reduction",
    "label.prob",
    "label.prior_corrected",
    "label.surprisal_reduction",
]


def _tvd(p: list[float], q: list[float]) -> float:
    return 0.5 * sum(abs(a - b) for a, b in zip(p, q, strict=True))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from tests.conftest import run_main

    out = tmp_path_factory.mktemp("labels") / "runs"
    common = ["--tasks", str(TASK), "--data-dir", str(FIXTURES), "--output-dir", str(out)]
    model = run_main("run", *common, "--model", "mock:test")
    human = run_main("run", *common, "--human-only")
    return {"out": out, "model": model.stdout, "human": human.stdout}


def _results(run: dict[str, Any], which: str) -> dict[str, Any]:
    return dict(json.loads((run["out"] / which / "results.json").read_text()))


def test_the_headline_is_each_methods_tvd_beside_the_human_control_and_chance(run: dict[str, Any]) -> None:
    results = _results(run, "mock__test")
    assert results["headline"]["label-votes"] == ["chance/tvd", "human/control_tvd", *(f"{m}/tvd" for m in METHODS)]
    metrics = results["metrics"]["label-votes"]
    rows, hidden = headline_rows(results)
    assert rows[0] == ("task", "metric", "value", "95% CI", "human control", "better")
    body = {row[1]: row for row in rows[1:]}
    # One row per method and the chance row; the control sits beside each method, not in a row of its own.
    assert list(body) == ["chance/tvd", *(f"{m}/tvd" for m in METHODS)]
    control = metrics["human/control_tvd"]["value"]
    for method in METHODS:
        row = body[f"{method}/tvd"]
        assert row[2] == f"{metrics[f'{method}/tvd']['value']:.4f}"
        assert row[4] == f"{control:.4f} (human/control_tvd)" and row[5] == "lower"
    assert body["chance/tvd"][4] == ""
    assert hidden == len(metrics) - len(body) - 1
    # The printed table is that table.
    printed = run["model"].splitlines()
    assert printed[0].split()[:4] == ["task", "metric", "value", "95%"]
    assert any(line.split()[1:3] == ["string.prob/tvd", body["string.prob/tvd"][2]] for line in printed)


def test_the_tvds_by_hand(run: dict[str, Any]) -> None:
    metrics = _results(run, "mock__test")["metrics"]["label-votes"]
    # Chance: TVD of the uniform distribution against each sentence's shares, by hand:
    # a: (|1/3-.80| + |1/3-.05| + |1/3-.15|) / 2 = 0.4667; b: 0.3667; c: 0.2333; mean 0.3556.
    assert metrics["chance/tvd"]["value"] == pytest.approx((0.4667 + 0.3667 + 0.2333) / 3, abs=1e-4)
    # Each method: its choice distribution per sentence (in the samples) against the people's shares.
    samples = [json.loads(line) for line in samples_of(run["out"] / "mock__test", "label-votes").open()]
    assert [s["id"] for s in samples] == ["a", "b", "c"]
    for method in METHODS:
        by_hand = [_tvd(s["metrics"][method]["p"], [v / 100 for v in VOTES[s["id"]]]) for s in samples]
        assert metrics[f"{method}/tvd"]["value"] == pytest.approx(sum(by_hand) / 3, abs=1e-8)
    # The human control: the mean over sentences of each sentence's mean TVD between two random halves.
    control = [s["metrics"]["human"]["control_tvd"] for s in samples]
    assert metrics["human/control_tvd"]["value"] == pytest.approx(sum(control) / 3)
    assert 0.0 < metrics["human/control_tvd"]["value"] < metrics["chance/tvd"]["value"]


def test_a_human_only_run_shows_chance_and_the_control(run: dict[str, Any]) -> None:
    results = _results(run, "human")
    rows, _ = headline_rows(results)
    assert [row[1] for row in rows[1:]] == ["chance/tvd", "human/control_tvd"]
    assert "chance/tvd" in format_table(results) and "human/control_tvd" in run["human"]


def test_a_task_with_a_target_keeps_accuracy_as_its_headline(tmp_path: Path) -> None:
    from tests.conftest import run_main

    data = tmp_path / "data"
    (data / "label-votes").mkdir(parents=True)
    csv = (FIXTURES / "label-votes" / "votes.csv").read_text().splitlines()
    target = {"a": "happy", "b": "sad", "c": "angry"}
    rows = [csv[0] + ",gold"] + [f"{line},{target[line.split(',')[0]]}" for line in csv[1:]]
    (data / "label-votes" / "votes.csv").write_text("\n".join(rows) + "\n")
    task = tmp_path / "targeted.yaml"
    task.write_text(TASK.read_text().replace("  human:", "  target: gold\n  human:"))
    run_main(
        "run",
        "--tasks",
        str(task),
        "--data-dir",
        str(data),
        "--output-dir",
        str(tmp_path / "runs"),
        "--model",
        "mock:test",
    )
    results = json.loads((tmp_path / "runs" / "mock__test" / "results.json").read_text())
    headline = results["headline"]["label-votes"]
    assert "string.prob/acc" in headline and "chance/acc" in headline
    assert not any(name.endswith("/tvd") for name in headline)

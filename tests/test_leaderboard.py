"""``harness leaderboard`` on finished runs (a model on Provo and on an ASSET decoding sweep, and the human-only
reference): rows, columns and the human control row carry the runs' exact numbers; results that cannot be compared
are refused, or merged and marked when asked; the figures and the page are written. The runs are the mock model's
(``saved_mock_runs``, fast); the rows-and-columns check is repeated on real SmolLM2 runs (``saved_runs``, slow)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.leaderboard import build
from tests.helpers import source_of

MODEL = "mock:test"


def _slug(model: str) -> str:
    return model.replace(":", "__")


def _results(saved_runs: Path, model: str = MODEL) -> list[Path]:
    slug = _slug(model)
    return [saved_runs / "cloze" / slug / "results.json", saved_runs / "gen" / slug / "results.json",
            saved_runs / "human" / "results.json"]  # fmt: skip


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _row(board: dict[str, Any], label: str) -> dict[str, Any]:
    return next(s for s in board["systems"] if s["label"] == label)


@pytest.mark.parametrize(
    ("runs", "model"),
    [
        pytest.param("saved_mock_runs", MODEL, id="mock"),
        pytest.param("saved_runs", "hf:smollm2-135m", marks=pytest.mark.slow, id="smollm2"),
    ],
)
def test_rows_columns_and_the_human_control_hold_the_runs_numbers(
    runs: str, model: str, request: pytest.FixtureRequest, cli: Any, tmp_path: Path
) -> None:
    saved_runs: Path = request.getfixturevalue(runs)
    cloze, gen, human = (_read(p) for p in _results(saved_runs, model))
    proc = cli("leaderboard", *map(str, _results(saved_runs, model)), "-o", str(tmp_path / "board"))
    assert "2 systems, 2 tasks (provo, asset-test)" in proc.stdout
    board = _read(tmp_path / "board" / "leaderboard.json")
    # Provo's sampling at temperature 1 and ASSET's ancestral variant are the same system: one row.
    assert [s["label"] for s in board["systems"]] == [f"{model} · ancestral", f"{model} · top_p=0.9", "human"]
    ancestral, top_p, people = (_row(board, s["label"]) for s in board["systems"])
    assert ancestral["metrics"]["provo"]["tvd"] == cloze["metrics"]["provo"]["tvd"]
    assert ancestral["metrics"]["asset-test"]["cosine_w1_mh"] == gen["metrics"]["asset-test@ancestral"]["cosine_w1_mh"]
    assert top_p["metrics"]["asset-test"]["cosine_w1_mh"] == gen["metrics"]["asset-test@top_p=0.9"]["cosine_w1_mh"]
    assert "provo" not in top_p["metrics"]
    # Human-side numbers are not model columns; the human row shows each control under its model metric's column.
    assert "tvd_human_halves" not in ancestral["metrics"]["provo"]
    assert people["metrics"]["provo"]["tvd"] == human["metrics"]["provo"]["tvd_human_halves"]
    assert people["metrics"]["provo"]["ece_model_corpus"] == human["metrics"]["provo"]["ece_oracle_corpus"]
    assert people["metrics"]["asset-test"]["unigram_w1_mh"] == human["metrics"]["asset-test"]["unigram_control_w1"]
    assert people["metrics"]["provo"]["acc_human_majority"] == human["metrics"]["provo"]["acc_human_majority"]
    assert people["sources"]["provo"] == str(source_of(saved_runs / "human", "provo"))
    # Task provenance, directions and the headline column.
    provo = board["tasks"]["provo"]
    assert provo["version"] == cloze["versions"]["provo"] and provo["data_hash"] == cloze["task_hashes"]["provo"]
    assert provo["instances"] == 3 and provo["instances_in_data"] == 2687 and provo["samples_per_input"] == 30
    assert provo["headline"] == "tvd" and board["tasks"]["asset-test"]["headline"] == "unigram_w1_mh"
    assert provo["columns"]["tvd"] == {
        "higher_is_better": False,
        "human_control": True,
        "group": False,
        "ci_levels": [0.95],
        "mixed_ci_levels": False,
    }
    assert provo["columns"]["model_reject_rate"]["human_control"] is False
    assert board["mixed"] == [] and board["harness_version"] == cloze["library_versions"]["harness"]
    # Files: the page, and the three kinds of figure.
    assert board["files"]["html"] == "index.html"
    plots = set(board["files"]["plots"])
    assert {"plots/provo-tvd-density.png", "plots/asset-test-w1.png"} <= plots
    assert f"plots/provo-top15-{model.replace(':', '_')}_ancestral.png" in plots
    for plot in plots:
        assert (tmp_path / "board" / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_results_that_cannot_be_compared_are_refused_or_marked(saved_mock_runs: Path, cli: Any, tmp_path: Path) -> None:
    paths = _results(saved_mock_runs)
    # The same model run given twice from two places: one system, two sources.
    twice = tmp_path / "twice"
    shutil.copytree(paths[0].parent, twice)
    with pytest.raises(HarnessError, match="appears in both"):
        build([paths[0], twice / "results.json"], tmp_path / "x", plots=False, html=False)
    # Another task version (hand-edited copy of a real run): refused, then merged with a mark when allowed.
    invocation = source_of(twice, "provo")
    edited = _read(invocation)
    edited["versions"]["provo"] = 2
    edited["config"]["model_name"] = "other"
    invocation.write_text(json.dumps(edited))
    with pytest.raises(
        HarnessError, match=r"task provo: task version differs: 2 in \S*twice/results_\S*.json; 1 in the other 2 files"
    ):
        build([paths[0], paths[2], twice / "results.json"], tmp_path / "x", plots=False, html=False)
    proc = cli("leaderboard", str(paths[0]), str(twice / "results.json"), "-o", str(tmp_path / "x"), check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--allow-mixed" in proc.stderr
    board = build([paths[0], paths[2], twice / "results.json"], tmp_path / "mixed", allow_mixed=True)
    assert board["mixed"] == [{"task": "provo", "source": str(invocation), "differs": ["task version 2, others 1"]}]
    assert _row(board, "mock:other · ancestral")["mixed"] == {"provo": ["task version 2, others 1"]}
    assert "mixed" not in _row(board, f"{MODEL} · ancestral")
    assert "merged although not comparable" in (tmp_path / "mixed" / "index.html").read_text()
    with pytest.raises(HarnessError, match="field 'metrics' missing"):
        (tmp_path / "bad.json").write_text("{}")
        build([tmp_path / "bad.json"], tmp_path / "x")

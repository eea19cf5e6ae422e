"""``harness score``: a finished run scored again from its samples files, without a model.

Finished runs (Provo, and an ASSET decoding sweep; a few instances each) are scored again: unchanged, they give the
original results and samples exactly; with scorers removed, added back or given other arguments, only those
scorers' numbers change; and input that cannot be re-scored is refused with a one-line message. The runs are the
mock model's (``saved_mock_runs``, fast); the unchanged-run check is repeated on real SmolLM2 runs (``saved_runs``,
slow), whose stored outputs are a real model's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.outputs.results import strip_volatile
from harness.run.rescoring import rescore
from tests.helpers import samples_of, shared_data_dir, source_of

SLUG = "mock__test"
SWEEP = ("asset-test@ancestral", "asset-test@top_p=0.9")


def _comparable(results: dict[str, Any]) -> dict[str, Any]:
    out = strip_volatile(results)
    out.pop("sources", None)
    out["config"] = {k: v for k, v in out["config"].items() if k != "rescored_from"}
    out["run_config"] = {
        task: {k: v for k, v in config.items() if k != "rescored_from"} for task, config in out["run_config"].items()
    }
    return out


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


@pytest.mark.parametrize(
    ("runs", "slug"),
    [
        pytest.param("saved_mock_runs", SLUG, id="mock"),
        pytest.param("saved_runs", "hf__smollm2-135m", marks=pytest.mark.slow, id="smollm2"),
    ],
)
def test_an_unchanged_run_scores_to_the_same_results_and_samples(
    runs: str, slug: str, request: pytest.FixtureRequest, cli: Any, tmp_path: Path
) -> None:
    saved: Path = request.getfixturevalue(runs)
    data = str(shared_data_dir())
    for group, tasks in (("cloze", ("provo",)), ("gen", SWEEP)):
        run_dir = saved / group / slug
        original = json.loads((run_dir / "results.json").read_text())
        out = tmp_path / group
        proc = cli("score", str(run_dir), "--output-dir", str(out), "--data-dir", data)
        assert f"every task's latest result: {out / 'results.json'})" in proc.stdout
        again = json.loads((out / "results.json").read_text())
        assert set(again["metrics"]) == set(tasks)
        assert _comparable(again) == _comparable(original)
        assert again["config"]["rescored_from"] == str(source_of(run_dir, tasks[0]))
        for task in tasks:
            assert _lines(samples_of(out, task)) == _lines(samples_of(run_dir, task))
    # The human-only run too, and by default next to the run, never over it.
    human, path = rescore(saved / "human", data_dir=data)
    assert path == saved / "human" / "rescored" / "results.json"
    assert _comparable(human) == _comparable(json.loads((saved / "human" / "results.json").read_text()))


def test_scorers_removed_added_or_reconfigured_change_only_their_numbers(saved_mock_runs: Path, tmp_path: Path) -> None:
    data = str(shared_data_dir())
    cloze = saved_mock_runs / "cloze" / SLUG
    original = json.loads((cloze / "results.json").read_text())["metrics"]["provo"]
    # One samples file, ECE with one bin instead of 10: then ECE is |mean confidence - accuracy|.
    ece1, _ = rescore(
        samples_of(cloze, "provo"), output_dir=tmp_path / "ece", scorer_args={"ece.n_bins": 1}, data_dir=data
    )
    after = ece1["metrics"]["provo"]
    rows = [json.loads(line)["metrics"] for line in _lines(samples_of(cloze, "provo"))]
    conf = sum(r["conf_model"] for r in rows) / len(rows)
    acc = sum(r["correct_model_corpus"] for r in rows) / len(rows)
    assert after["ece_model_corpus"]["value"] == pytest.approx(abs(conf - acc), abs=1e-12)
    assert {k: v for k, v in after.items() if not k.startswith("ece_")} == {
        k: v for k, v in original.items() if not k.startswith("ece_")
    }
    assert ece1["configs"]["provo"]["scorers"][2] == {"name": "ece", "args": {"n_bins": 1, "n_splits": 10}}
    # An exact list keeps the recorded arguments.
    exact, _ = rescore(cloze, output_dir=tmp_path / "exact", scorers="ece,tvd", data_dir=data)
    assert [s["name"] for s in exact["configs"]["provo"]["scorers"]] == ["ece", "tvd"]
    assert exact["metrics"]["provo"]["tvd"] == original["tvd"]
    assert "entropy_model" not in exact["metrics"]["provo"]

    # Probes removed from the decoding sweep, then added back to the re-scored run: the original numbers return.
    # (The semantic probe is the costly one: removed too, it is computed once here, for "back".)
    gen = saved_mock_runs / "gen" / SLUG
    swept = json.loads((gen / "results.json").read_text())["metrics"]
    fewer, _ = rescore(gen, output_dir=tmp_path / "fewer", scorers="-lexical,-semantic", data_dir=data)
    for task in SWEEP:
        assert not any(k.startswith(("unigram_", "cosine_")) for k in fewer["metrics"][task])
        assert fewer["metrics"][task]["pos_bigram_w1_mh"] == swept[task]["pos_bigram_w1_mh"]
    back, _ = rescore(tmp_path / "fewer", output_dir=tmp_path / "back", scorers="+semantic,+lexical", data_dir=data)
    for task in SWEEP:
        assert back["metrics"][task] == swept[task]
        assert [s["name"] for s in back["configs"][task]["scorers"]] == ["syntactic", "semantic", "lexical"]


def test_what_cannot_be_rescored_is_refused_with_one_line(saved_mock_runs: Path, cli: Any, tmp_path: Path) -> None:
    data = str(shared_data_dir())
    cloze = saved_mock_runs / "cloze" / SLUG
    with pytest.raises(HarnessError, match="request parameter"):
        rescore(cloze, output_dir=tmp_path / "x", scorer_args={"n_samples": 10}, data_dir=data)
    with pytest.raises(HarnessError, match="either names"):
        rescore(cloze, output_dir=tmp_path / "x", scorers="tvd,+ece", data_dir=data)
    with pytest.raises(HarnessError, match="a scorer for 'sample_words' requests"):
        rescore(cloze, output_dir=tmp_path / "x", scorers="+lexical", data_dir=data)
    with pytest.raises(HarnessError, match="'provo@x' is not in"):
        rescore(cloze, output_dir=tmp_path / "x", tasks=["provo@x"], data_dir=data)
    # Data that changed since the run: the stored outputs answer other inputs.
    copy = tmp_path / "copy"
    shutil.copytree(cloze, copy)
    invocation = source_of(copy, "provo")
    results = json.loads(invocation.read_text())
    results["task_hashes"]["provo"] = "sha256:" + "0" * 64
    invocation.write_text(json.dumps(results))
    with pytest.raises(HarnessError, match="differs from the run's"):
        rescore(copy, data_dir=data)
    # A samples file that lost instances.
    copy = tmp_path / "copy-gen"
    shutil.copytree(saved_mock_runs / "gen" / SLUG, copy)
    samples = samples_of(copy, "asset-test@ancestral")
    lines = _lines(samples)
    samples.write_text("\n".join(lines[:2]) + "\n")
    with pytest.raises(HarnessError, match="not the 3 the task's loader gives"):
        rescore(copy, data_dir=data)
    assert not (copy / "rescored").exists()
    lone = tmp_path / "lone" / "samples_provo.jsonl"
    lone.parent.mkdir()
    lone.write_text("{}\n")
    proc = cli("score", str(lone), check=False)
    assert proc.returncode == 2
    expected = f"error: {lone.parent}: no results.json or results_<date>.json here; is this a run folder?"
    assert proc.stderr.strip().splitlines() == [expected]

"""``gap_predictors`` (appendix B): the context features, and the ARD regression recovering a known linear effect
from synthetic per-context values; then a finished mock run through ``harness score``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness.instances import ClozeInstance
from harness.requests import SampleWordsResponse
from harness.scorers.gap_predictors import GapPredictorsScorer, last_word_pos
from tests.conftest import CliResult
from tests.helpers import rescored_mock_provo


def test_last_word_pos() -> None:
    assert last_word_pos(("DET", "NOUN", "VERB", "PUNCT")) == "VERB"
    assert last_word_pos(("ADP", "DET")) == "DET"
    assert last_word_pos(("PUNCT",)) == "PUNCT"


def test_features_of_one_context() -> None:
    context = "With schools still closed, cars still buried and streets still"
    instance = ClozeInstance(id="1-1", context=context, target="blocked", human_counts={"closed": 2, "icy": 2})
    scorer = GapPredictorsScorer(n_splits=3)
    response = SampleWordsResponse(counts={"closed": 4}, rejected={}, n_requested=4)
    scorer.prepare([instance], [response])
    row = scorer.score(instance, response, np.random.default_rng(0))
    features = row["gap_features"]
    assert features["context_length"] == 10
    assert features["ends_with_punctuation"] == 0
    assert features["last_pos"] == "ADV"  # "still"
    assert features["entropy_human"] == 1.0 and features["entropy_model"] == 0.0
    # Halves of 2 guesses from closed x2, icy x2; the model says closed only: TVD to a half is 0, 0.5 or 1.
    assert 0.0 <= row["gap_target"] <= 1.0
    comma = ClozeInstance(id="1-2", context="With schools still closed,", target="cars", human_counts={"cars": 3})
    scorer.prepare([comma], [None])
    assert scorer.score(comma, response, np.random.default_rng(0))["gap_features"]["ends_with_punctuation"] == 1
    assert scorer.score(comma, None, np.random.default_rng(0)) == {}


def _row(rng: np.random.Generator, pos: str) -> dict:
    entropy_human = rng.normal(3.0, 1.0)
    tvd_oracle = rng.uniform(0.2, 0.6)
    return {
        # The true model: TVD rises 0.05 per bit of human entropy, and by 0.1 after a determiner.
        "gap_target": 0.3 + 0.05 * entropy_human + (0.1 if pos == "DET" else 0.0) + rng.normal(0, 0.01),
        "gap_features": {
            "entropy_human": entropy_human,
            "entropy_model": rng.normal(4.0, 1.0),
            "tvd_oracle": tvd_oracle,
            "context_length": int(rng.integers(1, 60)),
            "ends_with_punctuation": int(rng.random() < 0.2),
            "last_pos": pos,
        },
    }


def test_regression_recovers_a_known_effect() -> None:
    """Standardised features: the entropy coefficient is the effect per standard deviation, 0.05 x sd; the DET
    indicator's is 0.1; the features that play no part are pruned or have an interval around 0."""
    rng = np.random.default_rng(3)
    rows = [_row(rng, pos) for pos in ["NOUN"] * 150 + ["DET"] * 100 + ["VERB"] * 50 + ["ADJ"] * 5]
    scorer = GapPredictorsScorer(min_pos_count=10)
    metrics = scorer.aggregate(rows, np.random.default_rng(0))
    sd = float(np.std([r["gap_features"]["entropy_human"] for r in rows]))
    coef = metrics["gap_coef_entropy_human"]
    assert coef.value == pytest.approx(0.05 * sd, abs=0.003)
    assert coef.ci_low is not None and coef.ci_high is not None and coef.ci_low < 0.05 * sd < coef.ci_high
    assert metrics["gap_r2"].value > 0.95 and metrics["gap_r2"].n == 305
    report = scorer.report([], rows, metrics)
    assert report is not None
    by_name = {c["feature"]: c for c in report["coefficients"]}
    assert report["baseline_pos"] == "NOUN"
    assert "last_pos=ADJ" not in by_name  # 5 contexts: below min_pos_count
    assert by_name["last_pos=DET"]["coef"] == pytest.approx(0.1, abs=0.01)
    for irrelevant in ("entropy_model", "tvd_oracle", "context_length", "ends_with_punctuation", "last_pos=VERB"):
        c = by_name[irrelevant]
        assert c["pruned"] or c["ci"][0] <= 0.0 <= c["ci"][1] or abs(c["coef"]) < 0.003, c
    assert report["text"].startswith("ARD regression of TVD(model, half of the people) on 305 contexts")


def test_too_few_contexts_give_no_fit() -> None:
    rng = np.random.default_rng(0)
    scorer = GapPredictorsScorer()
    assert scorer.aggregate([_row(rng, "NOUN") for _ in range(9)], np.random.default_rng(0)) == {}
    assert scorer.report([], [], {}) is None


def test_rescoring_a_finished_run(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    results, _ = rescored_mock_provo(cli, tmp_path, 40, 50, "+gap_predictors")
    metrics = results["metrics"]["provo"]
    assert metrics["gap_r2"]["n"] == 40
    assert {f"gap_coef_{f}" for f in ("entropy_human", "entropy_model", "tvd_oracle", "context_length")} <= set(metrics)
    report = results["reports"]["provo"]["gap_predictors"]
    assert report["contexts"] == 40 and sum(report["pos_counts"].values()) == 40

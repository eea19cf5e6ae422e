"""``sample_size`` (appendix C.1 of the Provo study): the TVD a run with fewer samples would measure, on cases whose
expectations are computed by hand, and on a finished mock run through ``harness score``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.instances import ClozeInstance
from harness.requests import SampleWordsResponse
from harness.scorers.sample_size import SampleSizeScorer, size_list
from tests.conftest import CliResult
from tests.helpers import rescored_mock_provo


def _instance(human: dict[str, int]) -> ClozeInstance:
    return ClozeInstance(id="t-1", context="The cat sat on the", target="mat", human_counts=human)


def _response(counts: dict[str, int]) -> SampleWordsResponse:
    return SampleWordsResponse(counts=counts, rejected={}, n_requested=sum(counts.values()))


def test_expectations_on_a_hand_case() -> None:
    """Model words a a b b, humans all say a: the TVD of all four samples is 0.5.

    Two of them without replacement: {a, a} (1/6, TVD 0), {b, b} (1/6, TVD 1), {a, b} (4/6, TVD 0.5): mean TVD 0.5,
    mean |TVD - 0.5| = 1/6. Three: {a, a, b} (1/2, TVD 1/3), {a, b, b} (1/2, TVD 2/3): mean 0.5, error 1/6 again
    (and always exactly 1/6, so its squared error is exactly 1/36).
    Four or more: no subsample smaller than the sample, no value."""
    scorer = SampleSizeScorer(sizes=[2, 3, 4], n_repeats=4000)
    row = scorer.score(_instance({"a": 7}), _response({"a": 2, "b": 2}), np.random.default_rng(0))
    assert row["sample_size_n"] == 4
    for k in (2, 3):
        assert row[f"tvd_at_n{k}"] == pytest.approx(0.5, abs=0.02)
        assert row[f"tvd_error_at_n{k}"] == pytest.approx(1 / 6, abs=0.02)
        assert row[f"tvd_bias_at_n{k}"] == pytest.approx(0.0, abs=0.02)
    # squared errors: 0.5^2 with probability 1/3 at 2; always (1/6)^2 at 3
    assert row["tvd_sq_error_at_n2"] == pytest.approx(1 / 12, abs=0.01)
    assert row["tvd_sq_error_at_n3"] == pytest.approx(1 / 36, abs=1e-12)
    assert row["tvd_at_n4"] is None and row["tvd_error_at_n4"] is None


def test_one_word_model_has_no_sampling_error() -> None:
    """Every subsample of a single repeated word is that word: TVD equals the full value, error exactly 0."""
    scorer = SampleSizeScorer(sizes=[5], n_repeats=3)
    row = scorer.score(_instance({"the": 3, "a": 1}), _response({"the": 50}), np.random.default_rng(1))
    assert row["tvd_at_n5"] == 0.25 and row["tvd_error_at_n5"] == 0.0 and row["tvd_bias_at_n5"] == 0.0


def test_bias_is_upwards_and_shrinks() -> None:
    """Humans and model share one uniform distribution over 20 words: small samples look further from the humans."""
    words = {f"w{i}": 50 for i in range(20)}
    scorer = SampleSizeScorer(sizes=[10, 40, 400], n_repeats=200)
    row = scorer.score(_instance({w: 2 for w in words}), _response(words), np.random.default_rng(2))
    assert row["tvd_bias_at_n10"] > row["tvd_bias_at_n40"] > row["tvd_bias_at_n400"] > 0
    assert row["tvd_error_at_n10"] > row["tvd_error_at_n40"] > row["tvd_error_at_n400"]


def test_aggregate_and_report() -> None:
    scorer = SampleSizeScorer(sizes=[2, 10], n_repeats=50)
    rows = [scorer.score(_instance({"a": 3}), _response({"a": 6, "b": 6}), np.random.default_rng(i)) for i in range(3)]
    rows.append(scorer.score(_instance({"a": 3}), _response({"a": 1, "b": 1}), np.random.default_rng(9)))
    rows.append({})  # a human-only row
    metrics = scorer.aggregate(rows, np.random.default_rng(0))
    assert metrics["tvd_at_n2"].n == 3  # the instance with 2 samples has no value at 2
    assert metrics["tvd_error_at_n2"].higher_is_better is False and metrics["tvd_at_n2"].higher_is_better is None
    assert metrics["tvd_at_n10"].n == 3
    report = scorer.report([], rows, metrics)
    assert report is not None
    assert [c["n"] for c in report["curve"]] == [2, 10]
    assert report["curve"][0]["abs_error"] == metrics["tvd_error_at_n2"].value
    assert report["full_n_median"] == 12.0
    assert report["text"].startswith("TVD against the all-samples value, by sample size:\n    2 samples: TVD ")


def test_sizes_option() -> None:
    assert size_list("40;10") == (10, 40)
    assert size_list([100, 10, 10]) == (10, 100)
    assert size_list(20) == (20,)
    for bad in ("x", [], [0], "10;-2"):
        with pytest.raises(ValueError):
            size_list(bad)
    with pytest.raises(HarnessError, match=r"sizes"):
        SampleSizeScorer(sizes="ten")


def test_rescoring_a_finished_run(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """``harness score RUN --scorers +sample_size`` adds the curve without asking the model again."""
    results, _ = rescored_mock_provo(cli, tmp_path, 6, 100, "+sample_size", "sample_size.n_repeats=5")
    metrics = results["metrics"]["provo"]
    assert {"tvd_error_at_n10", "tvd_error_at_n20", "tvd_error_at_n40"} <= set(metrics)
    assert not {"tvd_at_n100", "tvd_at_n200"} & set(metrics)  # the mock's ~99 accepted words: no subsample of 100
    assert [c["n"] for c in results["reports"]["provo"]["sample_size"]["curve"]] == [10, 20, 40]
    assert metrics["tvd_error_at_n10"]["value"] > metrics["tvd_error_at_n40"]["value"]

"""``replacement`` (the k% replacement experiment): disjoint human groups, the mixed curve and its KS match, on
cases checked by hand; and on a finished mock run through ``harness score``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from harness.instances import ClozeInstance
from harness.requests import SampleWordsResponse
from harness.scorers.replacement import ReplacementScorer, disjoint_groups, mixed_curve
from tests.conftest import CliResult
from tests.helpers import rescored_mock_provo


def _instance(human: dict[str, int], i: int = 1) -> ClozeInstance:
    return ClozeInstance(id=f"t-{i}", context="The cat sat on the", target="mat", human_counts=human)


def _response(counts: dict[str, int]) -> SampleWordsResponse:
    return SampleWordsResponse(counts=counts, rejected={}, n_requested=sum(counts.values()))


def test_disjoint_groups() -> None:
    counts = {"a": 3, "b": 2, "c": 1}
    for seed in range(20):
        a, b = disjoint_groups(counts, 3, np.random.default_rng(seed))
        assert sum(a.values()) == sum(b.values()) == 3
        merged = {w: a.get(w, 0) + b.get(w, 0) for w in counts}
        assert merged == counts  # 2 x 3 = all six guesses, none twice
    a, b = disjoint_groups({"a": 10}, 2, np.random.default_rng(0))
    assert a == b == {"a": 2}


def test_mixed_curve_by_hand() -> None:
    """Ten contexts, model TVD 0.9 everywhere, human TVD 0.1 everywhere. Replacing the first k% in ``order`` makes
    k/10 of the values 0.1: the mean is 0.9 - 0.8 k / 100, the KS statistic (share of contexts that differ) is
    1 - k / 100, and at k = 100 the samples are identical (p = 1)."""
    model_b, a_b = np.full(10, 0.9), np.full(10, 0.1)
    curve = mixed_curve(model_b, a_b, np.arange(10), [0, 30, 100], alpha=0.05)
    assert [(k, round(mean, 10), round(stat, 10)) for k, mean, stat, _, _ in curve] == [
        (0, 0.9, 1.0),
        (30, 0.66, 0.7),
        (100, 0.1, 0.0),
    ]
    assert [match for *_, match in curve] == [False, False, True]
    assert curve[2][3] == 1.0
    # A model whose TVDs are the humans' already matches at k = 0.
    same = mixed_curve(a_b, a_b, np.arange(10), [0, 100], alpha=0.05)
    assert same[0][4] is True and same[0][2] == 0.0


def test_scorer_on_a_model_far_from_and_one_equal_to_the_humans() -> None:
    """Forty contexts where every human says 'mat': a model that says 'mat' too has TVD 0 to every group (as the
    humans' groups have to each other) and needs no replacement (k = 0); a model that never says it has TVD 1 and
    matches only once enough contexts are replaced."""
    instances = [_instance({"mat": 40}, i) for i in range(40)]
    scorer = ReplacementScorer(oracle_sizes=[10, 20], n_seeds=3, step=10)
    for words, expected_k, gap in (({"mat": 100}, 0.0, 0.0), ({"rug": 100}, None, 1.0)):
        rows = [scorer.score(inst, _response(words), np.random.default_rng(i)) for i, inst in enumerate(instances)]
        assert len(rows[0]["replacement_o10"]) == 3  # one [TVD(model, B), TVD(A, B)] per seed
        metrics = scorer.aggregate(rows, np.random.default_rng(0))
        assert metrics["replacement_tvd_gap_o10"].value == gap and metrics["replacement_tvd_gap_o20"].value == gap
        if expected_k is not None:
            assert metrics["replacement_k_o10"].value == expected_k
        else:
            # 40 values 1.0 against 40 values 0.0: the KS statistic is the share not replaced, and the exact
            # two-sample test at n = 40 first accepts when at most 12 of 40 (k = 70%) are left (computed with scipy).
            assert 60 <= metrics["replacement_k_o10"].value <= 80
        report = scorer.report(instances, rows, metrics)
        assert report is not None
        points = report["curves"]["10"]["points"]
        assert [p["k"] for p in points] == list(range(0, 101, 10))
        assert points[-1]["share_matching"] == 1.0 and points[-1]["tvd"] == 0.0
        assert report["curves"]["20"]["contexts"] == 40


def test_contexts_with_too_few_guesses_are_left_out() -> None:
    scorer = ReplacementScorer(oracle_sizes=[10], n_seeds=2)
    row = scorer.score(_instance({"mat": 19}), _response({"mat": 5}), np.random.default_rng(0))
    assert row == {"replacement_o10": None}
    assert scorer.score(_instance({"mat": 19}), None, np.random.default_rng(0)) == {}
    assert scorer.aggregate([row], np.random.default_rng(0)) == {}


def test_rescoring_a_finished_run(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    results, _ = rescored_mock_provo(cli, tmp_path, 30, 50, "+replacement", "replacement.n_seeds=3")
    metrics = results["metrics"]["provo"]
    assert 0 <= metrics["replacement_k_o10"]["value"] <= 100 and metrics["replacement_k_o10"]["n"] == 3
    assert metrics["replacement_tvd_gap_o20"]["value"] > 0  # the mock is further from people than people are
    curve = results["reports"]["provo"]["replacement"]["curves"]["10"]["points"]
    assert curve[-1]["share_matching"] == 1.0
    assert curve[0]["tvd"] > curve[-1]["tvd"]

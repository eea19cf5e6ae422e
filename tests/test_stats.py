"""Bootstrap confidence intervals: values, standard errors, degenerate inputs, determinism, pairing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.scoring.stats import bootstrap_metric, mean_metric, split_spread


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_mean_metric_value_and_stderr() -> None:
    m = mean_metric([1.0, 2.0, 3.0, 4.0], True, rng())
    assert m.value == 2.5
    # sample std = sqrt((2.25 + 0.25 + 0.25 + 2.25) / 3) = sqrt(5/3); stderr = that / sqrt(4)
    assert m.stderr == pytest.approx(math.sqrt(5 / 3) / 2)
    assert m.n == 4
    assert m.higher_is_better is True
    assert m.ci_low is not None and m.ci_high is not None
    assert 1.0 <= m.ci_low <= 2.5 <= m.ci_high <= 4.0


def test_mean_metric_is_deterministic_given_rng() -> None:
    values = np.random.default_rng(5).random(30)
    assert mean_metric(values, False, rng(7)) == mean_metric(values, False, rng(7))


def test_mean_metric_ci_matches_normal_approximation_on_large_sample() -> None:
    values = np.random.default_rng(1).normal(size=2000)
    m = mean_metric(values, None, rng(2))
    assert m.ci_low is not None and m.ci_high is not None and m.stderr is not None
    width = m.ci_high - m.ci_low
    assert width == pytest.approx(2 * 1.96 * m.stderr, rel=0.15)


@pytest.mark.filterwarnings("error")
def test_mean_metric_degenerate_inputs() -> None:
    one = mean_metric([0.25], False, rng())
    assert (one.value, one.ci_low, one.ci_high, one.stderr, one.n) == (0.25, 0.25, 0.25, None, 1)
    const = mean_metric([0.5] * 10, False, rng())
    assert (const.value, const.ci_low, const.ci_high, const.stderr) == (0.5, 0.5, 0.5, 0.0)
    empty = mean_metric([], False, rng())
    assert math.isnan(empty.value) and empty.n == 0 and empty.ci_low is None


def test_mean_metric_passes_spread_and_checks_arguments() -> None:
    assert mean_metric([1.0, 2.0], True, rng(), spread=0.1).spread == 0.1
    with pytest.raises(ValueError):
        mean_metric([1.0, 2.0], True, rng(), n_resamples=0)
    with pytest.raises(ValueError):
        mean_metric([1.0, 2.0], True, rng(), confidence=1.0)
    with pytest.raises(ValueError):
        mean_metric([1.0, float("nan")], True, rng())


def test_bootstrap_metric_value_and_determinism() -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    m = bootstrap_metric([a], lambda x: float(np.median(x)), False, rng(3), n_resamples=200)
    assert m.value == 3.0
    assert m.n == 5
    assert m.ci_low is not None and m.ci_high is not None and m.stderr is not None and m.stderr > 0
    assert 1.0 <= m.ci_low <= m.ci_high <= 10.0
    assert bootstrap_metric([a], lambda x: float(np.median(x)), False, rng(3), n_resamples=200) == m


@pytest.mark.filterwarnings("error")
def test_bootstrap_metric_resamples_columns_jointly() -> None:
    # a - b is 0 row by row; only a paired resample keeps the difference of means at exactly 0.
    a = np.arange(20, dtype=float)
    m = bootstrap_metric([a, a.copy()], lambda x, y: float(np.mean(x - y)), False, rng())
    assert (m.value, m.ci_low, m.ci_high, m.stderr) == (0.0, 0.0, 0.0, 0.0)


def test_bootstrap_metric_keeps_extra_axes_whole() -> None:
    per_split = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])  # instances x splits
    m = bootstrap_metric([per_split], lambda x: float(x.mean()), None, rng())
    assert (m.value, m.ci_low, m.ci_high) == (0.5, 0.5, 0.5)


@pytest.mark.filterwarnings("error")
def test_bootstrap_metric_degenerate_inputs_and_errors() -> None:
    one = bootstrap_metric([np.array([0.7])], lambda x: float(x.mean()), True, rng())
    assert (one.value, one.ci_low, one.ci_high, one.stderr, one.n) == (0.7, 0.7, 0.7, None, 1)
    empty = bootstrap_metric([np.array([])], lambda x: float(x.mean()), True, rng())
    assert math.isnan(empty.value) and empty.n == 0
    with pytest.raises(ValueError):
        bootstrap_metric([np.zeros(3), np.zeros(4)], lambda x, y: 0.0, True, rng())
    with pytest.raises(ValueError):
        bootstrap_metric([], lambda: 0.0, True, rng())


def test_split_spread() -> None:
    # sample std of [1, 3] = sqrt(((1-2)^2 + (3-2)^2) / 1) = sqrt(2)
    assert split_spread([1.0, 3.0]) == pytest.approx(math.sqrt(2))
    assert split_spread([0.4]) == 0.0
    assert split_spread([]) is None

"""Confidence intervals for aggregated metrics.

Every metric the harness reports carries a bootstrap confidence interval over instances, so that two models (or a
model and the human reference) are only called different when the intervals say so. Two helpers:

- ``mean_metric``: the mean of per-instance values, with ``stderr = sample std / sqrt(n)`` and a percentile
  bootstrap CI from ``scipy.stats.bootstrap``.
- ``bootstrap_metric``: any statistic of several per-instance columns that is not a mean (e.g. ECE, which bins
  confidences across instances), with the instances resampled jointly (one index draw per resample is applied to
  every column, so pairs stay paired). ``stderr`` is the standard deviation of the bootstrap distribution.

Both record the interval's level (``confidence``) on the metric as ``ci_level``, which results.json, the tables,
the leaderboard and the exports show. Both are deterministic given the ``numpy.random.Generator`` passed in.
Degenerate inputs do not warn or produce NaN: with one value, or values that are all equal, the CI is
``(value, value)``; with no values the metric's value is NaN and ``n`` is 0 (the caller had nothing to aggregate).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import scipy.stats
from numpy.typing import ArrayLike, NDArray

from harness.scoring.base import Metric

T = TypeVar("T")

# scipy >= 1.15 names the generator argument ``rng``; older releases call it ``random_state``.
_RNG_KWARG = "rng" if "rng" in inspect.signature(scipy.stats.bootstrap).parameters else "random_state"


def _check_args(n_resamples: int, confidence: float) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def _empty(higher_is_better: bool | None, spread: float | None) -> Metric:
    return Metric(value=float("nan"), higher_is_better=higher_is_better, n=0, spread=spread)


def _with_interval(
    value: float,
    higher_is_better: bool | None,
    n: int,
    spread: float | None,
    confidence: float,
    resample: Callable[[], tuple[float, float, float] | None],
) -> Metric:
    """The bootstrap tail both helpers share: ``value`` over ``n >= 1`` instances as a ``Metric`` with its interval.

    One instance: the interval is ``(value, value)`` and there is no standard error, and ``resample`` is not called
    (no random number is drawn). Otherwise ``resample()`` returns ``(low, high, stderr)``, or None when the values
    (or the resampled statistics) are all equal: the interval is then ``(value, value)`` with a standard error of 0.
    """
    if n == 1:
        return Metric(value, higher_is_better, value, value, None, n, spread, confidence)
    interval = resample()
    if interval is None:
        return Metric(value, higher_is_better, value, value, 0.0, n, spread, confidence)
    low, high, stderr = interval
    return Metric(value, higher_is_better, low, high, stderr, n, spread, confidence)


def mean_metric(
    values: Sequence[float] | ArrayLike,
    higher_is_better: bool | None,
    rng: np.random.Generator,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    spread: float | None = None,
) -> Metric:
    """The mean of ``values`` with its standard error and a percentile bootstrap CI.

    ``spread`` is passed through to the metric (used where the values are themselves averages over human splits).
    """
    _check_args(n_resamples, confidence)
    data = np.asarray(values, dtype=np.float64).ravel()
    n = int(data.size)
    if n == 0:
        return _empty(higher_is_better, spread)
    if not np.all(np.isfinite(data)):
        raise ValueError("mean_metric got a non-finite value")

    def resample() -> tuple[float, float, float] | None:
        if np.all(data == data[0]):
            return None
        stderr = sample_std(data) / math.sqrt(n)
        result = scipy.stats.bootstrap(
            (data,),
            np.mean,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="percentile",
            vectorized=True,
            **{_RNG_KWARG: rng},
        )
        return float(result.confidence_interval.low), float(result.confidence_interval.high), stderr

    return _with_interval(float(np.mean(data)), higher_is_better, n, spread, confidence, resample)


def sample_std(values: NDArray[Any]) -> float:
    """The sample standard deviation (ddof 1), exactly rounded sums (``math.fsum``).

    ``np.std`` sums with SIMD lanes whose split depends on the array's memory alignment, so the same numbers can
    give results one unit in the last place apart in two processes; results must not depend on where an array sits.

    >>> sample_std(np.array([1.0, 2.0, 3.0, 4.0]))
    1.2909944487358056
    """
    data = [float(x) for x in np.ravel(values)]
    mean = math.fsum(data) / len(data)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in data) / (len(data) - 1))


def bootstrap_metric(
    columns: Sequence[ArrayLike],
    statistic: Callable[..., float],
    higher_is_better: bool | None,
    rng: np.random.Generator,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    spread: float | None = None,
) -> Metric:
    """``statistic(*columns)`` with a paired percentile bootstrap CI over instances.

    Each column is an array whose first axis is the instance (further axes, e.g. human splits, are kept whole).
    A resample draws ``n`` instance indices with replacement and applies them to every column, so the statistic
    of each resample sees matched rows. ``stderr`` is the standard deviation of the resampled statistics.
    """
    _check_args(n_resamples, confidence)
    if not columns:
        raise ValueError("bootstrap_metric needs at least one column")
    arrays: list[NDArray[Any]] = [np.asarray(column) for column in columns]
    n = int(arrays[0].shape[0]) if arrays[0].ndim else 0
    if any(a.ndim == 0 or a.shape[0] != n for a in arrays):
        raise ValueError("bootstrap_metric columns must share their first (instance) axis")
    if n == 0:
        return _empty(higher_is_better, spread)
    value = float(statistic(*arrays))

    def resample() -> tuple[float, float, float] | None:
        indices = rng.integers(0, n, size=(n_resamples, n))
        boot = np.array([float(statistic(*(a[idx] for a in arrays))) for idx in indices])
        if np.all(boot == boot[0]):
            return None
        alpha = (1.0 - confidence) / 2.0
        low, high = (float(x) for x in np.quantile(boot, [alpha, 1.0 - alpha]))
        return low, high, sample_std(boot)

    return _with_interval(value, higher_is_better, n, spread, confidence, resample)


def split_half(items: Sequence[T], rng: np.random.Generator) -> tuple[list[T], list[T]]:
    """One random split of ``items`` (e.g. an input's human references) into two disjoint halves: A has
    ``len(items) // 2`` of them, B the rest, each half in the items' original order.

    It draws exactly one ``rng.permutation(len(items))``: A is the items at the permutation's first
    ``len(items) // 2`` positions, B those at the others. A split-half human control calls it once per split with
    the instance's ``rng`` (scores a second human population: half B against half A, as the model against all).

    >>> split_half(["a", "b", "c", "d", "e"], np.random.default_rng(0))
    (['c', 'e'], ['a', 'b', 'd'])
    """
    order = rng.permutation(len(items))
    half = len(items) // 2
    return [items[int(i)] for i in np.sort(order[:half])], [items[int(i)] for i in np.sort(order[half:])]


def split_spread(per_split: Sequence[float] | ArrayLike) -> float | None:
    """Standard deviation (ddof=1) of a metric across human splits; 0.0 for one split, None for none.

    It shows how much a split-averaged number depends on which guesses happened to fall in which half.
    """
    data = np.asarray(per_split, dtype=np.float64).ravel()
    if data.size == 0:
        return None
    if data.size == 1:
        return 0.0
    return float(np.std(data, ddof=1))


def homogeneity_pvalue(
    a: Mapping[str, int] | Mapping[Any, int],
    b: Mapping[str, int] | Mapping[Any, int],
    *,
    min_expected: float = 5.0,
    min_categories: int = 2,
) -> float | None:
    """Chi-square test of homogeneity of two samples of categorical outcomes (counts per outcome), e.g. the words of
    two samplers that should draw from the same distribution.

    Outcomes whose expected count is below ``min_expected`` in either sample are pooled into one category, so the
    chi-square approximation holds. None when fewer than ``min_categories`` categories remain (one dominant outcome:
    nothing to test).
    """
    na, nb = sum(a.values()), sum(b.values())
    rows, pooled = [], [0, 0]
    for key in sorted(set(a) | set(b), key=str):
        total = a.get(key, 0) + b.get(key, 0)
        if min(na, nb) * total / (na + nb) >= min_expected:
            rows.append([a.get(key, 0), b.get(key, 0)])
        else:
            pooled[0] += a.get(key, 0)
            pooled[1] += b.get(key, 0)
    if sum(pooled):
        rows.append(pooled)
    if len(rows) < max(2, min_categories):
        return None
    return float(scipy.stats.chi2_contingency(np.array(rows).T).pvalue)

"""The binomial likelihoods of the target rate: the harness's and the follow-up study's (Tsvilodub et al., 2024).

Why its own module: they are the one part of the choice metrics that only items with a target take part in, and the
follow-up study's conventions (a rate clipped at exactly 0 or 1, no smoothing) live here once for the model's fit
(:mod:`harness.scorers.choice.common`) and the human control (:mod:`harness.scorers.choice.human`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from scipy.special import gammaln


class TargetCounts(Protocol):
    """An item's human side as the binomials read it (``harness.scorers.choice.common.ItemHuman``)."""

    @property
    def phenomenon(self) -> str: ...

    @property
    def counts(self) -> tuple[float, ...]: ...

    @property
    def target(self) -> int | None: ...


#: The follow-up study's clip of a target-choice rate of exactly 0 or 1 (``epsilon`` in ``testing-stats.R``).
PAPER_RATE_EPSILON = 1e-9


def binomial_loglik(k: int, n: int, theta: float) -> float:
    """log Binomial(k | n, theta), coefficient included."""
    if not 0.0 <= theta <= 1.0:
        raise ValueError(f"binomial rate must be in [0, 1], got {theta}")
    coefficient = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    if theta in (0.0, 1.0):
        hit = (theta == 0.0 and k == 0) or (theta == 1.0 and k == n)
        return float(coefficient) if hit else float("-inf")
    return float(coefficient + k * math.log(theta) + (n - k) * math.log1p(-theta))


def clip_rate(rate: float) -> float:
    """The follow-up study's only adjustment of a rate: exactly 0 becomes 1e-9, exactly 1 becomes 1 - 1e-9."""
    if rate == 0.0:
        return PAPER_RATE_EPSILON
    if rate == 1.0:
        return 1.0 - PAPER_RATE_EPSILON
    return rate


def paper_binomial(humans: Sequence[TargetCounts], argmax_target: Sequence[Sequence[int]]) -> float:
    """``ll_binomial`` as Tsvilodub et al. (2024) compute it (``variant: paper``).

    Per phenomenon: the model's rate is the share of its argmax choices that are the target, over every item and
    option order (``argmax_target`` holds, per item, [orders whose argmax is the target, orders]; for free
    generation, [answers classified as the target, answers]), clipped by :func:`clip_rate` and nothing else;
    the log-likelihood is log Binomial(k | N, rate), k the human choices of the target over the phenomenon's
    items and N all their human choices. Summed over phenomena.
    """
    by_phenomenon: dict[str, list[int]] = {}
    for human, (hits, n_orders) in zip(humans, argmax_target, strict=True):
        if human.target is None:  # not called for such items (fit_metrics leaves the binomial out): a guard
            continue
        k, n, model_hits, model_n = by_phenomenon.setdefault(human.phenomenon, [0, 0, 0, 0])
        by_phenomenon[human.phenomenon] = [
            k + int(human.counts[human.target]),
            n + int(sum(human.counts)),
            model_hits + int(hits),
            model_n + int(n_orders),
        ]
    return float(
        sum(binomial_loglik(k, n, clip_rate(hits / n_orders)) for k, n, hits, n_orders in by_phenomenon.values())
    )

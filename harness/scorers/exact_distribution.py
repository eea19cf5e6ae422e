"""Shared plumbing of the scorers of ``word_distribution`` runs: the response, and TVD with a residual bound.

Why a bound: the exact search reports word probabilities ``q`` that are lower bounds, with ``r`` of the mass
unresolved (``harness.kinds.word_distribution``). The true distribution is ``p = q + e`` with ``e >= 0`` and
``sum(e) = r``, spread over words in a way the search did not see. Counting the unresolved mass as one outcome no
human named gives ``T = (sum_w |q_w - h_w| + r) / 2``; then ``T - r <= TVD(p, h) <= T`` for every way ``e`` can
be spread (the triangle inequality, word by word), and both ends are attained by some spread. So a TVD is
reported as the interval ``[T - r, T]``; with ``r = 0`` it is exact.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from harness.api import Metric, WordDistributionResponse, bootstrap_metric, metric_rngs
from harness.scorers.calibration import expected_calibration_error
from harness.scorers.cloze import ClozeScorer


def bounded_tvd(probs: Mapping[str, float], residual: float, human: Mapping[str, int | float]) -> tuple[float, float]:
    """``(lower, upper)`` bounds of the TVD between the true distribution and ``human`` (counts or shares).

    >>> bounded_tvd({"a": 0.5, "b": 0.3}, 0.2, {"a": 1, "b": 1})
    (0.0, 0.2)
    """
    total = math.fsum(human.values())
    if total <= 0:
        raise ValueError("the human distribution is empty")
    words = set(probs) | set(human)
    gap = math.fsum(abs(probs.get(w, 0.0) - human.get(w, 0) / total) for w in words)
    upper = min(1.0, (gap + residual) / 2)
    return max(0.0, upper - residual), upper


class WordDistributionScorer(ClozeScorer):
    """Base of the scorers that read ``word_distribution`` responses."""

    request_kinds: ClassVar[frozenset[str]] = frozenset({"word_distribution"})

    def distribution(self, response: Any) -> WordDistributionResponse:
        """The response as a ``WordDistributionResponse``; a stored record (``to_record`` dict) is accepted too."""
        return self.response_as(response, WordDistributionResponse, "word_distribution")

    def top1_metrics(
        self, rows: list[dict[str, Any]], who: str, names: tuple[str, str], n_bins: int, rng: np.random.Generator
    ) -> dict[str, Metric]:
        """ECE and accuracy of top-1 predictions (``conf_{who}``, ``correct_{who}`` per row) under ``names``, each
        with a bootstrap interval over instances (one generator per metric name, ``metric_rngs``)."""
        if not rows:
            return {}
        conf = np.array([float(row[f"conf_{who}"]) for row in rows])
        correct = np.array([bool(row[f"correct_{who}"]) for row in rows])
        rngs = metric_rngs(rng)
        kw: dict[str, Any] = {"n_resamples": self.n_resamples, "confidence": self.confidence}
        ece, accuracy = names
        return {
            ece: bootstrap_metric(
                [conf, correct], lambda c, k: expected_calibration_error(c, k, n_bins), False, rngs(ece), **kw
            ),
            accuracy: bootstrap_metric([correct], lambda k: float(np.mean(k)), True, rngs(accuracy), **kw),
        }

"""The importance-sampling estimate of a human's loss and perplexity from relative judgments, with the paper's
uncertainty (the method and its caveats are in this package's docstring)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from harness.analyses.relative_judgments.rounds import ALLOWED_ANSWERS, Round, RoundsError, check_positions
from harness.errors import shorten

#: How many standard errors the interval spans on each side (the paper's error bars are two standard errors).
INTERVAL_SES = 2.0


@dataclass(frozen=True)
class PositionEstimate:
    """The estimate at one (context, true token): ``loss = -log H(t) = log mean(w)`` in nats."""

    position_id: str
    true_token: str
    n_rounds: int
    #: ``mean(w)``, the estimate of ``1 / H(t)``.
    inverse_probability: float
    loss: float
    #: The standard error of ``loss`` from the sampled tokens (delta method, ddof 0); None with one round.
    se_sampling: float | None
    #: ``-log G(t)``, when the rounds give ``generator_true_prob``.
    generator_loss: float | None = None

    @property
    def probability(self) -> float:
        """The estimate of ``H(t)``."""
        return 1.0 / self.inverse_probability

    def to_json(self) -> dict[str, Any]:
        return {
            "position_id": self.position_id,
            "true_token": self.true_token,
            "n_rounds": self.n_rounds,
            "loss": self.loss,
            "probability": self.probability,
            "se_sampling": self.se_sampling,
            "generator_loss": self.generator_loss,
        }


@dataclass(frozen=True)
class Estimate:
    """The human's loss (nats per token) and perplexity over the judged positions, with the paper's uncertainty."""

    positions: list[PositionEstimate]
    n_rounds: int
    rounded: bool
    allowed: tuple[float, ...]
    judges: list[str]
    loss: float
    #: Standard error over positions (ddof 0); None with a single position.
    se_positions: float | None
    #: Standard error from the sampled tokens alone, positions held fixed; None if a position has one round.
    se_sampling: float | None
    #: ``mean_q(loss_q + log G(t_q))``: the human's loss minus the generator's on the same positions (the quantity
    #: the paper's error bars are computed on), with its standard error; None without ``generator_true_prob``.
    difference_from_generator: float | None = None
    se_difference: float | None = None
    generator_loss: float | None = None
    source: str = "<rounds>"

    @property
    def n_positions(self) -> int:
        return len(self.positions)

    @property
    def perplexity(self) -> float:
        return math.exp(self.loss)

    @property
    def interval(self) -> tuple[float, float] | None:
        """The loss plus or minus :data:`INTERVAL_SES` standard errors over positions (nats)."""
        if self.se_positions is None:
            return None
        return self.loss - INTERVAL_SES * self.se_positions, self.loss + INTERVAL_SES * self.se_positions

    @property
    def perplexity_interval(self) -> tuple[float, float] | None:
        interval = self.interval
        return None if interval is None else (math.exp(interval[0]), math.exp(interval[1]))

    @property
    def difference_interval(self) -> tuple[float, float] | None:
        if self.difference_from_generator is None or self.se_difference is None:
            return None
        half = INTERVAL_SES * self.se_difference
        return self.difference_from_generator - half, self.difference_from_generator + half

    def to_json(self) -> dict[str, Any]:
        interval, ppl_interval = self.interval, self.perplexity_interval
        difference = None
        if self.difference_from_generator is not None:
            diff_interval = self.difference_interval
            difference = {
                "loss": self.difference_from_generator,
                "se": self.se_difference,
                "interval": list(diff_interval) if diff_interval else None,
                "generator_loss": self.generator_loss,
            }
        return {
            "source": self.source,
            "rounded": self.rounded,
            "allowed_answers": list(self.allowed) if self.rounded else None,
            "n_rounds": self.n_rounds,
            "n_positions": self.n_positions,
            "judges": self.judges,
            "loss": self.loss,
            "perplexity": self.perplexity,
            "se_positions": self.se_positions,
            "se_sampling": self.se_sampling,
            "interval": {
                "method": f"loss +- {INTERVAL_SES:g} standard errors over positions (Shlegeris et al. 2022)",
                "loss": list(interval) if interval else None,
                "perplexity": list(ppl_interval) if ppl_interval else None,
            },
            "difference_from_generator": difference,
            "units": "nats per token",
            "positions": [p.to_json() for p in self.positions],
        }


def round_to_allowed(judgments: ArrayLike, allowed: Sequence[float] = ALLOWED_ANSWERS) -> NDArray[np.float64]:
    """Each judgment mapped to the nearest allowed answer; a tie goes to the smaller answer (``argmin`` over the
    sorted answers, as the authors' ``round_to_neirest``).

    >>> round_to_allowed([0.0, 0.04, 0.06, 0.5, 0.72, 0.96, 1.0]).tolist()
    [0.01, 0.01, 0.1, 0.5, 0.7, 0.99, 0.99]
    """
    answers = np.sort(np.asarray(allowed, dtype=np.float64))
    values = np.asarray(judgments, dtype=np.float64)
    return answers[np.argmin(np.abs(values[..., None] - answers), axis=-1)]


def importance_weights(
    rounds: Sequence[Round], *, rounded: bool = False, allowed: Sequence[float] = ALLOWED_ANSWERS
) -> NDArray[np.float64]:
    """``w = (1 - r) / (r * G(s))`` for each round, each an unbiased estimate of ``1 / H(t)`` for a calibrated
    judge. Without ``rounded`` a judgment of 0 (an infinite weight) is a :class:`RoundsError` naming its line."""
    judgments = np.array([r.judgment for r in rounds], dtype=np.float64)
    if rounded:
        judgments = round_to_allowed(judgments, allowed)
    else:
        zero = np.flatnonzero(judgments == 0.0)
        if zero.size:
            bad = rounds[int(zero[0])]
            raise RoundsError(
                f"{bad.where('judgment')}: 0 makes the estimate infinite (the weight (1 - r) / r is unbounded); the "
                "paper's answers run from 1% to 99%: give a judgment above 0, or use --rounded"
            )
    g = np.array([r.generator_prob for r in rounds], dtype=np.float64)
    weights: NDArray[np.float64] = (1.0 - judgments) / (judgments * g)
    return weights


def estimate(
    rounds: Sequence[Round], *, rounded: bool = False, allowed: Sequence[float] = ALLOWED_ANSWERS, source: str = ""
) -> Estimate:
    """The human's loss and perplexity over the positions of ``rounds`` (see the package docstring for the formula
    and the uncertainty). ``rounded`` maps each judgment to the nearest of ``allowed`` first."""
    if not rounds:
        raise RoundsError(f"{source or 'rounds'}: no rounds to estimate from")
    check_positions(rounds)
    weights = importance_weights(rounds, rounded=rounded, allowed=allowed)
    order: dict[str, list[int]] = {}
    for i, r in enumerate(rounds):
        order.setdefault(r.position_id, []).append(i)
    positions = []
    for pid, idx in order.items():
        w = weights[idx]
        mean = float(np.mean(w))
        head = rounds[idx[0]]
        if mean == 0.0:
            raise RoundsError(
                f"{head.where('judgment')}: every judgment of position '{shorten(pid, 40)}' (first round here) is 1, "
                "so the estimate of H(t) is infinite; use --rounded, or judgments below 1"
            )
        se = float(np.std(w) / math.sqrt(len(w)) / mean) if len(w) > 1 else None
        true_prob = head.generator_true_prob
        positions.append(
            PositionEstimate(
                position_id=pid,
                true_token=head.true_token,
                n_rounds=len(w),
                inverse_probability=mean,
                loss=math.log(mean),
                se_sampling=se,
                generator_loss=None if true_prob is None else -math.log(true_prob),
            )
        )
    losses = np.array([p.loss for p in positions])
    n = len(positions)
    se_positions = float(np.std(losses) / math.sqrt(n)) if n > 1 else None
    per_position_se = [p.se_sampling for p in positions]
    se_sampling = None
    if all(s is not None for s in per_position_se):
        se_sampling = float(math.sqrt(sum((s / n) ** 2 for s in per_position_se if s is not None)))
    difference = se_difference = generator_loss = None
    generator_losses = [p.generator_loss for p in positions]
    if all(g is not None for g in generator_losses):
        g_losses = np.array(generator_losses, dtype=np.float64)
        deltas = losses - g_losses
        difference = float(np.mean(deltas))
        se_difference = float(np.std(deltas) / math.sqrt(n)) if n > 1 else None
        generator_loss = float(np.mean(g_losses))
    judges = sorted({r.judge for r in rounds if r.judge is not None})
    return Estimate(
        positions=positions,
        n_rounds=len(rounds),
        rounded=rounded,
        allowed=tuple(float(a) for a in allowed),
        judges=judges,
        loss=float(np.mean(losses)),
        se_positions=se_positions,
        se_sampling=se_sampling,
        difference_from_generator=difference,
        se_difference=se_difference,
        generator_loss=generator_loss,
        source=source or rounds[0].source,
    )

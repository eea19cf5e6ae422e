"""Human perplexity from relative judgments: the importance-sampling estimator of Shlegeris, Roger, Chan and McLean,
"Language models are better than humans at next-token prediction" (2022, arXiv 2212.11281, section 4).

Why this way: a person cannot write down a distribution over a 50,000-token vocabulary, so their perplexity cannot be
read off directly. They can, however, say how much more likely one of two candidate tokens is. In each *round* a
judge sees a context and two tokens in random order: the true next token ``t`` and a token ``s`` sampled from a
generator language model ``G``, and states the probability ``r`` that ``t`` is the true one, choosing among a fixed
set of answers (:data:`ALLOWED_ANSWERS`). If the judge's own next-token distribution is ``H`` and the judge is
calibrated, ``r = H(t) / (H(t) + H(s))``, so ``H(s) / H(t) = (1 - r) / r``; and since
``E_{s~G}[H(s) / G(s)] = sum_s H(s) = 1`` (over the support of ``G``),

    1 / H(t) = E_{s~G}[ (1 - r_s) / (r_s * G(s)) ].

Each round's weight ``w = (1 - r) / (r * G(s))`` is an unbiased estimate of ``1 / H(t)``; a position's rounds are
averaged with equal weight (whoever judged them, even under different generators), and its loss is
``-log H(t) = log mean(w)``. The loss reported is the mean over positions, each position weighted equally, in nats;
perplexity is its exponential. This is what the authors' released analysis code computes
(``FabienRoger/lm-game-analysis-main``, ``perplexity_results_analysis.py``, ``get_approx``).

Uncertainty, as the authors computed it (``print_approx`` and ``plot_approx`` there), with numpy's default
``ddof=0`` standard deviations:

- ``se_positions``: the standard deviation of the per-position losses over ``sqrt(n_positions)``; the interval is the
  loss plus or minus two of these (the paper's error bars), and the perplexity interval its exponential;
- ``se_sampling``: the part due to the sampled tokens alone (the positions held fixed), by the delta method:
  ``sqrt(sum_q (sd(w_q) / sqrt(K_q) / mean(w_q))**2) / n_positions``.

Two properties to keep in mind, both shown by ``benchmarks/validate_relative_judgments.py``: ``log mean(w)`` is
biased *low* for a small number of rounds per position (Jensen's inequality; the loss is underestimated), and how
many rounds are enough depends on the generator: the weight ``H(s) / (H(t) G(s))`` is large exactly where ``G`` puts
much less mass than ``H``, which is where ``G`` rarely samples, so a generator far from the judge (in either
direction) needs many rounds. With ``G = H`` every weight equals ``1 / H(t)`` and the estimate is exact.

Judgments of 0 and 1 (outside the paper's answers, which run from 1% to 99%): with ``rounded`` they are mapped to
the nearest allowed answer (1% and 99%); without it, a judgment of 0 makes the weight infinite and is refused, and
a judgment of 1 gives the weight 0 (a position whose every judgment is 1 is refused: its estimate of ``H(t)`` would
be infinite).

The format of a rounds file and the command are described in ``docs/human-perplexity.md``; the core never imports a
model, so ``harness human-perplexity`` runs without one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from harness.errors import HarnessError, shorten, shorten_repr
from harness.files import parse_json_line, read_utf8, write_json

#: The answers the paper's judges chose from (11 values; the authors' ``percentages_1``): the probability, in
#: percent, that the given token is the true one: 1%, 10%, 20%, ..., 90%, 99%.
ALLOWED_ANSWERS: tuple[float, ...] = (0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99)

#: Fields every round must have, and what each holds (also the order they are checked in).
REQUIRED_FIELDS: dict[str, str] = {
    "position_id": "which (context, true token) the round belongs to",
    "context": "the text shown before the two tokens",
    "true_token": "the token that really follows the context, as shown",
    "sampled_token": "the token drawn from the generator, as shown",
    "generator_prob": "G(sampled_token | context), in (0, 1]",
    "judgment": "the stated probability that true_token is the true one, in [0, 1]",
}
#: Optional fields: who judged, the generator's probability of the true token (for the paper's generator-relative
#: report), and free-form metadata the estimator ignores.
OPTIONAL_FIELDS: dict[str, str] = {
    "judge": "who judged (a string)",
    "generator_true_prob": "G(true_token | context), in (0, 1]; the same on every round of a position",
    "meta": "a JSON object, kept and ignored",
}

#: How many standard errors the interval spans on each side (the paper's error bars are two standard errors).
INTERVAL_SES = 2.0


class RoundsError(HarnessError):
    """A rounds file holds a bad round; the message names the file, the line and the field."""


@dataclass(frozen=True)
class Round:
    """One judged pair, with where it was read from (so a later error can still name the file and line)."""

    position_id: str
    context: str
    true_token: str
    sampled_token: str
    generator_prob: float
    judgment: float
    judge: str | None = None
    generator_true_prob: float | None = None
    #: The round's ``meta`` object, kept for the caller (the estimator never reads it).
    meta: dict[str, Any] | None = None
    source: str = "<rounds>"
    line: int = 0

    def where(self, field: str) -> str:
        """``FILE: line N: field 'F'``, the prefix of every message about this round."""
        return f"{self.source}: line {self.line}: field '{field}'"


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


# ------------------------------------------------------------------------------------------------------- reading


def _kind(value: Any) -> str:
    """What a JSON value is, for a message: ``a string``, ``an integer``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _string(record: dict[str, Any], field: str, where: str, *, non_empty: bool = False) -> str:
    value = record[field]
    if not isinstance(value, str):
        raise RoundsError(f"{where}: field '{field}': expected a string, got {_kind(value)} {shorten_repr(value)}")
    if non_empty and not value:
        raise RoundsError(f"{where}: field '{field}': expected a non-empty string")
    return value


def _probability(record: dict[str, Any], field: str, where: str, *, zero_allowed: bool) -> float:
    """A number in ``[0, 1]`` (``zero_allowed``) or ``(0, 1]``: booleans, strings, NaN and infinities refused."""
    value = record[field]
    expected = f"a probability in {'[0, 1]' if zero_allowed else '(0, 1]'}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RoundsError(f"{where}: field '{field}': expected {expected}, got {_kind(value)} {shorten_repr(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or number < 0.0 or number > 1.0 or (number == 0.0 and not zero_allowed):
        raise RoundsError(f"{where}: field '{field}': expected {expected}, got {shorten_repr(value)}")
    return number


def parse_round(record: Any, source: str, line: int) -> Round:
    """One round from a parsed JSON line; every problem is a :class:`RoundsError` naming file, line and field."""
    where = f"{source}: line {line}"
    if not isinstance(record, dict):
        raise RoundsError(f"{where}: expected a JSON object (one round), got {_kind(record)}")
    accepted = [*REQUIRED_FIELDS, *OPTIONAL_FIELDS]
    for field in record:
        if field not in accepted:
            raise RoundsError(f"{where}: field '{shorten(field, 40)}': unknown field (accepted: {', '.join(accepted)})")
    for field, meaning in REQUIRED_FIELDS.items():
        if field not in record:
            raise RoundsError(f"{where}: field '{field}': missing ({meaning})")
    judge = record.get("judge")
    if judge is not None:
        judge = _string(record, "judge", where)
    true_prob = None
    if record.get("generator_true_prob") is not None:
        true_prob = _probability(record, "generator_true_prob", where, zero_allowed=False)
    meta = record.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise RoundsError(f"{where}: field 'meta': expected a JSON object, got {_kind(meta)}")
    return Round(
        position_id=_string(record, "position_id", where, non_empty=True),
        context=_string(record, "context", where),
        true_token=_string(record, "true_token", where),
        sampled_token=_string(record, "sampled_token", where),
        generator_prob=_probability(record, "generator_prob", where, zero_allowed=False),
        judgment=_probability(record, "judgment", where, zero_allowed=True),
        judge=judge,
        generator_true_prob=true_prob,
        meta=meta,
        source=source,
        line=line,
    )


def check_positions(rounds: Sequence[Round]) -> None:
    """Every round of a position must show the same context and true token (a position *is* that pair), and give
    ``generator_true_prob`` alike: the same value on each of its rounds, or on none of them."""
    first: dict[str, Round] = {}
    for r in rounds:
        head = first.setdefault(r.position_id, r)
        if head is r:
            continue
        for field in ("context", "true_token", "generator_true_prob"):
            if getattr(r, field) != getattr(head, field):
                raise RoundsError(
                    f"{r.where(field)}: differs from line {head.line}, the first round of position "
                    f"'{shorten(r.position_id, 40)}' (every round of a position shows the same context and true token"
                    f"{' and gives the same generator_true_prob' if field == 'generator_true_prob' else ''})"
                )
    given = [r for r in first.values() if r.generator_true_prob is not None]
    if given and len(given) != len(first):
        lacking = next(r for r in first.values() if r.generator_true_prob is None)
        raise RoundsError(
            f"{lacking.where('generator_true_prob')}: missing here but given on line {given[0].line}; give it for "
            "every position or for none"
        )


def read_rounds(path: Path) -> list[Round]:
    """Every round of a JSON-lines rounds file (blank lines skipped), checked field by field and position by
    position. A bad line is a one-line :class:`RoundsError` naming the file, the line and the field."""
    path = Path(path)
    text = read_utf8(path, "rounds file")
    rounds = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = parse_json_line(line, path, line_no)
        except HarnessError as exc:
            raise RoundsError(str(exc)) from None
        rounds.append(parse_round(record, str(path), line_no))
    if not rounds:
        raise RoundsError(f"{path}: no rounds (expected one JSON object per line; see docs/human-perplexity.md)")
    check_positions(rounds)
    return rounds


# ---------------------------------------------------------------------------------------------------- estimating


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
    """The human's loss and perplexity over the positions of ``rounds`` (see the module docstring for the formula
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


# ------------------------------------------------------------------------------------------------------ reporting


def _interval_text(interval: tuple[float, float] | None, fmt: str) -> str:
    return "(no interval from one position)" if interval is None else f"[{interval[0]:{fmt}}, {interval[1]:{fmt}}]"


def format_estimate(est: Estimate) -> str:
    """The estimate as a few lines of text: counts, loss and perplexity with their intervals, the two standard
    errors, and the difference from the generator where the rounds allow it."""
    counts = sorted({p.n_rounds for p in est.positions})
    per = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    judged = "judgments rounded to the nearest allowed answer" if est.rounded else "judgments as given"
    judges = f", {len(est.judges)} judge{'s' if len(est.judges) != 1 else ''}" if est.judges else ""
    lines = [
        f"{est.source}: {est.n_rounds:,} rounds at {est.n_positions:,} positions "
        f"({per} per position{judges}); {judged}",
        f"loss        {est.loss:.4f} nats  {_interval_text(est.interval, '.4f')}  "
        f"(+- {INTERVAL_SES:g} standard errors over positions)",
        f"perplexity  {est.perplexity:.3f}  {_interval_text(est.perplexity_interval, '.3f')}",
    ]
    se_pos = "n/a" if est.se_positions is None else f"{est.se_positions:.4f}"
    se_smp = "n/a (a position has one round)" if est.se_sampling is None else f"{est.se_sampling:.4f}"
    lines.append(f"standard error over positions {se_pos} nats; from the sampled tokens alone {se_smp} nats")
    if est.difference_from_generator is not None:
        lines.append(
            f"minus the generator's loss ({est.generator_loss:.4f} nats on these positions): "
            f"{est.difference_from_generator:+.4f} nats {_interval_text(est.difference_interval, '+.4f')}"
        )
    return "\n".join(lines)


def command(path: Path, *, rounded: bool = False, json_out: Path | None = None) -> int:
    """``harness human-perplexity ROUNDS.jsonl [--rounded] [--json OUT]``: read, estimate, print, write."""
    est = estimate(read_rounds(path), rounded=rounded, source=str(path))
    print(format_estimate(est))
    if json_out is not None:
        write_json(Path(json_out), est.to_json())
        print(f"wrote {json_out}")
    return 0


def dumps_round(r: Round) -> str:
    """One round as a line of the rounds format (the optional fields only when set): how rounds files are written."""
    record: dict[str, Any] = {
        "position_id": r.position_id,
        "context": r.context,
        "true_token": r.true_token,
        "sampled_token": r.sampled_token,
        "generator_prob": r.generator_prob,
        "judgment": r.judgment,
    }
    if r.judge is not None:
        record["judge"] = r.judge
    if r.generator_true_prob is not None:
        record["generator_true_prob"] = r.generator_true_prob
    if r.meta is not None:
        record["meta"] = r.meta
    return json.dumps(record, ensure_ascii=False)

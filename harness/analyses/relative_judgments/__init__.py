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

Modules: ``rounds`` (the rounds file: reading, checking, writing), ``estimator`` (the estimate and its uncertainty),
``report`` (the text report and the ``harness human-perplexity`` command).
"""

from harness.analyses.relative_judgments.estimator import (
    INTERVAL_SES,
    Estimate,
    PositionEstimate,
    estimate,
    importance_weights,
    round_to_allowed,
)
from harness.analyses.relative_judgments.report import command, format_estimate
from harness.analyses.relative_judgments.rounds import (
    ALLOWED_ANSWERS,
    OPTIONAL_FIELDS,
    REQUIRED_FIELDS,
    Round,
    RoundsError,
    check_positions,
    dumps_round,
    parse_round,
    read_rounds,
)

__all__ = [
    "ALLOWED_ANSWERS",
    "INTERVAL_SES",
    "OPTIONAL_FIELDS",
    "REQUIRED_FIELDS",
    "Estimate",
    "PositionEstimate",
    "Round",
    "RoundsError",
    "check_positions",
    "command",
    "dumps_round",
    "estimate",
    "format_estimate",
    "importance_weights",
    "parse_round",
    "read_rounds",
    "round_to_allowed",
]

"""``mcq_rating``: the model rates each option on five-point scales; the score is its expected rating.

For each option and each scale the prompt (``rating_template``) shows the scenario and the option, and lists
the scale's five answer phrases; each phrase r = 1..5 is scored as a continuation (``" " + phrase``) and the
probabilities of the five are renormalised: q_r = softmax_r(log P(phrase_r | prompt)). The option's score on the
scale is the probability-weighted mean rating, sum_r r * q_r, in [1, 5]. Each scale is a system
(``rating.likely``, ...), all four are run and reported. The phrases are those of the follow-up study (Tsvilodub
et al., 2024): ``very unlikely, unlikely, neutral, likely, very likely`` and the same for the others.

The rating prompt shows a single option, so option order does not enter it: every order gives the same
scores (the queries are sent once), and ratings have no spread over orders.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.special import softmax

from harness.api import (
    ChoiceInstance,
    Instance,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    Option,
    Options,
    render_rating_prompt,
)
from harness.scorers.choice.common import ChoiceScorer, order_count

#: The four scales, each named by its concept, with its answer phrases from 1 (lowest) to 5.
SCALES: dict[str, tuple[str, ...]] = {
    "likely": ("very unlikely", "unlikely", "neutral", "likely", "very likely"),
    "appropriate": ("very inappropriate", "inappropriate", "neutral", "appropriate", "very appropriate"),
    "plausible": ("very implausible", "implausible", "neutral", "plausible", "very plausible"),
    "possible": ("very impossible", "impossible", "neutral", "possible", "very possible"),
}


def scale_list(value: Any) -> tuple[str, ...]:
    items = value.split(";") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items or any(s not in SCALES for s in items):
        raise ValueError(f"expected a list of scales among {', '.join(SCALES)}, got {value!r}")
    return tuple(str(s) for s in items)


def expected_rating(phrase_logprobs: list[float]) -> float:
    """sum_r r * softmax(logprobs)_r, ratings numbered from 1."""
    q = softmax(np.asarray(phrase_logprobs, dtype=np.float64))
    return float(np.dot(np.arange(1, len(q) + 1), q))


class RatingScorer(ChoiceScorer):
    name: ClassVar[str] = "mcq_rating"
    method: ClassVar[str] = "rating"
    requested_kinds: ClassVar[frozenset[str]] = frozenset({"loglikelihood"})
    systems: dict[str, str] = {scale: "rating" for scale in SCALES}
    options: ClassVar[Options] = Options(
        Option("scales", scale_list, tuple(SCALES), f"rating scales among {', '.join(SCALES)}", "list of str"),
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.scales: tuple[str, ...] = self.args["scales"]
        # Only the scales asked for are systems of this instance.
        self.systems = {scale: "rating" for scale in self.scales}

    def requests(self, instance: Instance, params: dict[str, Any], seed: int) -> dict[str, Any]:
        item = self.item(instance)
        out: dict[str, Any] = {}
        for scale in self.scales:
            phrases = SCALES[scale]
            for k, text in enumerate(item.options):
                prompt = render_rating_prompt(item, params, text, phrases)
                for r, phrase in enumerate(phrases, start=1):
                    out[f"{scale}/{k}/{r}"] = LoglikelihoodRequest(prompt, " " + phrase)
        return out

    def item_scores(self, instance: ChoiceInstance, answers: dict[str, Any]) -> dict[str, list[list[float]]]:
        n_orders = order_count(self.task_params)
        scores: dict[str, list[list[float]]] = {}
        for scale in self.scales:
            row = []
            for k in range(len(instance.options)):
                logprobs = [_total(answers[f"{scale}/{k}/{r}"]) for r in range(1, len(SCALES[scale]) + 1)]
                row.append(expected_rating(logprobs))
            scores[scale] = [row] * n_orders
        return scores


def _total(answer: Any) -> float:
    if not isinstance(answer, LoglikelihoodResponse):
        raise ValueError(f"expected a loglikelihood answer, got {answer!r}")
    return answer.total

"""``token_level``: the next-word comparison one level down, on next tokens (Ilia & Aziz 2024, appendix D).

The model's next-token distribution (one forward pass after the context) against the distribution of the first
tokens of the human guesses. Each guess is spelled as it would follow the context (``" " + word`` after a context
that ends without whitespace, so the first token carries the word-initial space the tokenizer puts there); the
first tokens and their model probabilities come from the ``word_distribution`` response (``Surface``). Only the
model's probabilities of the tokens some human started with are needed: the rest of its mass counts in full, so the
TVD is exact, ``(sum_t |p_t - h_t| + 1 - sum_t p_t) / 2`` over the humans' tokens ``t``.

Per instance: ``tvd_token_model``; ``tvd_token_oracle``, the same TVD between two random halves of the guesses
(mean over ``n_splits``), the human control row; ``conf_token_model`` / ``correct_token_model``, the model's top
next token and whether it is the corpus word's first token; ``conf_token_human`` / ``correct_token_human``, the
same for the humans' most frequent first token. Metrics: the TVD means with bootstrap intervals, and
``ece_token_{model,human}``, ``acc_token_{model,human}``.

Human data given only as proportions (``counts_known`` False): the first tokens' shares are summed from the
proportions; ``tvd_token_oracle`` splits people, so it is None for such an instance, and the ``notes`` say so.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any, ClassVar

import numpy as np

from harness.api import Instance, Metric, Option, Options, counts_known, positive_int
from harness.scorers.cloze import human_splits
from harness.scorers.distributions import Counts, as_number, counts_tvd, top_word
from harness.scorers.exact_distribution import WordDistributionScorer, bounded_tvd


def token_counts(counts: Counts, first_token: Mapping[str, str]) -> dict[str, int | float]:
    """Guesses counted by their first token (``first_token``: word to token text); proportions are summed as they
    are (whole numbers stay integers)."""
    tokens: dict[str, int | float] = {}
    for word, count in counts.items():
        token = first_token[word]
        tokens[token] = tokens.get(token, 0) + as_number(count)
    return tokens


class TokenLevelScorer(WordDistributionScorer):
    """Next-token TVD and calibration, model and humans (module docstring)."""

    name: ClassVar[str] = "token_level"
    headline: ClassVar[tuple[str, ...] | None] = ("tvd_token_model", "tvd_token_oracle", "ece_token_model")
    options: ClassVar[Options] = Options(
        Option("n_bins", positive_int, 10, "equal-width confidence bins on [0, 1]"),
        Option("n_splits", positive_int, 10, "random human half-splits for the oracle row"),
    )

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        self.require_corpus_word(instances, "the token-level accuracy and calibration against the corpus word")
        self.note_people(instances, "tvd_token_oracle (random halves of the people)")

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        if response is None:
            return {}
        exact = self.distribution(response)
        first = {w: s.first_token for w, s in exact.surface.items()}
        human = token_counts(cloze.human_counts, first)
        model = {s.first_token: s.first_token_prob for s in exact.surface.values()}
        gold = first.get(cloze.target)
        human_top = top_word(human)
        top_token, top_prob = exact.top_tokens[0] if exact.top_tokens else (None, 0.0)
        oracle = []
        if sum(human.values()) >= 2 and counts_known(cloze):
            for half_a, half_b in human_splits(cloze.human_counts, self.args["n_splits"], rng):
                if half_a and half_b:
                    oracle.append(counts_tvd(token_counts(half_a, first), token_counts(half_b, first)))
        return {
            # Known on these tokens only, the rest of the model's mass counts in full: the bound's upper end is exact.
            "tvd_token_model": bounded_tvd(model, max(0.0, 1.0 - math.fsum(model.values())), human)[1],
            "tvd_token_oracle": float(np.mean(oracle)) if oracle else None,
            "top_token_model": top_token,
            "conf_token_model": float(top_prob),
            "correct_token_model": top_token is not None and top_token == gold,
            "top_token_human": human_top,
            "conf_token_human": human[human_top] / sum(human.values()) if human_top is not None else 0.0,
            "correct_token_human": human_top is not None and human_top == gold,
        }

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        return {
            "tvd_token_model": "tvd_token_oracle",
            "ece_token_model": "ece_token_human",
            "acc_token_model": "acc_token_human",
        }

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        rows = [row for row in per_instance if "tvd_token_model" in row]
        metrics = self.present_means(rows, ("tvd_token_model", "tvd_token_oracle"), False, rng)
        for who in ("model", "human"):
            names = (f"ece_token_{who}", f"acc_token_{who}")
            metrics.update(self.top1_metrics(rows, f"token_{who}", names, self.args["n_bins"], rng))
        return metrics

"""``next_token_accuracy``: top-1 next-word and next-token accuracy, people against the model.

The comparison of "Language models are better than humans at next-token prediction" (Shlegeris et al. 2022), on
Provo's cloze data: how often does a predictor name the corpus word, and how often its first token?

- The model's top-1 word is the most probable word of the exact distribution (``word_distribution``); it is
  certain (``top1_word_certain``) when its probability exceeds the runner-up's by more than the residual, which no
  unresolved mass could overturn. Its top-1 token is the most probable next token.
- One person's accuracy is the share of individual guesses equal to the corpus word (``human_word``), or whose
  first token is the corpus word's first token (``human_token``): what a randomly chosen participant scores.
- ``model_word_prob`` is the model's probability of the corpus word, conditioned on a word as the sampler's counts
  are (the lower end of ``WordDistributionResponse.word_probability``; the true value is at most the residual
  more): the accuracy of one model sample, the fair counterpart of one person's guess.

Per context: ``model_word``, ``model_token`` (bool), ``model_word_prob``, ``human_word``, ``human_token``
(shares), ``top1_word_certain``. Metrics: their means over contexts with bootstrap intervals (higher is better).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

import numpy as np

from harness.api import Instance, Metric
from harness.scorers.exact_distribution import WordDistributionScorer

KEYS = ("model_word", "model_token", "model_word_prob", "human_word", "human_token")


class NextTokenAccuracyScorer(WordDistributionScorer):
    """Top-1 word and token accuracy of the model and of one person (module docstring)."""

    name: ClassVar[str] = "next_token_accuracy"
    headline: ClassVar[tuple[str, ...] | None] = ("model_token", "human_token", "model_word", "human_word")

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        self.require_corpus_word(instances, "accuracy against the corpus word")

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        total = sum(cloze.human_counts.values())
        row: dict[str, Any] = {"human_word": cloze.human_counts.get(cloze.target, 0) / total}
        if response is None:
            return row
        exact = self.distribution(response)
        probs, residual = exact.conditional()
        ranked = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0]))
        top = ranked[0][0] if ranked else None
        runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
        gold = exact.surface.get(cloze.target)
        gold_token = gold.first_token if gold is not None else None
        first = {w: s.first_token for w, s in exact.surface.items()}
        same_start = sum(
            c for w, c in cloze.human_counts.items() if gold_token is not None and first.get(w) == gold_token
        )
        row.update(
            {
                "model_top_word": top,
                "model_word": top is not None and top == cloze.target,
                "top1_word_certain": bool(ranked) and ranked[0][1] - runner_up > residual,
                "model_top_token": exact.top_tokens[0][0] if exact.top_tokens else None,
                "model_token": bool(exact.top_tokens) and exact.top_tokens[0][0] == gold_token,
                "model_word_prob": exact.word_probability(cloze.target)[0] / max(exact.word_mass, 1e-300),
                "human_token": same_start / total,
            }
        )
        return row

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        # The model's top-1 against one person's guess; one model sample (its probability) against one person too.
        return {"model_word": "human_word", "model_token": "human_token", "model_word_prob": "human_word"}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        metrics = self.present_means(per_instance, KEYS, True, rng)
        metrics.update(self.present_means(per_instance, ("top1_word_certain",), None, rng))
        return metrics

"""``top1``: how often a predictor names the word that actually follows in the corpus.

Four accuracies, all against the corpus word (``instance.target``), averaged over instances (higher is better):

- ``top1_model``: the model's most frequent sampled word is the corpus word (greedy-style prediction);
- ``top1_model_samples``: the model's probability of the corpus word, i.e. the accuracy of one model sample;
- ``top1_human_guess``: the share of individual human guesses equal to the corpus word (accuracy of one human);
- ``top1_human_majority``: the humans' most frequent guess is the corpus word.

Ties for the top word go to the lexicographically smallest word. With no accepted model word, the model's
prediction is None (incorrect) and its probability of the corpus word is 0.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

import numpy as np

from harness.api import Instance, Metric
from harness.scorers.cloze import ClozeScorer
from harness.scorers.distributions import top_word


class Top1Scorer(ClozeScorer):
    """Corpus-word accuracy of the model and the humans, as single samples and as top-word predictions.

    Per instance: ``human_top_word``, ``top1_human_guess`` (float), ``top1_human_majority`` (bool); with a
    model also ``model_top_word``, ``top1_model`` (bool), ``top1_model_samples`` (float).
    Metrics: ``top1_model``, ``top1_model_samples``, ``top1_human_guess``, ``top1_human_majority``.
    """

    name: ClassVar[str] = "top1"
    headline: ClassVar[tuple[str, ...] | None] = ("top1_model", "top1_human_majority")

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        self.require_corpus_word(instances, "accuracy against the corpus word")

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        human = cloze.human_counts
        human_top = top_word(human)
        row: dict[str, Any] = {
            "human_top_word": human_top,
            "top1_human_guess": human.get(cloze.target, 0) / sum(human.values()),
            "top1_human_majority": human_top == cloze.target,
        }
        if response is not None:
            model = self.model_counts(response)
            n_words = sum(model.values())
            model_top = top_word(model)
            row.update(
                {
                    "model_top_word": model_top,
                    "top1_model": model_top is not None and model_top == cloze.target,
                    "top1_model_samples": model.get(cloze.target, 0) / n_words if n_words else 0.0,
                }
            )
        return row

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        # The model's top word against the human majority word; one sampled word against one human guess.
        return {"top1_model": "top1_human_majority", "top1_model_samples": "top1_human_guess"}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        keys = ("top1_model", "top1_model_samples", "top1_human_guess", "top1_human_majority")
        return self.present_means(per_instance, keys, True, rng)

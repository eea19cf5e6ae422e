"""``biased_estimator``: the next-word study's biased estimator (Ilia & Aziz 2024, appendix A).

The study's main estimator samples; appendix A contrasts it with a cheaper one that renormalises the model's
probabilities over a small support: the words the model sampled, its greedy word, the corpus word and the human
guesses. Each support word's probability is the model's probability of its token sequence after the context
(``Surface.logprob`` of a ``word_distribution`` response: the canonical spelling ``" " + word``), renormalised over
the support. The estimator is biased because the support leaves out the rest of the model's mass and because the
token sequence's probability is not the word's (no end-of-word term, one spelling of many); ``end_of_word=true``
adds Pimentel & Meister's end-of-word term, to show how much of the bias that term accounts for.

Per instance: ``tvd_biased`` (TVD against the humans), ``pred_biased`` / ``conf_biased`` (top word and its
renormalised probability), ``correct_biased`` (it is the corpus word) and ``support_size``. Metrics: ``tvd_biased``
(mean, lower is better), ``ece_biased_corpus`` (ECE of the top-word predictions against the corpus word, ``n_bins``
equal-width bins, with a bootstrap interval over instances), ``acc_biased_corpus`` and ``conf_biased``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from harness.api import Instance, Metric, Option, Options, boolean, positive_int
from harness.scorers.distributions import top_word, tvd
from harness.scorers.exact_distribution import WordDistributionScorer


def renormalised(logprobs: dict[str, float]) -> dict[str, float]:
    """``exp(logprob)`` renormalised over the words (log-sum-exp, so tiny probabilities do not underflow to 0/0).

    >>> renormalised({"a": math.log(0.2), "b": math.log(0.6)})
    {'a': 0.25, 'b': 0.75}
    """
    finite = {w: lp for w, lp in logprobs.items() if math.isfinite(lp)}
    if not finite:
        return {}
    top = max(finite.values())
    weights = {w: math.exp(lp - top) for w, lp in finite.items()}
    total = math.fsum(weights.values())
    return {w: round(v / total, 15) for w, v in weights.items()}


class BiasedEstimatorScorer(WordDistributionScorer):
    """TVD and calibration of the study's renormalised-support estimator (module docstring)."""

    name: ClassVar[str] = "biased_estimator"
    headline: ClassVar[tuple[str, ...] | None] = ("tvd_biased", "ece_biased_corpus")
    options: ClassVar[Options] = Options(
        Option("n_bins", positive_int, 10, "equal-width confidence bins on [0, 1]"),
        Option("end_of_word", boolean, False, "multiply each word's probability by the end-of-word probability"),
    )

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        self.require_corpus_word(instances, "the biased estimator's accuracy and calibration against the corpus word")

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        if response is None:
            return {}
        exact = self.distribution(response)
        support = set(exact.sampled) | set(cloze.human_counts) | {cloze.target}
        if exact.greedy:
            support.add(exact.greedy)
        logprobs = {}
        for word in sorted(support):
            surface = exact.surface.get(word)
            if surface is not None:
                logprobs[word] = surface.word_logprob if self.args["end_of_word"] else surface.logprob
        probs = renormalised(logprobs)
        total = sum(cloze.human_counts.values())
        human = {w: c / total for w, c in cloze.human_counts.items()}
        pred = top_word(probs)
        return {
            "tvd_biased": tvd(probs, human) if probs else 1.0,
            "pred_biased": pred,
            "conf_biased": probs.get(pred, 0.0) if pred is not None else 0.0,
            "correct_biased": pred is not None and pred == cloze.target,
            "support_size": len(probs),
        }

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        rows = [row for row in per_instance if "tvd_biased" in row]
        metrics = self.present_means(rows, ("tvd_biased",), False, rng)
        metrics.update(self.present_means(rows, ("conf_biased",), None, rng))
        names = ("ece_biased_corpus", "acc_biased_corpus")
        metrics.update(self.top1_metrics(rows, "biased", names, self.args["n_bins"], rng))
        return metrics

"""``entropy``: Shannon entropy (bits) of the model's and the humans' next-word distributions.

Entropy summarises how spread out the guesses are; it is descriptive (no direction), because the goal is to match
the human spread, not to maximise or minimise it. It is a plug-in estimate from a finite sample, so it is biased
downwards and the bias depends on the sample size: compare model and human entropies at similar sample sizes.
Instances where the model produced no accepted word have no model entropy and are left out of
``entropy_model`` (its ``n`` says how many instances counted).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

import numpy as np

from harness.api import Instance, Metric
from harness.scorers.cloze import ClozeScorer
from harness.scorers.distributions import entropy_bits


class EntropyScorer(ClozeScorer):
    """Mean entropy of the model and human distributions.

    Per instance: ``entropy_human``; with a model also ``entropy_model`` (None if no accepted word).
    Metrics: ``entropy_model``, ``entropy_human`` (bits; ``higher_is_better`` None).
    """

    name: ClassVar[str] = "entropy"
    headline: ClassVar[tuple[str, ...] | None] = ("entropy_model", "entropy_human")

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        row: dict[str, Any] = {"entropy_human": entropy_bits(cloze.human_counts)}
        if response is not None:
            model = self.model_counts(response)
            row["entropy_model"] = entropy_bits(model) if model else None
        return row

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        return {"entropy_model": "entropy_human"}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        return self.present_means(per_instance, ("entropy_model", "entropy_human"), None, rng)

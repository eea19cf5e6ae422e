"""``tvd``: total variation distance between the model's next-word distribution and the human one.

Per instance, ``TVD(model, human) = 0.5 * sum_w |p_model(w) - p_human(w)|`` over the union of words, with the
model distribution taken over accepted samples only. Averaged over instances it is the expected TVD over
contexts (lower is better: 0 means the model reproduces the human variability exactly, 1 that no word is shared).
An instance where the model produced no accepted word scores TVD = 1.0 (see ``harness.scorers.cloze``).

The sample-based estimate is biased upwards by the finite number of samples on both sides; the
``human_control`` scorer gives the like-for-like reference (model vs. half of the humans, and half vs. half).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

import numpy as np

from harness.api import Instance, Metric, mean_metric, metric_rngs
from harness.scorers.cloze import ClozeScorer, present
from harness.scorers.distributions import counts_tvd

#: TVD assigned when the model produced no accepted word: the maximum distance.
EMPTY_MODEL_TVD = 1.0


class TvdScorer(ClozeScorer):
    """Model-vs-human TVD, the share of rejected samples, and the number of instances with no model word.

    Per instance (model runs only; human-only rows are empty): ``tvd``, ``n_model_words`` (accepted samples),
    ``reject_rate`` (rejected / drawn), ``no_model_words``. Rejections by reason are in the stored response.
    Metrics: ``tvd`` (lower better), ``model_reject_rate`` (lower better), ``n_no_model_words`` (lower better).
    """

    name: ClassVar[str] = "tvd"
    headline: ClassVar[tuple[str, ...] | None] = ("tvd", "tvd_human_halves")

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        if response is None:
            return {}
        sampled = self.as_response(response)
        model = self.model_counts(sampled)
        n_words = sum(model.values())
        n_rejected = sum(int(v) for v in sampled.rejected.values())
        # Share of the samples actually drawn (accepted + rejected == n_requested for a well-formed response).
        attempted = n_words + n_rejected
        return {
            "tvd": counts_tvd(model, cloze.human_counts) if n_words else EMPTY_MODEL_TVD,
            "n_model_words": n_words,
            "reject_rate": n_rejected / attempted if attempted else 0.0,
            "no_model_words": n_words == 0,
        }

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        # human_control's split-half TVD; tvd_model_half matches its sample size exactly.
        return {"tvd": "tvd_human_halves", "tvd_model_half": "tvd_human_halves"}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        rows = present(per_instance, "tvd")
        if not rows:
            return {}
        kw: dict[str, Any] = {"n_resamples": self.n_resamples, "confidence": self.confidence}
        rngs = metric_rngs(rng)
        n_empty = sum(bool(row["no_model_words"]) for row in rows)
        return {
            "tvd": mean_metric([row["tvd"] for row in rows], False, rngs("tvd"), **kw),
            "model_reject_rate": mean_metric(
                [row["reject_rate"] for row in rows], False, rngs("model_reject_rate"), **kw
            ),
            "n_no_model_words": Metric(value=float(n_empty), higher_is_better=False, n=len(rows)),
        }

"""``human_control``: how far apart two random halves of the humans are, and the model against one half.

Human guesses are themselves a sample (~40 per Provo position), so even a perfect model would not reach TVD 0
against them. Splitting the guesses at random into halves A and B (``split_halves``) gives two references:

- ``tvd_human_halves``: TVD(half A, half B), how much two independent human samples of ~20 disagree;
- ``tvd_model_half``: TVD(model, half A), the model compared with a human sample of the same size as half A;
- ``tvd_model_sub_half``: TVD(model subsample, half A), where the subsample is ``|B|`` of the model's accepted
  samples drawn without replacement: a model sample of the same size as half B, so a model that matched the
  human distribution exactly would score the same as ``tvd_human_halves`` in expectation.

Half-vs-half TVD is computed on ~20 guesses per side and is therefore inflated relative to a comparison with all
~40 guesses (sampling noise adds distance). ``tvd_model_half`` puts the model against a human sample of the same
size, so it is the like-for-like comparison with ``tvd_human_halves`` (the ``tvd`` scorer's full-human TVD is
not). It still has sampling noise on the human side only: by convexity of TVD, a model equal to the human
distribution would score below ``tvd_human_halves`` on it, so only a model above ``tvd_human_halves`` is clearly
further from the humans than another group of humans. ``tvd_model_sub_half`` removes that asymmetry: it is the
direct model-for-human swap.

Each of ``n_splits`` splits is drawn from the instance's rng (model subsamples are drawn after all splits, so
the splits match a human-only run). The metric is the mean over splits of the per-split expected TVD,
``spread`` the standard deviation over splits, and the CI comes from a bootstrap over instances of each
instance's mean over splits.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from harness.instances import Instance
from harness.options import Option, Options, positive_int
from harness.scoring import Metric
from harness.seeding import metric_rngs
from harness.stats import mean_metric, split_spread
from scorers.cloze import ClozeScorer, human_splits, present
from scorers.distributions import counts_tvd, subsample
from scorers.tvd import EMPTY_MODEL_TVD

#: Per-split model comparisons (absent in human-only runs).
MODEL_KEYS = ("tvd_model_half", "tvd_model_sub_half")


class HumanControlScorer(ClozeScorer):
    """Split-half human control for TVD. Argument ``n_splits`` (default 10).

    Per instance: ``tvd_human_halves`` (list over splits), ``tvd_human_halves_mean``, ``half_sizes`` ([|A|, |B|]);
    with a model also ``tvd_model_half`` and ``tvd_model_sub_half`` (lists) and their ``_mean``. Instances with
    fewer than 2 human guesses cannot be split: their split keys are None and they are left out (see ``n``).
    Metrics: ``tvd_human_halves``, ``tvd_model_half``, ``tvd_model_sub_half`` (lower better, with ``spread``).
    """

    name: ClassVar[str] = "human_control"
    headline: ClassVar[tuple[str, ...] | None] = ()
    options: ClassVar[Options] = Options(
        Option("n_splits", positive_int, 10, "random human half-splits per instance"),
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.n_splits: int = self.args["n_splits"]

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        total = sum(cloze.human_counts.values())
        model = None if response is None else self.model_counts(response)
        if total < 2:
            row: dict[str, Any] = {"tvd_human_halves": None, "tvd_human_halves_mean": None, "half_sizes": None}
            if model is not None:
                row.update({f"{key}{suffix}": None for key in MODEL_KEYS for suffix in ("", "_mean")})
            return row
        splits = human_splits(cloze.human_counts, self.n_splits, rng)
        halves = [counts_tvd(a, b) for a, b in splits]
        row = {
            "tvd_human_halves": halves,
            "tvd_human_halves_mean": float(np.mean(halves)),
            "half_sizes": [total // 2, total - total // 2],
        }
        if model is not None:
            # Drawn after every split, so the human splits are the same as in a human-only run.
            subs = [subsample(model, sum(b.values()), rng) for _, b in splits]
            model_half = [counts_tvd(model, a) if model else EMPTY_MODEL_TVD for a, _ in splits]
            model_sub = [
                counts_tvd(sub, a) if sub else EMPTY_MODEL_TVD for sub, (a, _) in zip(subs, splits, strict=True)
            ]
            row.update(
                {
                    "tvd_model_half": model_half,
                    "tvd_model_half_mean": float(np.mean(model_half)),
                    "tvd_model_sub_half": model_sub,
                    "tvd_model_sub_half_mean": float(np.mean(model_sub)),
                }
            )
        return row

    def _metric(self, rows: list[dict[str, Any]], key: str, rng: np.random.Generator) -> Metric:
        per_split = np.array([row[key] for row in rows], dtype=np.float64)  # (instances, splits)
        return mean_metric(
            per_split.mean(axis=1),
            False,
            rng,
            n_resamples=self.n_resamples,
            confidence=self.confidence,
            spread=split_spread(per_split.mean(axis=0)),
        )

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        metrics: dict[str, Metric] = {}
        rngs = metric_rngs(rng)
        for key in ("tvd_human_halves", *MODEL_KEYS):
            rows = present(per_instance, key)
            if rows:
                metrics[key] = self._metric(rows, key, rngs(key))
        return metrics

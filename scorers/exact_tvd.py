"""``exact_tvd``: TVD between the model's exact next-word distribution and the humans', and what sampling adds.

Per instance, from a ``word_distribution`` response conditioned on the sample giving a word (as the sampler's
counts are): ``tvd_exact_lower`` / ``tvd_exact_upper``, the interval the true TVD lies in (its width is the
conditional residual, ``residual``; see ``scorers.exact_distribution``), and ``tvd_exact``, its midpoint.

With sampled words in the response (``n_samples`` > 0), the same contexts' sampled TVD: ``tvd_sampled`` (all the
samples) and ``tvd_sampled_at_n{k}`` for ``k`` in ``sizes`` (mean over ``n_repeats`` subsamples of ``k`` words),
and the sampling bias against the exact value, ``sampling_bias_at_n{k}`` = sampled TVD minus ``tvd_exact``
(``sampling_bias`` for all the samples). The bias is known to within half the residual interval; instances whose
interval is wider than ``max_residual`` are left out of the bias (``n`` says how many counted), because there the
exact value itself is too loose to measure a bias against.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from harness.instances import Instance
from harness.options import Option, Options, number_range, positive_int
from harness.scoring import Metric
from scorers.distributions import counts_tvd, subsample
from scorers.exact_distribution import WordDistributionScorer, bounded_tvd
from scorers.sample_size import size_list


class ExactTvdScorer(WordDistributionScorer):
    """TVD of the exact distribution (an interval), and the bias of the sampled TVD against it."""

    name: ClassVar[str] = "exact_tvd"
    headline: ClassVar[tuple[str, ...] | None] = ("tvd_exact", "tvd_sampled", "sampling_bias_at_n40")
    options: ClassVar[Options] = Options(
        Option("sizes", size_list, (40,), "sample sizes whose TVD is compared with the exact value"),
        Option("n_repeats", positive_int, 20, "subsamples drawn per size and instance"),
        Option(
            "max_residual",
            number_range(0.0, 1.0, as_float=True),
            0.1,
            "instances with a wider residual interval are left out of the bias",
        ),
    )

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        if response is None:
            return {}
        exact = self.distribution(response)
        probs, residual = exact.conditional()
        lower, upper = bounded_tvd(probs, residual, cloze.human_counts)
        mid = (lower + upper) / 2
        row: dict[str, Any] = {
            "tvd_exact_lower": lower,
            "tvd_exact_upper": upper,
            "tvd_exact": mid,
            "residual": residual,
        }
        sampled = {w: c for w, c in exact.sampled.items() if c > 0}
        usable = residual <= self.args["max_residual"]
        if sampled:
            full = counts_tvd(sampled, cloze.human_counts)
            row["tvd_sampled"] = full
            row["sampling_bias"] = full - mid if usable else None
            for k in self.args["sizes"]:
                if k >= sum(sampled.values()):
                    continue
                tvds = [
                    counts_tvd(subsample(sampled, k, rng), cloze.human_counts) for _ in range(self.args["n_repeats"])
                ]
                row[f"tvd_sampled_at_n{k}"] = float(np.mean(tvds))
                row[f"sampling_bias_at_n{k}"] = float(np.mean(tvds)) - mid if usable else None
        return row

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        sizes = self.args["sizes"]
        tvds = ("tvd_exact", "tvd_exact_lower", "tvd_exact_upper", "tvd_sampled") + tuple(
            f"tvd_sampled_at_n{k}" for k in sizes
        )
        described = ("residual", "sampling_bias") + tuple(f"sampling_bias_at_n{k}" for k in sizes)
        metrics = self.present_means(per_instance, tvds, False, rng)
        metrics.update(self.present_means(per_instance, described, None, rng))
        return metrics

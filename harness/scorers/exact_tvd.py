"""``exact_tvd``: TVD between the model's exact next-word distribution and the humans', and what sampling adds.

Per instance, from a ``word_distribution`` response conditioned on the sample giving a word (as the sampler's
counts are): ``tvd_exact``, the TVD with the unresolved mass counted as one outcome no human named, and
``tvd_exact_lower``; the true TVD lies in ``[tvd_exact_lower, tvd_exact]``, an interval as wide as the conditional
residual (``residual``; see ``harness.scorers.exact_distribution``). ``tvd_exact`` is the true value whenever no
unresolved mass falls on a word a human named, which is where the mass of a long tail goes (the sampled TVD at n = 1,000
lands on it, see ``docs/word-sampling.md``), so it is the value to read; the lower end is the guarantee.

The sampling bias at ``k`` samples, ``sampling_bias_at_n{k}`` for ``k`` in ``sizes``: the mean TVD of ``n_repeats``
simulated samples of ``k`` words drawn from the exact distribution (the unresolved mass drawn as one outcome no
human named), minus the TVD of that distribution (``tvd_exact``). No model call is needed, so any ``k`` can be
asked. Why the lumped residual barely matters: a word no human named contributes its sampled share to the TVD,
whose expectation is its probability however the mass is split, so only unresolved mass on words the humans named
(at most ``residual``) can move the value.

The human control, ``n_splits`` random half-splits of the guesses: ``tvd_human_halves`` (one half against the
other, the ``human_control`` scorer's quantity) and ``tvd_exact_vs_half`` (the exact distribution against one
half, upper end as ``tvd_exact``), so the model is compared with a group of people of the same size.

With sampled words in the response (``n_samples`` > 0), the observed side: ``tvd_sampled`` (all the samples),
``tvd_sampled_at_n{k}`` (mean over ``n_repeats`` subsamples of ``k`` of them, for ``k`` below the samples drawn),
and the observed bias of the full sample as an interval, ``observed_bias_min`` = ``tvd_sampled - tvd_exact`` and
``observed_bias_max`` = ``tvd_sampled - tvd_exact_lower``: the check that the simulation describes the sampler.

Human data given only as proportions (``counts_known`` False): everything is computed from the proportions except
the human control, which splits people: ``tvd_human_halves`` and ``tvd_exact_vs_half`` are left out for such an
instance, and the scorer's ``notes`` say so.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

import numpy as np

from harness.api import Instance, Metric, Option, Options, counts_known, positive_int
from harness.scorers.cloze import human_splits
from harness.scorers.distributions import counts_tvd, subsample
from harness.scorers.exact_distribution import WordDistributionScorer, bounded_tvd
from harness.scorers.sample_size import size_list


class ExactTvdScorer(WordDistributionScorer):
    """TVD of the exact distribution (an interval), and the bias of sampled TVD, simulated and observed."""

    name: ClassVar[str] = "exact_tvd"
    headline: ClassVar[tuple[str, ...] | None] = (
        "tvd_exact",
        "tvd_exact_vs_half",
        "tvd_human_halves",
        "tvd_sampled",
        "sampling_bias_at_n40",
        "sampling_bias_at_n1000",
    )
    options: ClassVar[Options] = Options(
        Option("sizes", size_list, (40, 1000), "sample sizes whose TVD bias is measured"),
        Option("n_repeats", positive_int, 50, "simulated samples (and subsamples) per size and instance"),
        Option("n_splits", positive_int, 10, "random human half-splits for the control row"),
    )

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        self.note_people(instances, "tvd_human_halves and tvd_exact_vs_half (random halves of the people)")

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        if response is None:
            return {}
        exact = self.distribution(response)
        probs, residual = exact.conditional()
        human = cloze.human_counts
        lower, upper = bounded_tvd(probs, residual, human)
        row: dict[str, Any] = {"tvd_exact": upper, "tvd_exact_lower": lower, "residual": residual}
        splits = human_splits(human, self.args["n_splits"], rng) if counts_known(cloze) else []
        halves = [split for split in splits if split[0] and split[1]]
        if halves:
            row["tvd_human_halves"] = float(np.mean([counts_tvd(a, b) for a, b in halves]))
            row["tvd_exact_vs_half"] = float(np.mean([bounded_tvd(probs, residual, b)[1] for _, b in halves]))
        words = sorted(probs)
        shares = np.array([probs[w] for w in words] + [residual])
        shares /= shares.sum()
        total = sum(human.values())
        target = np.array([human.get(w, 0) / total for w in words] + [0.0])
        unnamed = sum(c for w, c in human.items() if w not in probs) / total
        for k in self.args["sizes"]:
            drawn = rng.multinomial(k, shares, size=self.args["n_repeats"]) / k
            simulated = (np.abs(drawn - target).sum(axis=1) + unnamed) / 2
            row[f"sampling_bias_at_n{k}"] = float(simulated.mean()) - upper
        sampled = {w: c for w, c in exact.sampled.items() if c > 0}
        if sampled:
            full = counts_tvd(sampled, human)
            row["tvd_sampled"] = full
            row["observed_bias_min"] = full - upper
            row["observed_bias_max"] = full - lower
            for k in self.args["sizes"]:
                if k < sum(sampled.values()):
                    tvds = [counts_tvd(subsample(sampled, k, rng), human) for _ in range(self.args["n_repeats"])]
                    row[f"tvd_sampled_at_n{k}"] = float(np.mean(tvds))
        return row

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        # One half of the people against the other: the model's exact TVD (all guesses or one half) beside it.
        halves = "tvd_human_halves"
        return {"tvd_exact": halves, "tvd_exact_vs_half": halves, "tvd_sampled": halves}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        sizes = self.args["sizes"]
        tvds = ("tvd_exact", "tvd_exact_lower", "tvd_exact_vs_half", "tvd_human_halves", "tvd_sampled") + tuple(
            f"tvd_sampled_at_n{k}" for k in sizes
        )
        described = ("residual", "observed_bias_min", "observed_bias_max") + tuple(
            f"sampling_bias_at_n{k}" for k in sizes
        )
        metrics = self.present_means(per_instance, tvds, False, rng)
        metrics.update(self.present_means(per_instance, described, None, rng))
        return metrics

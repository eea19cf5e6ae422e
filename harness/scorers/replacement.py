"""``replacement``: how much of the model would have to be human before its TVDs look human? (Ilia & Aziz 2024,
section 5 and appendix E)

The model's per-context TVDs against a group of people form a distribution; so do the TVDs between two groups of
people. This scorer asks how far apart the two distributions are by mixing them: in ``k``% of the contexts, chosen
at random, the model's distribution is replaced by that of a human group (oracle A), and every context is compared
with a second, disjoint human group (oracle B). At ``k`` = 0 the TVDs are the model's, TVD(model, B); at ``k`` = 100
they are the humans', TVD(A, B). The smallest ``k`` at which the mixed TVDs can no longer be told apart from the
human ones (a two-sample Kolmogorov-Smirnov test at ``alpha``, ``scipy.stats.ks_2samp``) measures the gap: a
model that already varies like people needs no replacement.

Per context and ``seed`` (``n_seeds`` of them) and oracle size ``m`` (``oracle_sizes``: 10 and 20, as the study),
A and B are ``m`` guesses each, drawn without replacement and disjoint; contexts with fewer than ``2m`` guesses are
left out at that size. The model side is all its accepted words (a model with none scores TVD 1). For each seed the
contexts replaced at each ``k`` (``step``: 0, 10, ..., 100) are drawn at random, nested (those replaced at ``k``
are also replaced at every larger ``k``).

Metrics, per oracle size: ``replacement_k_o{m}``, the mean over seeds of the smallest matching ``k`` (lower is
better; ``spread`` over seeds), and ``replacement_tvd_gap_o{m}``, mean TVD(model, B) minus mean TVD(A, B) over the
contexts (the ``k`` = 0 gap, with a bootstrap interval over contexts). The report ``replacement`` holds the whole
curve for each size: ``k``, the mean mixed TVD, the KS statistic and p-value (means over seeds), and the share of
seeds that match.

How it differs from the study: there the replaced quantity was the model's samples within a context (appendix E,
"proportion of changed model samples"); here whole contexts are replaced, as the harness's issue describes it, so
the curve answers "in how many contexts" rather than "by how much in each".

Groups of people cannot be drawn from proportions: a task with an instance that gives only proportions of people
(``counts_known`` False) makes the scorer unavailable, with the reason (``require_counted_people``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.stats import ks_2samp

from harness.api import (
    Instance,
    Metric,
    Option,
    Options,
    int_range,
    mean_metric,
    metric_rngs,
    open_unit_float,
    positive_int,
    require_counted_people,
    split_spread,
)
from harness.scorers.cloze import ClozeScorer
from harness.scorers.distributions import EXPAND_LIMIT, Counts, counts_tvd, draw_from_counts, expand, whole_counts
from harness.scorers.sample_size import size_list
from harness.scorers.tvd import EMPTY_MODEL_TVD


def disjoint_groups(counts: Counts, m: int, rng: np.random.Generator) -> tuple[dict[str, int], dict[str, int]]:
    """Two disjoint groups of ``m`` guesses each, drawn without replacement (the guesses in sorted word order
    first, so the draw depends only on ``counts`` and ``rng``). Above ``EXPAND_LIMIT`` people the groups are drawn
    from the counts (``2 m`` people, then ``m`` of them for the first group): the same distribution, no list of
    one entry per person."""
    words, numbers = whole_counts(counts)
    if sum(numbers) > EXPAND_LIMIT:
        both = draw_from_counts(numbers, 2 * m, rng)
        first = draw_from_counts(both, m, rng)
        second = [n - f for n, f in zip(both, first, strict=True)]
        return (
            {w: n for w, n in zip(words, first, strict=True) if n},
            {w: n for w, n in zip(words, second, strict=True) if n},
        )
    guesses = expand(counts)
    chosen = rng.permutation(len(guesses))[: 2 * m]
    a: dict[str, int] = {}
    b: dict[str, int] = {}
    for i, index in enumerate(chosen):
        group = a if i < m else b
        word = guesses[index]
        group[word] = group.get(word, 0) + 1
    return a, b


def mixed_curve(
    model_b: np.ndarray, a_b: np.ndarray, order: np.ndarray, ks: list[int], alpha: float
) -> list[tuple[int, float, float, float, bool]]:
    """For each ``k`` in ``ks``: the mixed TVDs (the first ``k``% of contexts in ``order`` replaced), their mean, and
    the KS statistic and p-value against the human TVDs ``a_b``, and whether they match (p >= ``alpha``)."""
    rows = []
    n = len(model_b)
    for k in ks:
        mixed = model_b.copy()
        replaced = order[: int(round(n * k / 100))]
        mixed[replaced] = a_b[replaced]
        test = ks_2samp(mixed, a_b)
        rows.append((k, float(mixed.mean()), float(test.statistic), float(test.pvalue), bool(test.pvalue >= alpha)))
    return rows


class ReplacementScorer(ClozeScorer):
    """The k% replacement experiment (module docstring)."""

    name: ClassVar[str] = "replacement"
    headline: ClassVar[tuple[str, ...] | None] = ("replacement_k_o*",)
    options: ClassVar[Options] = Options(
        Option("oracle_sizes", size_list, (10, 20), "guesses in each of the two human groups"),
        Option("n_seeds", positive_int, 10, "random draws of the groups and of the replaced contexts"),
        Option("step", int_range(1, 100), 10, "k runs over 0, step, 2 step, ..., 100 (percent of contexts)"),
        Option("alpha", open_unit_float, 0.05, "KS test level: the mixed TVDs match when p >= alpha"),
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        #: Per oracle size, per seed, the curve of (k, mean mixed TVD, KS statistic, p-value, match), set by aggregate.
        self.curves: dict[int, list[list[tuple[int, float, float, float, bool]]]] = {}

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        require_counted_people(
            instances, "the replacement experiment (two disjoint groups of people drawn per context)"
        )

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        if response is None:
            return {}
        model = self.model_counts(response)
        n_guesses = sum(cloze.human_counts.values())
        row: dict[str, Any] = {}
        for m in self.args["oracle_sizes"]:
            if n_guesses < 2 * m:
                row[f"replacement_o{m}"] = None
                continue
            pairs = []
            for _ in range(self.args["n_seeds"]):
                a, b = disjoint_groups(cloze.human_counts, m, rng)
                pairs.append([counts_tvd(model, b) if model else EMPTY_MODEL_TVD, counts_tvd(a, b)])
            row[f"replacement_o{m}"] = pairs  # per seed: [TVD(model, B), TVD(A, B)]
        return row

    def _ks(self) -> list[int]:
        return list(range(0, 100, self.args["step"])) + [100]

    def _curves(self, data: np.ndarray, rng: np.random.Generator) -> list[list[tuple[int, float, float, float, bool]]]:
        """One mixed curve per seed of ``data`` (contexts x seeds x [TVD(model, B), TVD(A, B)])."""
        curves = []
        for seed in range(data.shape[1]):
            order = rng.permutation(data.shape[0])
            curves.append(mixed_curve(data[:, seed, 0], data[:, seed, 1], order, self._ks(), self.args["alpha"]))
        return curves

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        metrics: dict[str, Metric] = {}
        rngs = metric_rngs(rng)
        self.curves = {}
        for m in self.args["oracle_sizes"]:
            rows = [row[f"replacement_o{m}"] for row in per_instance if row.get(f"replacement_o{m}") is not None]
            if len(rows) < 2:
                continue
            data = np.asarray(rows, dtype=np.float64)  # contexts x seeds x 2
            curves = self._curves(data, rngs(f"order_o{m}"))
            self.curves[m] = curves
            first = [next(k for k, _, _, _, match in curve if match) for curve in curves]
            metrics[f"replacement_k_o{m}"] = Metric(
                value=float(np.mean(first)), higher_is_better=False, n=len(curves), spread=split_spread(first)
            )
            gaps = (data[:, :, 0] - data[:, :, 1]).mean(axis=1)
            metrics[f"replacement_tvd_gap_o{m}"] = mean_metric(
                gaps, False, rngs(f"gap_o{m}"), n_resamples=self.n_resamples, confidence=self.confidence
            )
        return metrics

    def report(
        self, instances: list[Instance], values: list[dict[str, Any]], metrics: dict[str, Metric]
    ) -> dict[str, Any] | None:
        curves = self.curves
        if not curves:
            return None
        out: dict[str, Any] = {"alpha": self.args["alpha"], "n_seeds": self.args["n_seeds"], "curves": {}}
        lines = []
        for m, per_seed in curves.items():
            table = []
            for i, k in enumerate(self._ks()):
                at_k = [curve[i] for curve in per_seed]
                table.append(
                    {
                        "k": k,
                        "tvd": float(np.mean([row[1] for row in at_k])),
                        "ks_statistic": float(np.mean([row[2] for row in at_k])),
                        "p_value": float(np.mean([row[3] for row in at_k])),
                        "share_matching": float(np.mean([row[4] for row in at_k])),
                    }
                )
            n_contexts = sum(1 for v in values if v.get(f"replacement_o{m}") is not None)
            out["curves"][str(m)] = {"contexts": n_contexts, "points": table}
            k_metric = metrics[f"replacement_k_o{m}"]
            lines.append(
                f"oracle groups of {m}: the model's TVDs match the humans' once {k_metric.value:.0f}% of the "
                f"{n_contexts} contexts are human (mean over {k_metric.n} seeds)"
            )
        out["text"] = "\n".join(lines)
        return out

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

``variant=paper`` reproduces the original study's oracle (Ilia & Aziz 2024; ``harness.scorers.paper_provo``): one split
per position, the original's ``sample_oracle_without_replacement_disjoint_groups`` with ``random.seed(1)`` reset
at every position (an odd list first loses one response drawn with that seed), subset 1 = 20 responses, subset
2 = the rest. Metrics: ``tvd_human_halves`` = TVD(subset 1, subset 2), ``tvd_model_half`` = TVD(model, subset 1),
``tvd_oracle1_human`` = TVD(subset 1, all humans), ``tvd_oracle2_human`` = TVD(subset 2, all humans), each the
mean over positions (no ``spread``: it is one split pattern), and ``tvd_human_halves_seed_spread``, the standard
deviation (ddof 0) over seeds ``0..n_oracle_seeds-1`` of the mean-over-positions TVD(subset 1, subset 2), each
seed's split drawn afresh at every position (descriptive). ``tvd_model_sub_half`` is the harness's own correction
and is not reported. The TVDs are exact (the original computed them in float32). Positions with fewer than 21
human guesses cannot give a 20-response subset and are left out (None; a subset 2 left empty, with exactly 21,
leaves out the TVDs that need it). ``n_splits`` is not used by this variant.

Every metric here splits the people, so a task with an instance that gives only proportions of people
(``counts_known`` False) makes the scorer unavailable, with the reason (``require_counted_people``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from harness.api import (
    Instance,
    Metric,
    Option,
    Options,
    bootstrap_metric,
    int_range,
    mean_metric,
    metric_rngs,
    one_of,
    positive_int,
    require_counted_people,
    split_spread,
)
from harness.scorers.cloze import ClozeScorer, human_splits, present
from harness.scorers.distributions import (
    EXPAND_LIMIT,
    MAX_DRAWN,
    TooManyPeopleError,
    counts_tvd,
    subsample,
    too_many_people,
)
from harness.scorers.paper_provo import (
    MIN_ORACLE_RESPONSES,
    TVD_SPLIT_SEED,
    expand_responses,
    oracle_split,
    population_std,
    subset_counts,
)
from harness.scorers.tvd import EMPTY_MODEL_TVD

#: Per-split model comparisons (absent in human-only runs).
MODEL_KEYS = ("tvd_model_half", "tvd_model_sub_half")
#: ``variant=paper``: the per-position TVDs of the seed-1 split (``tvd_model_half`` only with a model).
PAPER_KEYS = ("tvd_human_halves", "tvd_model_half", "tvd_oracle1_human", "tvd_oracle2_human")


def _tvd_or_none(a: dict[str, int], b: dict[str, int]) -> float | None:
    return counts_tvd(a, b) if a and b else None


class HumanControlScorer(ClozeScorer):
    """Split-half human control for TVD. Argument ``n_splits`` (default 10).

    Per instance: ``tvd_human_halves`` (list over splits), ``tvd_human_halves_mean``, ``half_sizes`` ([|A|, |B|]);
    with a model also ``tvd_model_half`` and ``tvd_model_sub_half`` (lists) and their ``_mean``. Instances with
    fewer than 2 human guesses cannot be split: their split keys are None and they are left out (see ``n``).
    Metrics: ``tvd_human_halves``, ``tvd_model_half``, ``tvd_model_sub_half`` (lower better, with ``spread``).

    ``variant=paper`` (module docstring; argument ``n_oracle_seeds``, default 20): per instance
    ``tvd_human_halves``, ``tvd_oracle1_human``, ``tvd_oracle2_human``, ``subset_sizes`` and
    ``tvd_human_halves_seeds`` (list over seeds), with a model also ``tvd_model_half``; None below 21 guesses.
    Metrics: those four TVDs (lower better, no ``spread``) and ``tvd_human_halves_seed_spread`` (descriptive).
    """

    name: ClassVar[str] = "human_control"
    headline: ClassVar[tuple[str, ...] | None] = ()
    options: ClassVar[Options] = Options(
        Option("n_splits", positive_int, 10, "random human half-splits per instance"),
        Option(
            "variant",
            one_of("default", "paper"),
            "default",
            "default: random half-splits; paper: the original study's seed-1 split (docs/metrics.md)",
        ),
        Option("n_oracle_seeds", int_range(1, 1000), 20, "variant paper: seeds behind tvd_human_halves_seed_spread"),
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.n_splits: int = self.args["n_splits"]
        self.variant: str = self.args["variant"]
        self.n_oracle_seeds: int = self.args["n_oracle_seeds"]

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        require_counted_people(instances, "the split-half human control (random halves of the people)")
        # A count no study has (10**15 people) would otherwise stop the scoring at its instance: refused up front.
        limit = EXPAND_LIMIT if self.variant == "paper" else MAX_DRAWN
        worst = too_many_people(((i.id, self.cloze(i).human_counts) for i in instances), limit)
        if worst is not None:
            how = "lists the people one by one" if self.variant == "paper" else "draws people without replacement"
            raise TooManyPeopleError(
                f"scorer 'human_control': instance {worst[0]!r} has {worst[1]:,} people; the split-half control "
                f"{how} and takes at most {limit:,} (is a count wrong?)"
            )

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        if self.variant == "paper":
            return self._score_paper(instance, response)
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

    def _score_paper(self, instance: Instance, response: Any | None) -> dict[str, Any]:
        cloze = self.cloze(instance)
        human = {word: int(count) for word, count in cloze.human_counts.items() if count > 0}
        model = None if response is None else self.model_counts(response)
        row: dict[str, Any] = {
            "tvd_human_halves": None,
            "tvd_oracle1_human": None,
            "tvd_oracle2_human": None,
            "subset_sizes": None,
            "tvd_human_halves_seeds": None,
        }
        if model is not None:
            row["tvd_model_half"] = None
        words = expand_responses(human)
        if len(words) < MIN_ORACLE_RESPONSES:
            return row
        # The list is split afresh at each call: random.seed(1) reset at every position, as the original did.
        subset1, subset2 = (subset_counts(s) for s in oracle_split(list(words), TVD_SPLIT_SEED))
        seeds = [oracle_split(list(words), seed) for seed in range(self.n_oracle_seeds)]
        seed_tvds = [_tvd_or_none(subset_counts(a), subset_counts(b)) for a, b in seeds]
        row.update(
            {
                "tvd_human_halves": _tvd_or_none(subset1, subset2),
                "tvd_oracle1_human": counts_tvd(subset1, human),
                "tvd_oracle2_human": _tvd_or_none(subset2, human),
                "subset_sizes": [sum(subset1.values()), sum(subset2.values())],
                "tvd_human_halves_seeds": None if None in seed_tvds else seed_tvds,
            }
        )
        if model is not None:
            row["tvd_model_half"] = counts_tvd(model, subset1) if model else EMPTY_MODEL_TVD
        return row

    def _aggregate_paper(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        metrics: dict[str, Metric] = {}
        kw: dict[str, Any] = {"n_resamples": self.n_resamples, "confidence": self.confidence}
        rngs = metric_rngs(rng)
        for key in PAPER_KEYS:
            rows = present(per_instance, key)
            if rows:
                values = np.array([row[key] for row in rows], dtype=np.float64)
                metrics[key] = mean_metric(values, False, rngs(key), **kw)
        rows = present(per_instance, "tvd_human_halves_seeds")
        if rows:
            table = np.array([row["tvd_human_halves_seeds"] for row in rows], dtype=np.float64)  # (positions, seeds)
            metrics["tvd_human_halves_seed_spread"] = bootstrap_metric(
                [table],
                lambda t: population_std(t.mean(axis=0)),
                None,
                rngs("tvd_human_halves_seed_spread"),
                **kw,
            )
        return metrics

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
        if self.variant == "paper":
            return self._aggregate_paper(per_instance, rng)
        metrics: dict[str, Metric] = {}
        rngs = metric_rngs(rng)
        for key in ("tvd_human_halves", *MODEL_KEYS):
            rows = present(per_instance, key)
            if rows:
                metrics[key] = self._metric(rows, key, rngs(key))
        return metrics

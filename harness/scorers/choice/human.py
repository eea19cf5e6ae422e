"""``mcq_human``: the human row of a multiple-choice task, and a split-half human control for the fit metrics.

- ``human/acc``: the share of people's choices that are the target, averaged over items (the humans'
  accuracy in the sense of the model's: how often a random person picks the target);
- ``human/majority_acc``: the share of items whose most chosen option is the target;
- split-half control, ``n_splits`` times per item: the item's choices are split at random into two halves
  (a draw without replacement of half the choices, i.e. a multivariate hypergeometric draw of counts), and
  half B is compared with half A exactly as the model is compared with all people: ``human/control_tvd`` is
  TVD(A, B); ``human/control_logprob_per_choice`` is the mean log-probability of B's choices under A's
  smoothed proportions; ``human/control_ll_binomial`` is the binomial fit of B's target counts per phenomenon
  under A's mean target rate (``variant: paper``: A's unsmoothed share of target choices, clipped as the follow-up
  study clips a model's rate). Values are means over splits, with the spread over splits.

A chance row beside it: ``chance/acc`` (1/K per item), ``chance/tvd`` and ``chance/logprob_per_choice`` of the
uniform choice distribution; a method that does not beat it has learnt nothing about the items.

The halves have about 187 people each, so the control's TVD carries the sampling noise of two samples of that
size: a model whose distribution equalled the population's would score lower than the control against all 374.

Items that give only proportions of people (``counts_known`` False) have no people to split: ``human/acc`` (the
target's proportion), ``human/majority_acc`` and the chance row are computed from the proportions (the chance
row's ``logprob_per_choice`` then weighs every item the same), and the split-half control is left out of every set
of items (overall, per phenomenon) that holds such an item; the scorer's ``notes`` say so.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from harness.api import (
    PROPORTIONS_NOTE,
    ChoiceInstance,
    Instance,
    Metric,
    Option,
    Options,
    counted_people_reason,
    metric_rngs,
    positive_int,
    split_spread,
)
from harness.scorers.choice.binomial import binomial_loglik, clip_rate
from harness.scorers.choice.common import ChoiceScorer, ItemHuman, smooth, tvd


class HumanChoiceScorer(ChoiceScorer):
    name: ClassVar[str] = "mcq_human"
    method: ClassVar[str] = "human"
    systems: dict[str, str] = {}
    #: Without a target: the chance row's TVD and the split-half control's (shown beside each method's TVD; a row
    #: of its own in a human-only run).
    headline_without_target: ClassVar[tuple[str, ...]] = ("chance/tvd", "human/control_tvd")
    options: ClassVar[Options] = Options(
        Option("n_splits", positive_int, 10, "random split-halves of the people for the human control"),
    )

    def note_people(self, instances: list[Instance]) -> None:
        needs = "the split-half human control (random halves of the people)"
        reason = counted_people_reason(instances, needs)
        if reason is None:
            self.notes.pop(PROPORTIONS_NOTE, None)
        else:
            self.notes[PROPORTIONS_NOTE] = (
                f"{reason}; human/control_* are left out of every set of items that holds one, and "
                "chance/logprob_per_choice there weighs every item the same"
            )

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        self.note_people(instances)

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        item = self.item(instance)
        if not item.counts_known:
            return self._score_proportions(item)
        counts = np.asarray(item.human_counts, dtype=np.int64)
        n = int(counts.sum())
        splits = []
        for _ in range(self.args["n_splits"]):
            a = rng.multivariate_hypergeometric(counts, n // 2)
            b = counts - a
            pa, pb = a / a.sum(), b / b.sum()
            splits.append(
                {
                    "tvd": tvd(pa, pb),
                    "logprob_sum": float((b * np.log(smooth(pa, self.epsilon))).sum()),
                    "n_b": int(b.sum()),
                    "k_b": None if item.target is None else int(b[item.target]),
                    "theta_a": None if item.target is None else float(smooth(pa, self.epsilon)[item.target]),
                }
            )
        self._humans.append(ItemHuman.of(item))
        top = np.flatnonzero(counts == counts.max())
        k = len(counts)
        uniform = np.full(k, 1.0 / k)
        return {
            "chance": {
                "acc": 1.0 / k,
                "tvd": tvd(uniform, counts / n),
                "logprob_sum": float(n * np.log(1.0 / k)),
                "n": n,
            },
            "human": {
                "acc": None if item.target is None else float(counts[item.target] / n),
                "majority_correct": None if item.target is None else float(item.target in top) / len(top),
                "control_tvd": float(np.mean([s["tvd"] for s in splits])),
                "splits": splits,
            },
        }

    def _score_proportions(self, item: ChoiceInstance) -> dict[str, Any]:
        """An item that gives only proportions of people: no split-half control (no people to split)."""
        self._humans.append(ItemHuman.of(item))
        shares = np.asarray(item.human_counts, dtype=np.float64)
        shares = shares / shares.sum()
        top = np.flatnonzero(shares == shares.max())
        k = len(shares)
        uniform = np.full(k, 1.0 / k)
        return {
            "chance": {"acc": 1.0 / k, "tvd": tvd(uniform, shares), "logprob_sum": float(np.log(1.0 / k)), "n": 1},
            "human": {
                "acc": None if item.target is None else float(shares[item.target]),
                "majority_correct": None if item.target is None else float(item.target in top) / len(top),
                "control_tvd": None,
                "splits": None,
                "counts_known": False,
            },
        }

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        humans = self._humans[-len(per_instance) :] if per_instance else []
        self._humans = []
        rngs = metric_rngs(rng)
        groups: dict[str, list[int]] = {"": list(range(len(per_instance)))}
        for i, h in enumerate(humans):
            if h is not None:
                groups.setdefault(h.phenomenon, []).append(i)
        metrics: dict[str, Metric] = {}
        for group, idx in groups.items():
            suffix = f"/{group}" if group else ""
            rows = [per_instance[i]["human"] for i in idx]
            hs = [h for h in (humans[i] for i in idx) if h is not None]
            for key, name in (("acc", "acc"), ("majority_correct", "majority_acc")):
                metric = f"human/{name}{suffix}"
                present = [r[key] for r in rows if r[key] is not None]  # None: the item names no target
                if present:
                    metrics[metric] = self.mean_metric(present, True, rngs(metric))
            chance = [per_instance[i]["chance"] for i in idx]
            for key in ("acc", "tvd"):
                if key == "acc" and any(h.target is None for h in hs):  # a chance of hitting no target
                    continue
                metric = f"chance/{key}{suffix}"
                metrics[metric] = self.mean_metric([c[key] for c in chance], key == "acc", rngs(metric))
            if any(r.get("counts_known") is False for r in rows):
                # Proportions: every item weighs the same (its "n" is 1), and there are no people to split.
                metrics[f"chance/logprob_per_choice{suffix}"] = Metric(
                    float(np.mean([c["logprob_sum"] / c["n"] for c in chance])), True, n=len(chance)
                )
                continue
            metrics[f"chance/logprob_per_choice{suffix}"] = Metric(
                sum(c["logprob_sum"] for c in chance) / sum(c["n"] for c in chance), True, n=len(chance)
            )
            n_splits = len(rows[0]["splits"])
            per_split_tvd = [float(np.mean([r["splits"][s]["tvd"] for r in rows])) for s in range(n_splits)]
            metric = f"human/control_tvd{suffix}"
            metrics[metric] = self.mean_metric(
                [r["control_tvd"] for r in rows], False, rngs(metric), spread=split_spread(per_split_tvd)
            )
            logprob = [
                sum(r["splits"][s]["logprob_sum"] for r in rows) / sum(r["splits"][s]["n_b"] for r in rows)
                for s in range(n_splits)
            ]
            metrics[f"human/control_logprob_per_choice{suffix}"] = Metric(
                float(np.mean(logprob)), True, n=len(rows), spread=split_spread(logprob)
            )
            if any(h.target is None for h in hs):  # the binomial is on the target rate: no target, no binomial
                continue
            binom = [_control_binomial(hs, [r["splits"][s] for r in rows], self.paper) for s in range(n_splits)]
            metrics[f"human/control_ll_binomial{suffix}"] = Metric(
                float(np.mean(binom)), True, n=len(rows), spread=split_spread(binom)
            )
        return metrics


def _control_binomial(humans: list[ItemHuman], splits: list[dict[str, Any]], paper: bool = False) -> float:
    """Per phenomenon, log Binomial(B's target choices | B's choices, A's mean target rate), summed.

    ``paper`` (``variant: paper``): A's rate as the follow-up study takes a model's, the share of A's choices that
    are the target (each person's choice counts as one argmax choice), unsmoothed but clipped (``clip_rate``)."""
    if paper:
        totals: dict[str, list[int]] = {}
        for h, s in zip(humans, splits, strict=True):
            if h.target is None:  # not called for such items (aggregate leaves the binomial out): a guard
                continue
            k_b, n_b, k_a, n_a = totals.setdefault(h.phenomenon, [0, 0, 0, 0])
            totals[h.phenomenon] = [
                k_b + s["k_b"],
                n_b + s["n_b"],
                k_a + h.counts[h.target] - s["k_b"],
                n_a + sum(h.counts) - s["n_b"],
            ]
        return float(sum(binomial_loglik(k, n, clip_rate(ka / na)) for k, n, ka, na in totals.values()))
    groups: dict[str, list[dict[str, Any]]] = {}
    for h, s in zip(humans, splits, strict=True):
        groups.setdefault(h.phenomenon, []).append(s)
    return sum(
        binomial_loglik(
            sum(s["k_b"] for s in group), sum(s["n_b"] for s in group), float(np.mean([s["theta_a"] for s in group]))
        )
        for group in groups.values()
    )

"""``ece``: expected calibration error of top-word predictions, for the model, the humans and a human "oracle".

A predictor names its most probable next word (``top_word``, ties to the lexicographically smallest) with
confidence = that word's probability; the prediction is correct if the word is in a gold set. ECE (10
equal-width bins by default, see ``harness.scorers.calibration``) measures whether confidence matches accuracy.

Predictors: ``model`` (the model's sample distribution), ``human`` (all human guesses), ``oracle`` (half A of a
random human split). Gold sets: ``corpus`` (the word that actually follows), ``majority`` (every word tied at the
top of all human guesses), ``heldout`` (the words tied at the top of half B of the same split, so the oracle never
sees its gold). Every ``heldout`` and every ``oracle`` metric is averaged over ``n_splits`` splits, with ``spread``
the standard deviation over splits and the CI from a bootstrap over instances of the split-averaged ECE.

Note two circular combinations, kept because they are cheap and make the table complete: ``human`` vs
``majority`` is always correct (the human top word is a majority word), so its ECE is ``1 - mean confidence``;
``human`` vs ``heldout`` predicts a gold set drawn from the same guesses it was built from. ``oracle`` vs
``heldout`` is the honest human reference. ECE can be low for a predictor that is badly wrong about the spread of
words but right about how often its top word wins: see docs/metrics.md.

``variant=paper`` reproduces the original study's ECE (Ilia & Aziz 2024; conventions in
``harness.scorers.paper_provo``): predictors ``model`` and ``human``; golds ``corpus`` (the raw passage token,
``instance.target_raw``, compared as is with the normalised word, so "space," never matches), ``majority`` (the single
first-argmax word of all human guesses, in the release's order) and ``oracle`` (the first-argmax word of a 20-response
subset drawn by the original's split, for each seed ``k`` in ``0..n_oracle_seeds-1``: the value is the mean ECE over
seeds, ``spread`` its standard deviation with ddof 0, as the original's ``np.std``). Top words are the first maximum in
support order, confidences float32, and a confidence of exactly 1.0 is in no bin but counts in ``N``. Positions with
fewer than 21 human guesses cannot give a 20-response oracle subset: their oracle values are None and they are
left out of the oracle metrics (see ``n``). ``n_splits`` is not used by this variant.

Human data given only as proportions (``counts_known`` False): the ``model`` and ``human`` predictors against the
``corpus`` and ``majority`` golds need only the distribution and are computed from the proportions; the ``oracle``
predictor and the ``heldout`` gold (``variant=paper``: the ``oracle`` gold) split people, so they are None for such
an instance and left out, and the scorer's ``notes`` say so.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, ClassVar

import numpy as np

from harness.api import (
    Instance,
    Metric,
    Option,
    Options,
    bootstrap_metric,
    counts_known,
    int_range,
    mean_metric,
    metric_rngs,
    one_of,
    positive_int,
    split_spread,
)
from harness.scorers.calibration import ece_columns
from harness.scorers.cloze import ClozeScorer, human_splits, present
from harness.scorers.distributions import Counts, as_number, majority_words, top_word
from harness.scorers.paper_provo import (
    first_argmax,
    model_order,
    oracle_subsets,
    paper_ece_columns,
    population_std,
    predict_paper,
    subset_counts,
)

PREDICTORS = ("model", "human", "oracle")
GOLDS = ("corpus", "majority", "heldout")
#: ``variant=paper``: the original study's predictors and golds (``oracle`` is a gold there, not a predictor).
PAPER_PREDICTORS = ("model", "human")
PAPER_GOLDS = ("corpus", "majority", "oracle")
PAPER_HEADLINE = ("ece_model_corpus", "ece_model_majority", "ece_model_oracle")


def predict(counts: Counts) -> tuple[str | None, float]:
    """``(top word, its probability)``; ``(None, 0.0)`` for an empty distribution (the empty-sample rule)."""
    word = top_word(counts)
    if word is None:
        return None, 0.0
    return word, counts[word] / sum(counts.values())


class EceScorer(ClozeScorer):
    """Calibration of top-word predictions. Arguments ``n_bins`` (default 10), ``n_splits`` (default 10),
    ``variant`` (``default`` or ``paper``, see the module docstring) and ``n_oracle_seeds`` (default 20, ``paper``).

    Per instance: ``pred_{model,human}`` / ``conf_{model,human}`` (word, probability), ``pred_oracle`` /
    ``conf_oracle`` (lists over splits), ``gold_majority`` (sorted list), ``gold_heldout`` (list over splits of
    sorted lists), and ``correct_{predictor}_{gold}`` flags: a bool for model/human with corpus/majority, a list
    over splits for every heldout and oracle combination. Model keys are absent in human-only runs; split keys are
    None for an instance with fewer than 2 human guesses (left out of split-based metrics).

    Metrics, for each predictor p and gold g: ``ece_{p}_{g}`` (lower better), ``acc_{p}_{g}`` (higher better);
    and ``conf_{p}`` (mean confidence, descriptive; it does not depend on the gold set).

    ``variant=paper``: per instance ``pred_{model,human}``, ``conf_{model,human}`` (float32-rounded),
    ``gold_corpus`` (the raw token), ``gold_majority`` (a list of the one first-argmax word), ``gold_oracle`` (list
    over seeds, None below 21 guesses) and ``correct_{p}_{g}`` (bool; a list over seeds for ``oracle``). Metrics
    ``ece_{p}_{g}``, ``acc_{p}_{g}``, ``conf_{p}`` for p in (model, human) and g in (corpus, majority, oracle).
    """

    name: ClassVar[str] = "ece"
    headline: ClassVar[tuple[str, ...] | None] = ("ece_model_corpus", "ece_human_corpus", "ece_oracle_corpus")
    options: ClassVar[Options] = Options(
        Option("n_bins", positive_int, 10, "equal-width confidence bins on [0, 1]"),
        Option("n_splits", positive_int, 10, "random human half-splits for the oracle and heldout metrics"),
        Option(
            "variant",
            one_of("default", "paper"),
            "default",
            "default: the harness's conventions; paper: the original study's (docs/metrics.md)",
        ),
        Option("n_oracle_seeds", int_range(1, 1000), 20, "variant paper: seeds of the 20-guess oracle subsets"),
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.n_bins: int = self.args["n_bins"]
        self.n_splits: int = self.args["n_splits"]
        self.variant: str = self.args["variant"]
        self.n_oracle_seeds: int = self.args["n_oracle_seeds"]

    def headline_metrics(self, own: Sequence[str], metrics: Collection[str]) -> list[str]:
        if self.variant == "paper":
            return [m for m in metrics if m in PAPER_HEADLINE]
        return super().headline_metrics(own, metrics)

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        if self.variant == "paper":
            self.note_people(instances, "the oracle gold (20-guess subsets of the people)")
        else:
            self.note_people(instances, "the oracle predictor and the heldout gold (random halves of the people)")

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        if self.variant == "paper":
            return self._score_paper(instance, response)
        cloze = self.cloze(instance)
        human = cloze.human_counts
        gold_majority = majority_words(human)
        row: dict[str, Any] = {"gold_majority": sorted(gold_majority)}

        total = sum(human.values())
        # Proportions of people cannot be split into halves of people: no oracle, no heldout gold (never invented).
        splits = human_splits(human, self.n_splits, rng) if total >= 2 and counts_known(cloze) else None
        gold_heldout = None if splits is None else [majority_words(b) for _, b in splits]
        row["gold_heldout"] = None if gold_heldout is None else [sorted(g) for g in gold_heldout]

        single = [("human", predict(human))]
        if response is not None:
            single.insert(0, ("model", predict(self.model_counts(response))))
        for who, (pred, conf) in single:
            row[f"pred_{who}"] = pred
            row[f"conf_{who}"] = conf
            # No corpus word in the data (a generic task without ``target``): no corpus gold, never a wrong one.
            row[f"correct_{who}_corpus"] = (pred is not None and pred == cloze.target) if cloze.target else None
            row[f"correct_{who}_majority"] = pred is not None and pred in gold_majority
            row[f"correct_{who}_heldout"] = None if gold_heldout is None else [pred in g for g in gold_heldout]

        if splits is None or gold_heldout is None:
            for key in ("pred_oracle", "conf_oracle", *(f"correct_oracle_{g}" for g in GOLDS)):
                row[key] = None
            return row
        oracle = [predict(a) for a, _ in splits]
        row["pred_oracle"] = [pred for pred, _ in oracle]
        row["conf_oracle"] = [conf for _, conf in oracle]
        row["correct_oracle_corpus"] = [pred == cloze.target for pred, _ in oracle] if cloze.target else None
        row["correct_oracle_majority"] = [pred in gold_majority for pred, _ in oracle]
        row["correct_oracle_heldout"] = [pred in g for (pred, _), g in zip(oracle, gold_heldout, strict=True)]
        return row

    def _score_paper(self, instance: Instance, response: Any | None) -> dict[str, Any]:
        cloze = self.cloze(instance)
        # Whole-number counts as ints (a JSON 40.0 is 40 people), zeros dropped; proportions are kept as they are
        # (truncating them would make up counts) and give no oracle subsets of people.
        human = {word: as_number(count) for word, count in cloze.human_counts.items() if count > 0}
        gold_corpus = cloze.target_raw or cloze.target  # the raw token; the normalised word if none was kept
        gold_majority = first_argmax(human)
        subsets = oracle_subsets(human, self.n_oracle_seeds) if counts_known(cloze) else None
        gold_oracle = None if subsets is None else [first_argmax(subset_counts(s)) for s in subsets]
        row: dict[str, Any] = {"gold_corpus": gold_corpus, "gold_majority": [gold_majority], "gold_oracle": gold_oracle}
        single = [("human", predict_paper(human))]
        if response is not None:
            model = self.model_counts(response)
            order = model_order(model, self.as_response(response).first_seen)
            single.insert(0, ("model", predict_paper(model, order)))
        for who, (pred, conf) in single:
            row[f"pred_{who}"] = pred
            row[f"conf_{who}"] = conf
            row[f"correct_{who}_corpus"] = (pred is not None and pred == gold_corpus) if gold_corpus else None
            row[f"correct_{who}_majority"] = pred is not None and pred == gold_majority
            row[f"correct_{who}_oracle"] = (
                None if gold_oracle is None else [pred is not None and pred == g for g in gold_oracle]
            )
        return row

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        if self.variant == "paper":
            # All the humans against the corpus word; against the majority and oracle golds the humans predict
            # words drawn from their own guesses (circular), so those have no honest control here.
            return {
                "ece_model_corpus": "ece_human_corpus",
                "acc_model_corpus": "acc_human_corpus",
                "conf_model": "conf_human",
            }
        # The oracle is half of the people predicting the other half: the honest human reference (docs/metrics.md).
        pairs = {m: m.replace("_model", "_oracle", 1) for m in metrics if m.startswith(("ece_model_", "acc_model_"))}
        return {**pairs, "conf_model": "conf_oracle"}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        if self.variant == "paper":
            # The original's plain ECE over all positions (mean over seeds for ``oracle``, spread np.std's ddof 0).
            return self._aggregate(per_instance, rng, PAPER_PREDICTORS, PAPER_GOLDS, paper_ece_columns, population_std)
        return self._aggregate(per_instance, rng, PREDICTORS, GOLDS, ece_columns, split_spread)

    def _aggregate(
        self,
        per_instance: list[dict[str, Any]],
        rng: np.random.Generator,
        predictors: Sequence[str],
        golds: Sequence[str],
        columns: Callable[[np.ndarray, np.ndarray, int], np.ndarray],
        spread_of: Callable[[np.ndarray], float | None],
    ) -> dict[str, Metric]:
        """ECE, accuracy and mean confidence per predictor and gold. ``columns`` computes the ECE of each column of
        ``(N, S)`` arrays (one column per split or seed); ``spread_of`` turns the per-column values into ``spread``."""
        metrics: dict[str, Metric] = {}
        kw: dict[str, Any] = {"n_resamples": self.n_resamples, "confidence": self.confidence}
        n_bins = self.n_bins
        rngs = metric_rngs(rng)

        def mean_ece(conf: np.ndarray, correct: np.ndarray) -> float:
            return float(np.mean(columns(conf, correct, n_bins)))

        for who in predictors:
            conf_rows = present(per_instance, f"conf_{who}")
            if not conf_rows:
                continue
            for gold in golds:
                key = f"correct_{who}_{gold}"
                rows = [row for row in conf_rows if row.get(key) is not None]
                if not rows:
                    continue
                correct = np.array([row[key] for row in rows], dtype=np.float64)
                conf = np.array([row[f"conf_{who}"] for row in rows], dtype=np.float64)
                if correct.ndim == 2 and conf.ndim == 1:  # one confidence, a gold per split or seed
                    conf = np.repeat(conf[:, None], correct.shape[1], axis=1)
                if correct.ndim == 1:
                    metrics[f"ece_{who}_{gold}"] = bootstrap_metric(
                        [conf, correct],
                        lambda c, k: float(columns(c, k, n_bins)[0]),
                        False,
                        rngs(f"ece_{who}_{gold}"),
                        **kw,
                    )
                    metrics[f"acc_{who}_{gold}"] = mean_metric(correct, True, rngs(f"acc_{who}_{gold}"), **kw)
                else:
                    spread = spread_of(columns(conf, correct, n_bins))
                    metrics[f"ece_{who}_{gold}"] = bootstrap_metric(
                        [conf, correct], mean_ece, False, rngs(f"ece_{who}_{gold}"), spread=spread, **kw
                    )
                    metrics[f"acc_{who}_{gold}"] = mean_metric(
                        correct.mean(axis=1),
                        True,
                        rngs(f"acc_{who}_{gold}"),
                        spread=spread_of(correct.mean(axis=0)),
                        **kw,
                    )
            conf_all = np.array([row[f"conf_{who}"] for row in conf_rows], dtype=np.float64)
            if conf_all.ndim == 1:
                metrics[f"conf_{who}"] = mean_metric(conf_all, None, rngs(f"conf_{who}"), **kw)
            else:
                metrics[f"conf_{who}"] = mean_metric(
                    conf_all.mean(axis=1), None, rngs(f"conf_{who}"), spread=spread_of(conf_all.mean(axis=0)), **kw
                )
        return metrics

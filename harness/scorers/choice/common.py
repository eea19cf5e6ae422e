"""What every multiple-choice method shares: turning scores into choices, and comparing choices with people's.

A *method* (a scorer: ``mcq_string``, ``mcq_label``, ...) gives one or more *scores* per option, for each
shuffled option order of an item. Each (method, score) pair is a *system*, e.g. ``string.prior_corrected``.
Per item and system:

- ``scores``: one list per option order, in the ORIGINAL option order (shuffling is undone before storing);
- ``p``: the model's choice distribution, the mean over orders of the per-order distribution given by the
  choice rule (below);
- ``acc``: the mean over orders of "the highest-scoring option is the target" (a tie counts as the share of
  tied options that are the target);
- ``tvd``: total variation distance between ``p`` and the human choice proportions.

Choice rule (argument ``choice_rule``, default ``auto``):

- ``normalize``: p_k = s_k / sum(s). ``auto`` uses it for probabilities and probability ratios (option and
  label probabilities, average token probability, prior-corrected probabilities); for these it equals the
  softmax of the log-scores, and it is computed that way so tiny probabilities do not underflow;
- ``softmax``: p = softmax(s / choice_temperature). ``auto`` uses it for scores on a log scale (average
  log-probability, surprisal reduction), for ratings and for cosine similarities;
- ``argmax``: all mass on the highest score (split equally between ties);
- free generation always uses the frequencies of its classified answers (``frequency``).

Fit to humans uses a smoothed distribution, p' = (1 - fit_epsilon) p + fit_epsilon / K, so that a model that
gives an option probability 0 (argmax rule, free generation) has a finite log-likelihood; ``fit_epsilon`` is an
argument (default 0.01). Definitions of the fit metrics are in :func:`fit_metrics`.

``variant: paper`` (argument ``variant``, default ``default``) computes ``ll_binomial`` as the follow-up study
does instead (Tsvilodub et al., 2024, ``analysis/testing-stats.R``): the rate is the share of the model's argmax
choices that are the target, with no smoothing but a clip of 0 and 1 (:func:`paper_binomial`). Every other metric
is the same under both variants.

Human choices given only as proportions (``ChoiceInstance.counts_known`` False): ``acc``, ``tvd`` and ``p_target``
need only the distribution and are computed from the proportions. Of the fit metrics, ``ll_multinomial`` and
``ll_binomial`` are likelihoods of the numbers of people who chose each option, so they are left out of every set of
items (overall, per phenomenon) that holds such an item; ``logprob_per_choice`` is then the mean over items of the
expected log-probability of one person's choice (each item weighs the same, as no item's number of people is
known). The scorer's ``notes`` say so.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import gammaln, log_softmax, softmax

from harness.api import (
    PROPORTIONS_NOTE,
    ArgsScorer,
    ChoiceInstance,
    HarnessError,
    Instance,
    Metric,
    Option,
    Options,
    counted_people_reason,
    metric_rngs,
    one_of,
    positive_int,
)
from harness.api import positive_float as _positive_float
from harness.scorers.choice.binomial import PAPER_RATE_EPSILON as PAPER_RATE_EPSILON
from harness.scorers.choice.binomial import binomial_loglik as binomial_loglik
from harness.scorers.choice.binomial import clip_rate as clip_rate
from harness.scorers.choice.binomial import paper_binomial

CHOICE_RULES: tuple[str, ...] = ("auto", "normalize", "softmax", "argmax")
#: How ``ll_binomial`` is computed: the harness's (mean target probability) or the follow-up study's (argmax rate).
VARIANTS: tuple[str, ...] = ("default", "paper")
#: How ``auto`` treats each kind of score (see the module docstring).
SCORE_KINDS: tuple[str, ...] = ("log_probability", "probability", "log_scale", "rating", "similarity")
#: Keys of a system's per-item values; ``mcq_robustness`` finds systems in the sample rows by these keys.
SYSTEM_KEYS: frozenset[str] = frozenset({"p", "acc", "tvd", "scores"})


def positive_float(value: Any) -> float:
    """A finite number > 0, as a float (a temperature)."""
    try:
        number = _positive_float(value)
    except ValueError:
        raise ValueError(f"expected a positive number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"expected a positive number, got {value!r}")
    return number


def unit_interval(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"expected a number in [0, 1), got {value!r}") from None
    if isinstance(value, bool) or not 0.0 <= number < 1.0:
        raise ValueError(f"expected a number in [0, 1), got {value!r}")
    return number


def choice_distribution(scores: Sequence[float], kind: str, rule: str, temperature: float = 1.0) -> np.ndarray:
    """The choice distribution over options that ``rule`` gives for one order's scores of ``kind``.

    ``log_probability`` scores are natural-log probabilities (or log ratios) whose exponent is the score that
    ``normalize`` renormalises; ``probability`` scores are non-negative numbers renormalised as they are.
    """
    s = np.asarray(scores, dtype=np.float64)
    if not np.all(np.isfinite(s)):
        raise HarnessError(f"choice scores must be finite, got {list(scores)}")
    if rule == "auto":
        rule = "normalize" if kind in ("log_probability", "probability") else "softmax"
    if rule == "argmax":
        top = s == s.max()
        return top / top.sum()
    if rule == "normalize":
        if kind == "log_probability":
            return np.exp(log_softmax(s))
        if np.any(s < 0):
            raise HarnessError(f"choice_rule normalize needs non-negative scores; {kind} scores {list(scores)}")
        total = s.sum()
        return s / total if total > 0 else np.full(len(s), 1.0 / len(s))
    if rule == "softmax":
        return np.asarray(softmax(s / temperature), dtype=np.float64)
    raise HarnessError(f"unknown choice rule {rule!r}")


def top_is_target(scores: Sequence[float], target: int) -> float:
    """1 if the target has the highest score, the target's share of a tie, else 0."""
    s = np.asarray(scores, dtype=np.float64)
    top = np.flatnonzero(s == s.max())
    return float(target in top) / len(top)


def argmax_is_target(scores: Sequence[float], target: int) -> bool:
    """Whether the argmax choice is the target, a tie going to the lowest option index (``np.argmax``).

    The index is the instance's own option order, in which every method stores its scores. Hu et al.'s code takes
    ``np.argmax`` over the options in the order they were shown, so a tie went to the option shown first there;
    the two differ only on exact ties, which none of Hu et al.'s 8,320 released distributions has.
    """
    return int(np.argmax(np.asarray(scores, dtype=np.float64))) == target


def tvd(p: ArrayLike, q: ArrayLike) -> float:
    return 0.5 * float(np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum())


def smooth(p: ArrayLike, epsilon: float) -> np.ndarray:
    a = np.asarray(p, dtype=np.float64)
    return (1.0 - epsilon) * a + epsilon / len(a)


def multinomial_loglik(counts: Sequence[float], p: ArrayLike) -> float:
    """log Multinomial(counts | n, p), coefficient included: the probability of the exact human choice counts."""
    c = np.asarray(counts, dtype=np.float64)
    q = np.asarray(p, dtype=np.float64)
    if np.any((q <= 0) & (c > 0)):
        return float("-inf")
    mask = c > 0
    coefficient = gammaln(c.sum() + 1) - gammaln(c + 1).sum()
    return float(coefficient + (c[mask] * np.log(q[mask])).sum())


@dataclass(frozen=True)
class ItemHuman:
    """The human side of one item, kept by a scorer between ``score`` and ``aggregate``."""

    phenomenon: str
    #: The people's choices per option (``ChoiceInstance.human_counts``): counts, or proportions (``counts_known``).
    counts: tuple[float, ...]
    #: The target option, or None where the data names none (``ChoiceInstance.target``).
    target: int | None
    #: False where the item gives only proportions of people (``ChoiceInstance.counts_known``).
    counts_known: bool = True

    @classmethod
    def of(cls, item: ChoiceInstance) -> ItemHuman:
        """The human side of ``item``."""
        return cls(item.phenomenon, item.human_counts, item.target, item.counts_known)

    @property
    def proportions(self) -> np.ndarray:
        c = np.asarray(self.counts, dtype=np.float64)
        return c / c.sum()


def fit_metrics(
    humans: Sequence[ItemHuman],
    distributions: Sequence[Sequence[float]],
    epsilon: float,
    argmax_target: Sequence[Sequence[int]] | None = None,
) -> dict[str, float]:
    """Fit of the model's choice distributions to the human choices of a set of items.

    - ``ll_multinomial``: sum over items of log Multinomial(human counts | smoothed p), the full distributional
      prediction over every option;
    - ``logprob_per_choice``: the same without the coefficients, divided by the number of human choices: the
      mean log-probability of one person's choice (comparable across data sets and with the human control);
    - ``ll_binomial``: per phenomenon, log Binomial(K | N, theta) where K is the number of human choices of the
      target over the phenomenon's items, N all choices, and theta the model's mean target probability over
      those items (the follow-up study's binomial on the target rate); summed over phenomena. With
      ``argmax_target`` (``variant: paper``) it is :func:`paper_binomial` instead.

    If any item gives only proportions of people (``counts_known`` False), only ``logprob_per_choice`` is returned:
    the mean over items of ``sum_k h_k log p'_k`` (``h`` the people's proportions), each item weighing the same;
    the two likelihoods need the numbers of people and are not made up.
    """
    targets = [human.target for human in humans]
    if not all(human.counts_known for human in humans):
        per_item = []
        for human, p in zip(humans, distributions, strict=True):
            h, q = human.proportions, smooth(p, epsilon)
            chosen = h > 0
            per_item.append(float("-inf") if np.any(q[chosen] <= 0) else float((h[chosen] * np.log(q[chosen])).sum()))
        return {"logprob_per_choice": float(np.mean(per_item)) if per_item else float("nan")}
    ll_multi = 0.0
    logprob = 0.0
    n_choices = 0
    by_phenomenon: dict[str, tuple[int, int, list[float]]] = {}
    for human, p in zip(humans, distributions, strict=True):
        q = smooth(p, epsilon)
        c = np.asarray(human.counts, dtype=np.float64)
        ll_multi += multinomial_loglik(human.counts, q)
        logprob += float((c * np.log(q)).sum())
        n_choices += int(c.sum())
        if human.target is not None:
            k, n, thetas = by_phenomenon.get(human.phenomenon, (0, 0, []))
            by_phenomenon[human.phenomenon] = (
                k + int(human.counts[human.target]),
                n + int(c.sum()),
                [*thetas, q[human.target]],
            )
    fit = {"ll_multinomial": ll_multi, "logprob_per_choice": logprob / n_choices if n_choices else float("nan")}
    if any(t is None for t in targets):  # the binomial is on the target rate: no target, no binomial
        return fit
    ll_binom = sum(binomial_loglik(k, n, float(np.mean(t))) for k, n, t in by_phenomenon.values())
    if argmax_target is not None:
        ll_binom = paper_binomial(humans, argmax_target)
    return {**fit, "ll_binomial": float(ll_binom)}


def system_values(
    instance: ChoiceInstance,
    per_order_scores: Sequence[Sequence[float]],
    kind: str,
    rule: str,
    temperature: float,
    paper: bool = False,
) -> dict[str, Any]:
    """A system's per-item values from its per-order scores (each in the original option order); ``paper`` adds
    ``argmax_target``, [orders whose argmax choice is the target, orders], for ``variant: paper``."""
    if not per_order_scores:
        raise HarnessError(f"item {instance.id}: no scores")
    dists = [choice_distribution(s, kind, rule, temperature) for s in per_order_scores]
    p = np.mean(dists, axis=0)
    human = np.asarray(instance.human_counts, dtype=np.float64)
    human = human / human.sum()
    values = {
        "scores": [[_round(x) for x in s] for s in per_order_scores],
        "p": [_round(x) for x in p],
        "acc": None,
        "p_target": None,
        "tvd": _round(tvd(p, human)),
    }
    if instance.target is None:  # no target in the data: no accuracy, no target probability
        return values
    values["acc"] = float(np.mean([top_is_target(s, instance.target) for s in per_order_scores]))
    values["p_target"] = _round(float(p[instance.target]))
    if paper:
        hits = sum(argmax_is_target(s, instance.target) for s in per_order_scores)
        values["argmax_target"] = [hits, len(per_order_scores)]
    return values


def _round(x: float) -> float:
    return float(f"{float(x):.10g}")


class ChoiceScorer(ArgsScorer):
    """Base of the multiple-choice methods: one scorer per method, several systems (scores) per method.

    Subclasses set ``name``, ``method`` (the system prefix), ``requested_kinds`` and ``systems`` (score name ->
    kind), and implement ``queries`` and ``item_scores`` (per system, the per-order scores in the original
    option order). Human-only runs (``response is None``) give no values.
    """

    request_kinds: ClassVar[frozenset[str]] = frozenset({"multiple_choice"})
    method: ClassVar[str] = ""
    systems: dict[str, str] = {}
    #: Each system's accuracy (``string.prob/acc``); per-group breakdowns stay in ``--full-table``.
    headline: ClassVar[tuple[str, ...] | None] = ("*/acc",)
    #: The headline of a task with no accuracy (its data names no target: a label distribution): each system's TVD
    #: to the people's distribution (``string.prob/tvd``), the chance row's beside them (``chance/tvd``).
    headline_without_target: ClassVar[tuple[str, ...]] = ("*/tvd",)
    options: ClassVar[Options] = Options(
        Option("choice_rule", one_of(*CHOICE_RULES), "auto", "how scores become choices", " | ".join(CHOICE_RULES)),
        Option("choice_temperature", positive_float, 1.0, "temperature of the softmax choice rule", "float > 0"),
        Option("fit_epsilon", unit_interval, 0.01, "smoothing of the model's choices in fits to humans", "0 <= x < 1"),
        Option(
            "variant",
            one_of(*VARIANTS),
            "default",
            "ll_binomial: default (mean target probability) or paper (Tsvilodub et al. 2024: argmax target rate)",
            " | ".join(VARIANTS),
        ),
    )

    #: This method's metrics that need the numbers of people (left out where items give only proportions).
    people_needs: ClassVar[str] = (
        "ll_multinomial and ll_binomial (likelihoods of the numbers of people choosing each option)"
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.rule: str = self.args["choice_rule"]
        self.temperature: float = self.args["choice_temperature"]
        self.epsilon: float = self.args["fit_epsilon"]
        self.paper: bool = self.args["variant"] == "paper"
        self._humans: list[ItemHuman | None] = []

    @staticmethod
    def item(instance: Instance) -> ChoiceInstance:
        if not isinstance(instance, ChoiceInstance):
            raise HarnessError(f"multiple-choice scorers need choice instances, got {type(instance).__name__}")
        return instance

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        if any(response is not None for response in responses):  # a human-only run has no fit metrics to note
            self.note_people(instances)

    def note_people(self, instances: list[Instance]) -> None:
        """Say in ``notes`` which metrics are left out because some items give only proportions of people."""
        reason = counted_people_reason(instances, self.people_needs)
        if reason is None:
            self.notes.pop(PROPORTIONS_NOTE, None)
        else:
            self.notes[PROPORTIONS_NOTE] = (
                f"{reason}; they are left out of every set of items that holds one, and logprob_per_choice there is "
                "the mean over items of one person's expected log-probability (each item weighs the same)"
            )

    def system_name(self, score: str) -> str:
        return f"{self.method}.{score}"

    def item_scores(self, instance: ChoiceInstance, answers: dict[str, Any]) -> dict[str, list[list[float]]]:
        raise NotImplementedError

    def extra_values(self, instance: ChoiceInstance, answers: dict[str, Any]) -> dict[str, Any]:
        """Method-specific per-item values (e.g. free generation's classified answers), merged into the row."""
        return {}

    def kind_of(self, score: str) -> str:
        return self.systems[score]

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        item = self.item(instance)
        if response is None:
            self._humans.append(None)
            return {}
        self._humans.append(ItemHuman.of(item))
        values: dict[str, Any] = {}
        for score, per_order in self.item_scores(item, response).items():
            row = system_values(item, per_order, self.kind_of(score), self.rule, self.temperature, self.paper)
            values[self.system_name(score)] = row
        values.update(self.extra_values(item, response))
        return values

    def headline_metrics(self, own: Sequence[str], metrics: Collection[str]) -> list[str]:
        names = super().headline_metrics(own, metrics)
        if names or not self.headline:
            return names
        # No accuracy anywhere in the task: a label distribution, whose headline is the distance to the people's.
        patterns = self.headline_without_target
        return [m for m in metrics if any(fnmatch.fnmatchcase(m, pattern) for pattern in patterns)]

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        # Every way of asking is compared with the people's own numbers (mcq_human), overall and per phenomenon.
        human = {
            "acc": "human/acc",
            "tvd": "human/control_tvd",
            "logprob_per_choice": "human/control_logprob_per_choice",
        }
        pairs: dict[str, str] = {}
        systems = {self.system_name(score) for score in self.systems}
        for metric in metrics:
            system, _, rest = metric.partition("/")
            key, _, group = rest.partition("/")
            if system in systems and key in human:
                pairs[metric] = human[key] + (f"/{group}" if group else "")
        return pairs

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        humans = self._humans[-len(per_instance) :] if per_instance else []
        self._humans = []
        rows = [(h, v) for h, v in zip(humans, per_instance, strict=True) if h is not None and v]
        if not rows:
            return {}
        rngs = metric_rngs(rng)
        metrics: dict[str, Metric] = {}
        groups: dict[str, list[int]] = {"": list(range(len(rows)))}
        for i, (h, _) in enumerate(rows):
            groups.setdefault(h.phenomenon, []).append(i)
        for score in self.systems:
            system = self.system_name(score)
            for group, idx in groups.items():
                suffix = f"/{group}" if group else ""
                sub = [rows[i] for i in idx if system in rows[i][1]]
                if not sub:
                    continue
                name = f"{system}/acc{suffix}"
                accs = [v[system]["acc"] for _, v in sub if v[system]["acc"] is not None]
                if accs:
                    metrics[name] = self.mean_metric(accs, True, rngs(name))
                name = f"{system}/tvd{suffix}"
                metrics[name] = self.mean_metric([v[system]["tvd"] for _, v in sub], False, rngs(name))
                argmax = [v[system].get("argmax_target") for _, v in sub] if self.paper else None
                argmax = argmax if argmax is not None and None not in argmax else None
                fit = fit_metrics([h for h, _ in sub], [v[system]["p"] for _, v in sub], self.epsilon, argmax)
                for key, value in fit.items():
                    metrics[f"{system}/{key}{suffix}"] = Metric(value, True, n=len(sub))
            metrics.update(self.extra_metrics(system, score, rows, groups, rngs))
        return metrics

    def extra_metrics(
        self,
        system: str,
        score: str,
        rows: list[tuple[ItemHuman, dict[str, Any]]],
        groups: dict[str, list[int]],
        rngs: Callable[[str], np.random.Generator],
    ) -> dict[str, Metric]:
        return {}


def order_count(params: dict[str, Any]) -> int:
    return positive_int(params.get("option_orders", 5))

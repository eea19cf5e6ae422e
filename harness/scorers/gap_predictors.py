"""``gap_predictors``: which contexts does the model get wrong? (Ilia & Aziz 2024, appendix B)

A Bayesian linear regression with automatic relevance determination (scikit-learn's ``ARDRegression``) of the
per-context TVD between the model and a group of people on what describes the context:

- ``entropy_human``, ``entropy_model``: the entropy (bits) of all the human guesses and of the model's words;
- ``tvd_oracle``: the TVD between two random halves of the people (how much people disagree among themselves);
- ``context_length``: words in the context (split on whitespace, as the study counted);
- ``ends_with_punctuation``: 1 if the context's last word ends with punctuation (the next word opens a clause);
- ``last_pos=<TAG>``: the Universal POS of the context's last word (spaCy, the packaged English pipeline; the
  study used NLTK's tagger), one indicator per tag seen at least ``min_pos_count`` times, the most frequent tag
  the baseline.

The target is the mean over ``n_splits`` random halves A of TVD(model, A) (the study used one half). Continuous
features are standardised (mean 0, standard deviation 1), so each coefficient is the change in TVD per standard
deviation; indicators stay 0/1. ARD prunes features whose coefficient it finds irrelevant (exactly 0); the others
get a posterior mean and standard deviation, reported with a ``confidence`` credible interval
(mean +- z * sd). Metrics: ``gap_r2`` (in-sample R squared of the posterior mean) and, per continuous feature,
``gap_coef_<feature>`` with its interval; the report ``gap_predictors`` holds every coefficient, the tags, and
the number of contexts.

The target and ``tvd_oracle`` need random halves of the people: a task with an instance that gives only proportions
of people (``counts_known`` False) makes the scorer unavailable, with the reason (``require_counted_people``).
"""

from __future__ import annotations

import string
from collections import Counter
from typing import Any, ClassVar

import numpy as np
from scipy.stats import norm

from harness.api import Instance, Metric, Option, Options, ScorerUnavailable, positive_int, require_counted_people
from harness.scorers.cloze import ClozeScorer, human_splits
from harness.scorers.distributions import counts_tvd, entropy_bits
from harness.scorers.pos_tvd import package_list
from harness.scorers.probes import spacy_docs
from harness.scorers.tvd import EMPTY_MODEL_TVD

CONTINUOUS = ("entropy_human", "entropy_model", "tvd_oracle", "context_length")
PUNCTUATION = frozenset(string.punctuation + "\u201c\u201d\u2018\u2019\u2014\u2013\u2026")


def last_word_pos(tags: tuple[str, ...]) -> str:
    """The POS of the context's last word: the last tag that is not punctuation (``PUNCT``), else ``PUNCT``."""
    words = [tag for tag in tags if tag not in ("PUNCT", "SPACE")]
    return words[-1] if words else "PUNCT"


class GapPredictorsScorer(ClozeScorer):
    """ARD regression of the per-context model-vs-people TVD on the context's features (module docstring)."""

    name: ClassVar[str] = "gap_predictors"
    extras: ClassVar[tuple[str, ...]] = ("probes",)
    headline: ClassVar[tuple[str, ...] | None] = ("gap_r2",)
    options: ClassVar[Options] = Options(
        Option("n_splits", positive_int, 10, "random human halves averaged in the target and in tvd_oracle"),
        Option("min_pos_count", positive_int, 10, "contexts a last-word tag needs to get its own indicator"),
        Option("pipelines", package_list, spacy_docs.DEFAULT_PIPELINES["en"], "spaCy packages tried in order"),
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.last_pos: dict[str, str] = {}
        self.pipeline: spacy_docs.Pipeline | None = None
        self.fit: dict[str, Any] | None = None

    def describe(self) -> dict[str, Any]:
        return self.pipeline.describe() if self.pipeline is not None else {}

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        require_counted_people(
            instances,
            "the regressed TVD and its tvd_oracle feature (the model and the people against random halves "
            "of the people)",
        )
        try:
            import sklearn.linear_model  # noqa: F401 - checked here so a missing install is a clear reason
        except ImportError as exc:
            raise ScorerUnavailable(f"scikit-learn is not installed ({exc})") from None
        self.pipeline = pipeline = spacy_docs.require_tagger(self.args["pipelines"])
        contexts = [self.cloze(inst).context.strip() for inst in instances]
        for context, tags in zip(contexts, spacy_docs.pos_tags(pipeline, [c or "." for c in contexts]), strict=True):
            self.last_pos[context] = last_word_pos(tags)

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        if response is None:
            return {}
        model = self.model_counts(response)
        splits = human_splits(cloze.human_counts, self.args["n_splits"], rng)
        usable = [(a, b) for a, b in splits if a and b]
        if not usable:
            return {"gap_features": None}
        context = cloze.context.strip()
        words = context.split()
        return {
            "gap_target": float(np.mean([counts_tvd(model, a) if model else EMPTY_MODEL_TVD for a, _ in usable])),
            "gap_features": {
                "entropy_human": entropy_bits(cloze.human_counts),
                "entropy_model": entropy_bits(model) if model else 0.0,
                "tvd_oracle": float(np.mean([counts_tvd(a, b) for a, b in usable])),
                "context_length": len(words),
                "ends_with_punctuation": int(bool(words) and words[-1][-1] in PUNCTUATION),
                "last_pos": self.last_pos.get(context, "PUNCT"),
            },
        }

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        from sklearn.linear_model import ARDRegression

        rows = [row for row in per_instance if row.get("gap_features") is not None]
        if len(rows) < 10:
            return {}
        tags = Counter(row["gap_features"]["last_pos"] for row in rows)
        baseline = min(tags, key=lambda tag: (-tags[tag], tag))
        indicators = sorted(t for t, n in tags.items() if n >= self.args["min_pos_count"] and t != baseline)
        names = [*CONTINUOUS, "ends_with_punctuation", *(f"last_pos={t}" for t in indicators)]
        raw = np.array(
            [
                [float(row["gap_features"][f]) for f in CONTINUOUS]
                + [float(row["gap_features"]["ends_with_punctuation"])]
                + [float(row["gap_features"]["last_pos"] == t) for t in indicators]
                for row in rows
            ]
        )
        y = np.array([float(row["gap_target"]) for row in rows])
        means, sds = raw[:, : len(CONTINUOUS)].mean(axis=0), raw[:, : len(CONTINUOUS)].std(axis=0)
        sds[sds == 0] = 1.0
        x = raw.copy()
        x[:, : len(CONTINUOUS)] = (raw[:, : len(CONTINUOUS)] - means) / sds
        model = ARDRegression(compute_score=True, max_iter=1000).fit(x, y)
        kept = model.lambda_ < model.threshold_lambda
        sd = np.zeros(len(names))
        variances = np.clip(np.diag(model.sigma_), 0.0, None)
        # scikit-learn keeps the posterior covariance of the features it did not prune only.
        sd[kept if len(variances) == int(kept.sum()) else slice(None)] = np.sqrt(variances)
        z = float(norm.ppf(0.5 + self.confidence / 2))
        r2 = float(model.score(x, y))
        coefficients: list[dict[str, Any]] = [
            {
                "feature": name,
                "coef": float(model.coef_[i]),
                "sd": float(sd[i]),
                "ci": [float(model.coef_[i] - z * sd[i]), float(model.coef_[i] + z * sd[i])],
                "pruned": not bool(kept[i]),
            }
            for i, name in enumerate(names)
        ]
        self.fit = {
            "contexts": len(rows),
            "r2": r2,
            "intercept": float(model.intercept_),
            "baseline_pos": baseline,
            "pos_counts": dict(sorted(tags.items())),
            "standardised": {
                f: {"mean": float(m), "sd": float(s)} for f, m, s in zip(CONTINUOUS, means, sds, strict=True)
            },
            "coefficients": coefficients,
            "ci_level": self.confidence,
        }
        metrics = {"gap_r2": Metric(value=r2, higher_is_better=None, n=len(rows))}
        for c in coefficients[: len(CONTINUOUS)]:
            metrics[f"gap_coef_{c['feature']}"] = Metric(
                value=c["coef"], higher_is_better=None, ci_low=c["ci"][0], ci_high=c["ci"][1], stderr=c["sd"],
                n=len(rows), ci_level=self.confidence,
            )  # fmt: skip
        return metrics

    def report(
        self, instances: list[Instance], values: list[dict[str, Any]], metrics: dict[str, Metric]
    ) -> dict[str, Any] | None:
        if self.fit is None:
            return None
        lines = [f"ARD regression of TVD(model, half of the people) on {self.fit['contexts']} contexts, "
                 f"R^2 {self.fit['r2']:.3f}:"]  # fmt: skip
        for c in sorted(self.fit["coefficients"], key=lambda c: -abs(c["coef"])):
            state = "pruned" if c["pruned"] else f"[{c['ci'][0]:+.4f}, {c['ci'][1]:+.4f}]"
            lines.append(f"  {c['feature']:<24} {c['coef']:+.4f} {state}")
        return {**self.fit, "text": "\n".join(lines)}

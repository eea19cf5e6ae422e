"""Shared plumbing of the next-word (cloze) scorers: the base class, input checks, the model distribution.

Rules that every cloze scorer applies the same way live here, so that the metrics agree on them:

- The model distribution is ``response.counts`` normalised over the accepted words; rejected samples
  (``response.rejected``) are excluded from it and reported separately by the ``tvd`` scorer.
- Empty-sample rule: if the model produced no accepted word for an instance, its distribution is empty. The
  scorers then use the worst value rather than dropping the instance (dropping would reward a model for
  failing on hard contexts): TVD = 1.0, top-word prediction None (incorrect), confidence 0, probability of the
  corpus word 0. Entropy is undefined and is left out of ``entropy_model`` (its ``n`` shows how many counted).
  The ``tvd`` scorer reports how many instances this happened to as ``n_no_model_words``.
- ``response is None`` means a human-only run: scorers return only the values computable from human data.
- Human data given only as proportions (``ClozeInstance.counts_known`` False): every value computed from the human
  distribution is computed from the proportions as they are; a value that needs individual people (random halves,
  groups of people) is never made up from them. A scorer all of whose metrics need people is unavailable for the
  task (``harness.scoring.base.require_counted_people`` in ``prepare``); one that keeps its other metrics leaves those
  values out for such instances and says so in its ``notes`` (:meth:`ClozeScorer.note_people`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import numpy as np

from harness.api import (
    PROPORTIONS_NOTE,
    ArgsScorer,
    ClozeInstance,
    HarnessError,
    Instance,
    Metric,
    SampleWordsResponse,
    ScorerUnavailable,
    counted_people_reason,
    mean_metric,
    metric_rngs,
)
from harness.scorers.distributions import Counts, split_halves

#: A response type with ``from_record`` (``SampleWordsResponse``, ``WordDistributionResponse``).
R = TypeVar("R")


class ClozeScorer(ArgsScorer):
    """Base of the next-word scorers (arguments declared and checked as in ``harness.scoring.args.ArgsScorer``)."""

    request_kinds: ClassVar[frozenset[str]] = frozenset({"sample_words"})

    def cloze(self, instance: Instance) -> ClozeInstance:
        """The instance as a ``ClozeInstance`` with at least one human guess, or a ``HarnessError``."""
        if not isinstance(instance, ClozeInstance):
            raise HarnessError(f"scorer '{self.name}' needs cloze instances, got {type(instance).__name__}")
        if sum(instance.human_counts.values()) <= 0:
            raise HarnessError(f"scorer '{self.name}': instance '{instance.id}' has no human guesses")
        return instance

    def response_as(self, response: Any, response_type: type[R], kind: str) -> R:
        """``response`` as a ``response_type`` of request kind ``kind``; a stored record (``to_record`` dict) is
        accepted too."""
        if isinstance(response, Mapping):
            response = response_type.from_record(dict(response))  # type: ignore[attr-defined]
        if not isinstance(response, response_type):
            raise HarnessError(f"scorer '{self.name}' needs {kind} responses, got {type(response).__name__}")
        return response

    def as_response(self, response: Any) -> SampleWordsResponse:
        """The response as a ``SampleWordsResponse``; a stored record (``to_record`` dict) is accepted too."""
        return self.response_as(response, SampleWordsResponse, "sample_words")

    def present_means(
        self, per_instance: list[dict[str, Any]], keys: tuple[str, ...], higher_is_better: bool | None, rng: Any
    ) -> dict[str, Metric]:
        """The mean, with its bootstrap interval, of each of ``keys`` over the rows that have a value for it (one
        bootstrap generator per metric name, ``metric_rngs``); keys no row has are left out."""
        metrics: dict[str, Metric] = {}
        rngs = metric_rngs(rng)
        for key in keys:
            rows = present(per_instance, key)
            if rows:
                values = [float(row[key]) for row in rows]
                metrics[key] = mean_metric(
                    values, higher_is_better, rngs(key), n_resamples=self.n_resamples, confidence=self.confidence
                )
        return metrics

    def note_people(self, instances: list[Instance], needs: str) -> None:
        """For ``prepare``: where some instances give only proportions of people, say in ``notes`` that ``needs``
        (this scorer's values that split or draw people) are left out for them (``counted_people_reason``)."""
        reason = counted_people_reason(instances, needs)
        if reason is None:
            self.notes.pop(PROPORTIONS_NOTE, None)
        else:
            self.notes[PROPORTIONS_NOTE] = f"{reason}; left out for those instances (each metric's n shows it)"

    def require_corpus_word(self, instances: list[Instance], needs: str) -> None:
        """For ``prepare``: a scorer whose every metric compares with the corpus word cannot run on instances whose
        data gives none (a generic cloze task without ``target``); comparing with an empty word would score 0."""
        missing = sum(1 for instance in instances if isinstance(instance, ClozeInstance) and not instance.target)
        if missing:
            raise ScorerUnavailable(
                f"{missing} of {len(instances)} instances have no corpus word (the task's data gives no target), "
                f"so {needs} cannot be computed"
            )

    def model_counts(self, response: Any) -> dict[str, int]:
        """The accepted model words with their counts (empty if the model produced none)."""
        return {word: int(count) for word, count in self.as_response(response).counts.items() if count > 0}


def human_splits(
    counts: Counts, n_splits: int, rng: np.random.Generator
) -> list[tuple[dict[str, int], dict[str, int]]]:
    """``n_splits`` independent random half-splits of the human guesses (see ``split_halves``; counts of people
    only: proportions raise ``ValueError``)."""
    return [split_halves(counts, rng) for _ in range(n_splits)]


def present(per_instance: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The per-instance rows that carry ``key`` with a value (human-only rows lack the model keys)."""
    return [row for row in per_instance if row.get(key) is not None]

"""An example harness plugin: a task, a scorer and a model adapter, registered through the entry-point group."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

import numpy as np

from harness.hookspecs import hookimpl
from harness.instances import ClozeInstance, Instance
from harness.models import ModelAdapter
from harness.requests import SampleWordsRequest, SampleWordsResponse
from harness.scoring import Metric, Scorer
from harness.stats import mean_metric
from harness.text import normalise_word


class ContextUnigramAdapter(ModelAdapter):
    """Guesses the next word by drawing one of the context's words: a floor any language model should beat."""

    supported_requests = frozenset({"sample_words"})

    def sample_words(self, request: SampleWordsRequest) -> SampleWordsResponse:
        words = [w for w in (normalise_word(t) for t in request.context.split()) if w]
        if not words:
            return SampleWordsResponse(counts={}, n_requested=request.n, rejected={"empty": request.n})
        rng = np.random.default_rng(request.seed)
        draws = rng.integers(0, len(words), size=request.n)
        counts: dict[str, int] = {}
        for i in draws:
            counts[words[i]] = counts.get(words[i], 0) + 1
        return SampleWordsResponse(counts=counts, n_requested=request.n)

    def close(self) -> None:
        pass


class SupportCoverageScorer(Scorer):
    """Share of human guesses whose word appears among the model's samples (higher is better)."""

    name = "support_coverage"
    request_kinds = frozenset({"sample_words"})

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        if response is None or not isinstance(instance, ClozeInstance):
            return {}
        total = sum(instance.human_counts.values())
        covered = sum(c for w, c in instance.human_counts.items() if w in response.counts)
        return {"support_coverage": covered / total if total else 0.0}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        values = [v["support_coverage"] for v in per_instance if "support_coverage" in v]
        if not values:
            return {}
        return {"support_coverage": mean_metric(values, True, rng)}


@hookimpl
def register_models(register: Callable[[str, Any], None]) -> None:
    register("context-unigram", ContextUnigramAdapter)


@hookimpl
def register_scorers(register: Callable[[Any], None]) -> None:
    register(SupportCoverageScorer)


@hookimpl
def register_tasks(register: Callable[[Any], None]) -> None:
    register(resources.files(__name__) / "provo-openers.yaml")

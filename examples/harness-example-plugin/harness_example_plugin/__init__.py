"""An example harness plugin: a request kind, tasks, two scorers and a model adapter, registered through the
entry-point group. Everything it uses comes from ``harness.api``; one task reads a small data set the package ships
(``data/``, package-data in ``pyproject.toml``).

The request kind, ``guess_word``, asks a model for its single best guess of the next word of a cloze context:
adding it took the kind class below, its request and response types, and one ``register_request_kinds`` line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, ClassVar

import numpy as np

from harness.api import (
    ArgsScorer,
    ClozeInstance,
    Instance,
    Metric,
    ModelAdapter,
    Option,
    Options,
    RegisterModel,
    RegisterRequestKind,
    RegisterScorer,
    RegisterTask,
    RequestKind,
    SampleWordsRequest,
    SampleWordsResponse,
    boolean,
    hookimpl,
    normalise_word,
)

# --------------------------------------------------------------------------------------------- the request kind


@dataclass(frozen=True)
class GuessWordRequest:
    """Ask for one best guess of the word after ``context``."""

    context: str
    seed: int

    kind: ClassVar[str] = "guess_word"


@dataclass
class GuessWordResponse:
    word: str

    def to_record(self) -> dict[str, Any]:
        return {"word": self.word}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> GuessWordResponse:
        return cls(str(record["word"]))


class GuessWordKind(RequestKind):
    """One guess per cloze context, answered by an adapter's ``guess_word_many``."""

    name = "guess_word"
    request_type = GuessWordRequest
    response_type = GuessWordResponse
    instance_type = ClozeInstance
    view = "cloze"
    params: ClassVar[Options] = Options(
        Option("normalise", boolean, True, "compare the guess with the human words after the task's word rules")
    )

    def build(self, config: Any, instance: Instance, seed: int, scorers: Sequence[Any]) -> GuessWordRequest:
        self.check_instance(config, instance)
        assert isinstance(instance, ClozeInstance)
        return GuessWordRequest(context=instance.context, seed=seed)

    def summarize(self, summary: dict[str, Any], record: dict[str, Any]) -> None:
        summary["guesses"] = summary.get("guesses", 0) + 1

    def human_view(self, sample: dict[str, Any]) -> Any:
        counts = sample.get("human", {}).get("counts", {})
        total = sum(counts.values()) or 1
        return {word: round(count / total, 5) for word, count in sorted(counts.items(), key=lambda kv: -kv[1])[:15]}

    def model_view(self, sample: dict[str, Any], method: str | None) -> Any:
        return {(sample.get("response") or {}).get("word", ""): 1.0}


# ----------------------------------------------------------------------------------------------- the adapter


class ContextUnigramAdapter(ModelAdapter):
    """Guesses the next word from the context's own words: a floor any language model should beat.

    ``sample_words`` draws context words uniformly; ``guess_word`` guesses the context's most frequent word
    (the latest of equally frequent ones).
    """

    supported_requests = frozenset({"sample_words", "guess_word"})

    @staticmethod
    def _words(context: str) -> list[str]:
        return [w for w in (normalise_word(t) for t in context.split()) if w]

    def sample_words_many(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        return [self._sample(r) for r in requests]

    def _sample(self, request: SampleWordsRequest) -> SampleWordsResponse:
        words = self._words(request.context)
        if not words:
            return SampleWordsResponse(counts={}, n_requested=request.n, rejected={"empty": request.n})
        rng = np.random.default_rng(request.seed)
        draws = rng.integers(0, len(words), size=request.n)
        counts: dict[str, int] = {}
        for i in draws:
            counts[words[i]] = counts.get(words[i], 0) + 1
        return SampleWordsResponse(counts=counts, n_requested=request.n)

    def guess_word_many(self, requests: list[GuessWordRequest]) -> list[GuessWordResponse]:
        responses = []
        for request in requests:
            words = self._words(request.context)
            counts = Counter(words)
            best = max(reversed(words), key=lambda w: counts[w]) if words else ""
            responses.append(GuessWordResponse(best))
        return responses


# ------------------------------------------------------------------------------------------------ the scorers


class SupportCoverageScorer(ArgsScorer):
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
        # self.mean_metric applies this scorer's n_resamples and confidence (--task-args NAME.confidence=0.9)
        return {"support_coverage": self.mean_metric(values, True, rng)}


class GuessShareScorer(ArgsScorer):
    """Share of the people who guessed the model's word (higher is better): 1 if everyone agreed with it."""

    name = "guess_share"
    request_kinds = frozenset({"guess_word"})

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        if response is None or not isinstance(instance, ClozeInstance):
            return {}
        total = sum(instance.human_counts.values())
        return {"guess_share": instance.human_counts.get(response.word, 0) / total if total else 0.0}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        values = [v["guess_share"] for v in per_instance if "guess_share" in v]
        return {"guess_share": self.mean_metric(values, True, rng)} if values else {}


# --------------------------------------------------------------------------------------------------- the hooks


@hookimpl
def register_request_kinds(register: RegisterRequestKind) -> None:
    register(GuessWordKind)


@hookimpl
def register_models(register: RegisterModel) -> None:
    register("context-unigram", ContextUnigramAdapter)


@hookimpl
def register_scorers(register: RegisterScorer) -> None:
    register(SupportCoverageScorer)
    register(GuessShareScorer)


@hookimpl
def register_tasks(register: RegisterTask) -> None:
    register(resources.files(__name__) / "provo-openers.yaml")
    register(resources.files(__name__) / "provo-guess.yaml")
    # Reads the data this package ships (data/), with task: and package: paths: it needs no --data-dir.
    register(resources.files(__name__) / "example-cloze.yaml")

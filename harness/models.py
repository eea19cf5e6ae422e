"""The model adapter interface.

An adapter answers request kinds (``harness.requests``). It declares which kinds it answers up front, so a run that
needs a kind the adapter cannot answer fails before any work is done.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from harness.instances import Instance
from harness.options import Options
from harness.requests import (
    GenerateRequest,
    GenerateResponse,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
    SampleWordsRequest,
    SampleWordsResponse,
    SimilarityRequest,
    SimilarityResponse,
)


@dataclass(frozen=True)
class ModelSpec:
    """What the user asked for on the command line: ``--model KIND:NAME --model-args ...``."""

    #: The adapter's registered name, before the colon of ``--model`` (``hf``, ``openai``, ``replay``, ``mock``).
    kind: str
    #: Everything after the first colon (``smollm2-135m``, a path, an API's model name), for the adapter to
    #: interpret.
    name: str
    #: ``--model-args key=value,...`` (or a sweep plan's ``model_args``), values as strings, unchecked: the adapter
    #: parses them with its ``options`` (``self.options.parse(spec.args, ...)``).
    args: dict[str, str] = field(default_factory=dict)
    #: ``--device``: ``cpu``, ``cuda`` or ``auto`` (the adapter picks).
    device: str = "auto"
    #: ``--batch-size``: a positive integer as a string, or ``auto`` (the adapter picks); what a batch is, the adapter
    #: decides.
    batch_size: str = "auto"
    #: Where an adapter may keep what it must not lose between runs (the API adapter's responses); the runner sets
    #: it to a folder of the run's output directory.
    cache_dir: Path | None = None

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.name}"


class ModelAdapter:
    """Base class for model adapters registered through the ``register_models`` hook."""

    #: Request kinds this adapter answers (see ``harness.kinds``). Each kind is answered through one batched
    #: method named after it (``<kind>_many``), which gets a list of requests and returns one response each.
    supported_requests: ClassVar[frozenset[str]] = frozenset()
    #: The ``--model-args`` this adapter takes (``harness ls models --options`` prints them).
    options: ClassVar[Options] = Options()
    #: The extras of the harness this adapter needs (``harness.extras.EXTRAS``: ``hf``, ...), checked when the model
    #: kind is looked up, before any data or model loads; a missing one is a one-line error naming it.
    extras: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: ModelSpec) -> None:
        """Built once per run (once per worker) as ``AdapterClass(spec)``, with nothing but the ``ModelSpec``, after
        the tasks' request kinds were checked against ``supported_requests`` and :meth:`refusal`.

        A subclass calls ``super().__init__(spec)`` first (it sets ``self.spec`` and ``self.group_size = 1``), then
        parses its arguments (``self.options.parse(spec.args, f"--model-args for {spec.label}")``), may set
        ``self.group_size`` to a positive integer, and loads the model (a failure: ``ModelLoadError`` or
        ``HarnessError`` with one line). The runner reads ``group_size`` once the adapter is built.
        """
        self.spec = spec
        #: How many requests the runner hands over at once (``sample_words_many``). The runner forms these groups
        #: as fixed blocks of the instance list, so an adapter whose numerics depend on the group still gives
        #: identical results on every run and on resume.
        self.group_size = 1

    @classmethod
    def refusal(cls, spec: ModelSpec, kind: str) -> str | None:
        """Why this model, as configured by ``spec``, cannot answer request or query ``kind``; ``None`` if it can.

        Checked before the model is built, so that an adapter whose abilities depend on its arguments (an API's chat
        endpoint has no prompt log-probabilities) refuses a task before any work is done.
        """
        return None if kind in cls.supported_requests else "the adapter does not implement it"

    @classmethod
    def covered_instances(cls, spec: ModelSpec, instances: list[Instance]) -> Collection[str] | None:
        """The ids of the ``instances`` this model can answer, when it cannot answer any instance (outputs recorded
        elsewhere, ``replay``); None means every one. The runner scores the covered instances only and lists the
        others as missing. Asked before the model is built. Ids it returns that are not among ``instances`` are
        reported as outputs matching no instance."""
        return None

    @classmethod
    def identity(cls, spec: ModelSpec) -> dict[str, Any]:
        """What determines this model's answers beyond ``spec`` (the SHA-256 of a recorded outputs file), so a
        changed file gets a new response store instead of reusing answers stored from the old one."""
        return {}

    def run_stats(self) -> dict[str, Any] | None:
        """What answering cost this process (requests sent, retried, read from a store), for ``results.json``."""
        return None

    def info(self) -> dict[str, Any]:
        """Provenance written to ``results.json``: resolved path or revision, dtype, device."""
        return {"kind": self.spec.kind, "name": self.spec.name}

    def sample_words_many(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        """Next words for each request, in order (``sample_words``). The runner hands over a fixed block of
        ``group_size`` requests, so an adapter may share work between them."""
        raise NotImplementedError(f"model {self.spec.label} does not answer sample_words requests")

    def generate_many(self, requests: list[GenerateRequest]) -> list[GenerateResponse]:
        """``request.n`` samples for each request, in order (``generate``); adapters batch across prompts."""
        raise NotImplementedError(f"model {self.spec.label} does not answer generate requests")

    def loglikelihood_many(self, queries: list[LoglikelihoodRequest]) -> list[LoglikelihoodResponse]:
        """Token log-probabilities of each continuation after its context (``supported_requests``:
        ``loglikelihood``). Queries arrive grouped by item; adapters share work between equal contexts."""
        raise NotImplementedError(f"model {self.spec.label} does not answer loglikelihood queries")

    def next_token_many(self, queries: list[NextTokenRequest]) -> list[NextTokenResponse]:
        """Log-probability of each candidate's first token after the context (``next_token``)."""
        raise NotImplementedError(f"model {self.spec.label} does not answer next_token queries")

    def similarity_many(self, queries: list[SimilarityRequest]) -> list[SimilarityResponse]:
        """Cosine similarity of the model's representations of a prompt and of each option (``similarity``)."""
        raise NotImplementedError(f"model {self.spec.label} does not answer similarity queries")

    def close(self) -> None:  # noqa: B027 - optional: most adapters hold nothing that outlives them
        """Release what the model holds (GPU memory, a server connection) once the run has every answer. The runner
        calls it once per adapter, also after a failed run; the default does nothing."""


@runtime_checkable
class TokenLevelModel(Protocol):
    """An optional adapter capability: a text shown as the model's own tokens, and the model's next-token distribution.

    Why it exists: the next-token games of ``harness collect`` (Shlegeris et al. 2022, "Language models are better
    than humans at next-token prediction") show a person a text token by token, exactly as one model reads it, and
    sample the decoy token from that model's distribution with its probability recorded. No request kind carries a
    whole-vocabulary distribution, so this is a separate, optional interface rather than a ``<kind>_many`` method:
    an adapter that can (``hf``, ``mock``) implements these three methods and ``isinstance(adapter,
    TokenLevelModel)`` tells the caller so; API adapters, which see no vocabulary, do not.
    """

    def token_ids(self, text: str) -> list[int]:
        """``text``'s token ids as the model reads it in the middle of a text: no special tokens added (a BOS token,
        where the model uses one, is :meth:`next_token_logprobs`'s business), so that ``token_ids(text)[:i]`` is
        the context of token ``i``."""
        ...

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """Each token of ``ids`` as shown to a person, such that ``"".join(token_strings(token_ids(text))) == text``
        for ordinary text. A byte-level tokenizer may split one character over several tokens, where a token decoded
        alone reads as a replacement character; an adapter decodes the ids cumulatively and gives each token the
        text it adds, so the concatenation is exact (such a token then shows as the empty string, and the one
        completing the character shows all of it)."""
        ...

    def next_token_logprobs(self, contexts: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """For each context (token ids as :meth:`token_ids` gives them, possibly empty), the natural-log next-token
        distribution over the whole vocabulary at temperature 1: a float64 array whose ``logsumexp`` is 0, indexed by
        token id. The model's own conventions apply: a BOS token in front where its tokenizer puts one (an empty
        context reads the BOS token alone), and a context longer than the model's window is cut from the left."""
        ...

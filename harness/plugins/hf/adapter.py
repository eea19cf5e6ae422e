"""The ``hf`` model adapter: a transformers model answering ``sample_words`` with the trie sampler, ``generate``
with the batched generator (``harness.plugins.hf.generate.generator``) and the multiple-choice queries
(``loglikelihood``, ``next_token``, ``similarity``) with the query scorer (``harness.plugins.hf.queries.scoring``).
Sequence-to-sequence models answer everything but ``sample_words``. Causal models also implement
``harness.models.TokenLevelModel`` (a text as the model's tokens, next-token log-probabilities;
``harness.plugins.hf.queries.token_level``) for the next-token games of ``harness collect``.

``--model hf:NAME`` takes a packaged alias (``smollm2-135m``: SmolLM2-135M-Instruct, dequantised from a Q4_1 GGUF),
a local checkpoint directory or a hub id (see ``harness.plugins.hf.loading.source``). ``--model-args`` are declared in
:attr:`HFAdapter.options` (``harness ls models --options`` prints them): ``dtype``, ``revision``,
``trust_remote_code`` (default false: a checkpoint's own Python code is only run when the user says so),
``max_batch`` (cap on the rows of one forward pass, also under ``--batch-size auto``) and ``contexts_per_pass``.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from transformers.utils import logging as transformers_logging

from harness.api import (
    GenerateRequest,
    GenerateResponse,
    HarnessError,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    ModelAdapter,
    ModelLoadError,
    ModelSpec,
    NextTokenRequest,
    NextTokenResponse,
    Option,
    Options,
    SampleWordsRequest,
    SampleWordsResponse,
    SimilarityRequest,
    SimilarityResponse,
    WordDistributionRequest,
    WordDistributionResponse,
    boolean,
    one_of,
    optional,
    or_auto,
    positive_int,
    progress_enabled,
    text,
)
from harness.plugins.hf.generate.generator import BatchGenerator
from harness.plugins.hf.loading.model import LoadedModel, load_hf_model
from harness.plugins.hf.loading.options import (
    AUTO_CONTEXTS_PER_PASS,
    AUTO_STEP_ROWS,
    DTYPE_NAMES,
    resolve_batch_size,
    resolve_device,
)
from harness.plugins.hf.queries.scoring import QueryScorer
from harness.plugins.hf.queries.token_level import TokenLevel
from harness.plugins.hf.trie.static_pass import PASS_CAPTURES, capture_for
from harness.plugins.hf.trie.word_distribution import ExactWordSearch
from harness.plugins.hf.trie.word_sampler import TrieWordSampler

#: Contexts whose trie levels share forward passes (``--model-args contexts_per_pass=N``) when none is given, per
#: device type; see ``sample_many``. Requests of one block share passes, so wider blocks make fuller passes out of
#: the few rows each context's deep trie levels (or each prompt's last generation steps) hold
#: (:data:`harness.plugins.hf.loading.options.AUTO_CONTEXTS_PER_PASS` has the measurements).
DEFAULT_CONTEXTS_PER_PASS = AUTO_CONTEXTS_PER_PASS["cpu"]


def _dtype_name(value: Any) -> str:
    """A dtype name the loader accepts (``harness.plugins.hf.loading.options.DTYPE_NAMES``, any case), read as the
    loader reads it (the empty string is the default, float32)."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r} ({type(value).__name__})")
    name = (value or "float32").strip().lower()
    if name not in DTYPE_NAMES:
        raise ValueError(f"expected one of {', '.join(DTYPE_NAMES)}, got {value!r}")
    return name


def _capture(settings: dict[str, Any], device: torch.device) -> str:
    """The word sampler's pass capture in force on ``device``, or the model argument's error in one line."""
    try:
        return capture_for(settings["pass_capture"], device)
    except ValueError as exc:
        raise ModelLoadError(f"--model-args pass_capture: {exc}") from None


class HFAdapter(ModelAdapter):
    """A Hugging Face model loaded once; requests are answered in fixed groups that share forward passes."""

    supported_requests: ClassVar[frozenset[str]] = frozenset(
        {"sample_words", "word_distribution", "generate", "loglikelihood", "next_token", "similarity"}
    )
    extras: ClassVar[tuple[str, ...]] = ("hf",)
    options: ClassVar[Options] = Options(
        Option(
            "dtype",
            _dtype_name,
            "float32",
            "weights and activations; auto keeps the checkpoint's own (bfloat16 is about 3x faster on CPUs with "
            "AVX512-BF16 but changes the numbers)",
            type="float32|bfloat16|float16|auto",
        ),
        Option("revision", optional(text), None, "branch, tag or commit of a hub id (hub ids only)"),
        Option("trust_remote_code", boolean, False, "run the checkpoint's own Python code (only if you trust it)"),
        Option(
            "max_batch",
            optional(positive_int),
            None,
            "cap on the rows of one forward pass, also under --batch-size auto",
            type="int >= 1",
        ),
        Option(
            "contexts_per_pass",
            or_auto(positive_int),
            "auto",
            "requests answered together (sample_words contexts share trie passes, prompts share generation steps); "
            "auto: 64 on a CPU, 256 on a GPU",
        ),
        Option(
            "pass_capture",
            one_of("auto", *PASS_CAPTURES),
            "auto",
            "how the word sampler runs a trie level's pass: off (its own shapes), static (fixed shapes), graphs "
            "(fixed shapes replayed as CUDA graphs, GPU only); auto: off",
        ),
    )

    @classmethod
    def identity(cls, spec: ModelSpec) -> dict[str, Any]:
        """The block size and the rows per one-token pass in force, defaults included: both decide which rows share a
        forward pass, so they change the last bits of sampled answers, and a store written under another default
        must not be resumed as if it were the same."""
        settings = cls.options.parse(spec.args, f"--model-args for {spec.label}")
        device = resolve_device(spec.device)
        step_rows = resolve_batch_size(spec.batch_size, device, settings["max_batch"], AUTO_STEP_ROWS)
        identity = {"contexts_per_pass": cls.contexts_per_pass(settings, device), "step_rows": step_rows}
        capture = _capture(settings, device)
        # Fixed-shape passes change the last bits too; named only when on, so stores written before it resume.
        return identity if capture == "off" else {**identity, "pass_capture": capture}

    @staticmethod
    def contexts_per_pass(settings: dict[str, Any], device: torch.device) -> int:
        """The block size in force: the one given, or the device type's ``auto``."""
        return resolve_batch_size(settings["contexts_per_pass"], device, None, AUTO_CONTEXTS_PER_PASS)

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        # Checked before the (long) load: a typo is reported at once, by name, with the accepted list.
        self.settings = self.options.parse(spec.args, f"--model-args for {spec.label}")
        self.group_size: int = self.contexts_per_pass(self.settings, resolve_device(spec.device))
        pass_capture = _capture(self.settings, resolve_device(spec.device))
        if not progress_enabled():
            transformers_logging.disable_progress_bar()
        self._loaded: LoadedModel | None = load_hf_model(
            spec.name,
            device=spec.device,
            dtype=self.settings["dtype"],
            batch_size=spec.batch_size,
            max_batch=self.settings["max_batch"],
            revision=self.settings["revision"] or None,
            trust_remote_code=self.settings["trust_remote_code"],
        )
        self._sampler: TrieWordSampler | None = TrieWordSampler(
            self._loaded.model,
            self._loaded.tokenizer,
            batch_size=self._loaded.step_rows,
            device=self._loaded.device,
            pass_capture=pass_capture,
        )
        self._generator: BatchGenerator | None = BatchGenerator(
            self._loaded.model,
            self._loaded.tokenizer,
            device=self._loaded.device,
            batch_size=self._loaded.step_rows,
            name=spec.label,
        )
        self._search: ExactWordSearch | None = None
        self._scorer: QueryScorer | None = QueryScorer(
            self._loaded.model,
            self._loaded.tokenizer,
            device=self._loaded.device,
            batch_size=self._loaded.batch_size,
        )
        self._token_level: TokenLevel | None = None

    @property
    def loaded(self) -> LoadedModel:
        """The loaded model; an error after :meth:`close`, rather than a confusing ``None`` attribute failure."""
        if self._loaded is None:
            raise RuntimeError(f"model {self.spec.label} was closed")
        return self._loaded

    def _word_sampler(self) -> TrieWordSampler:
        if self._sampler is None or self._generator is None:
            raise RuntimeError(f"model {self.spec.label} was closed")
        if self._generator.seq2seq:
            raise HarnessError(
                f"model {self.spec.label} is a sequence-to-sequence model; sample_words needs a causal LM"
            )
        return self._sampler

    def sample_words_many(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        """``request.n`` next words after each request's context (see ``docs/word-sampling.md``); the requests are
        answered together (their trie levels share forward passes)."""
        return self._word_sampler().sample_many(requests)

    def word_distribution_many(self, requests: list[WordDistributionRequest]) -> list[WordDistributionResponse]:
        """The exact next-word distribution after each context up to ``epsilon``
        (``harness.plugins.hf.trie.word_distribution``), with the words of ``n_samples`` samples drawn by the ordinary
        sampler with the request's seed."""
        sampler = self._word_sampler()
        if self._search is None:
            self._search = ExactWordSearch(
                self.loaded.model,
                self.loaded.tokenizer,
                batch_size=self.loaded.batch_size,
                device=self.loaded.device,
            )
        responses = []
        for request in requests:
            sampled = SampleWordsResponse(counts={}, n_requested=0)
            if request.n_samples:
                sampled = sampler.sample(request.sample_request())
            response = self._search.distribution(request, sampled.counts)
            response.tokens_evaluated += sampled.tokens_evaluated
            responses.append(response)
        return responses

    def generate_many(self, requests: list[GenerateRequest]) -> list[GenerateResponse]:
        """``request.n`` samples for each input (see ``docs/generation.md``). The group is answered together: each
        prompt encoded once, the samples of all prompts decoded in the same forward passes (or one ``generate`` call
        per request for models without shared-prefix attention and for sequence-to-sequence models)."""
        if self._generator is None:
            raise RuntimeError(f"model {self.spec.label} was closed")
        return self._generator.generate_many(requests)

    def _query_scorer(self) -> QueryScorer:
        if self._scorer is None:
            raise RuntimeError(f"model {self.spec.label} was closed")
        return self._scorer

    def loglikelihood_many(self, queries: list[LoglikelihoodRequest]) -> list[LoglikelihoodResponse]:
        """Token log-probabilities of each continuation; queries with the same context share its forward pass."""
        return self._query_scorer().loglikelihood_many(queries)

    def next_token_many(self, queries: list[NextTokenRequest]) -> list[NextTokenResponse]:
        """Log-probability of each candidate's first token; one forward pass per distinct context."""
        return self._query_scorer().next_token_many(queries)

    def similarity_many(self, queries: list[SimilarityRequest]) -> list[SimilarityResponse]:
        """Cosines between the model's representations of each prompt and its options."""
        return self._query_scorer().similarity_many(queries)

    # ------------------------------------------------------------------ token level (harness.models.TokenLevelModel)
    def _tokens(self) -> TokenLevel:
        """The token-level view of the loaded model (``harness.plugins.hf.queries.token_level``), built on first use."""
        if self._token_level is None:
            loaded = self.loaded
            self._token_level = TokenLevel(
                loaded.model, loaded.tokenizer, device=loaded.device, batch_size=loaded.batch_size, name=self.spec.label
            )
        return self._token_level

    def token_ids(self, text: str) -> list[int]:
        """``text``'s token ids, no special tokens added (``TokenLevelModel``)."""
        return self._tokens().token_ids(text)

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """Each token as shown to a person; they join to the decoded text (``TokenLevelModel``)."""
        return self._tokens().token_strings(ids)

    def next_token_logprobs(self, contexts: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """The float64 next-token log-distribution after each context, BOS and window as the model reads them
        (``TokenLevelModel``)."""
        return self._tokens().next_token_logprobs(contexts)

    def info(self) -> dict[str, Any]:
        """Provenance for ``results.json``: what was resolved and how it runs (no timings: results stay stable)."""
        import transformers

        loaded = self.loaded
        return {
            "kind": self.spec.kind,
            "name": self.spec.name,
            "source": loaded.source.kind,
            "resolved": loaded.path,
            "revision": loaded.revision,
            "model_class": type(loaded.model).__name__,
            "dtype": str(loaded.dtype).removeprefix("torch."),
            "device": str(loaded.device),
            "batch_size": loaded.batch_size,
            "step_rows": loaded.step_rows,
            "contexts_per_pass": self.group_size,
            "shared_prefix_attention": bool(self._sampler is not None and self._sampler.shared_prefix),
            "prefix_layout": self._sampler.prefix_layout if self._sampler is not None else None,
            "pass_capture": self._sampler.pass_capture if self._sampler is not None else None,
            "generation": self._generator.mode if self._generator is not None else None,
            "parameters": sum(p.numel() for p in loaded.model.parameters()),
            "transformers_version": transformers.__version__,
            "torch_version": torch.__version__,
        }

    def close(self) -> None:
        """Drop the model and tokenizer and return cached GPU memory; safe to call twice."""
        device = self._loaded.device if self._loaded is not None else None
        self._sampler = None
        self._search = None
        self._generator = None
        self._scorer = None
        self._token_level = None
        self._loaded = None
        gc.collect()
        if device is not None and device.type == "cuda":
            torch.cuda.empty_cache()

"""The ``openai`` model adapter: ``--model openai:MODEL --model-args base_url=...,chat=true|false,...``.

It answers the harness's request kinds over any OpenAI-compatible HTTP API (OpenAI, vLLM, llama.cpp, TGI). This
class is a facade; each part has its own module:

- ``settings``: the ``--model-args`` (``OPTIONS``), checked before anything is sent;
- ``endpoint``: which server this is, and request bodies that neutralise its sampling defaults, with per-sample seeds;
- ``generation``: ``generate``, ``n`` samples per prompt, with the ``n`` parameter where the server honours it,
  otherwise one request per sample;
- ``cloze_sampling``: ``sample_words``, next words asked one per request (``cloze=independent``) or as one list of
  ``n`` words (``cloze=list``), with the prompts and parsing of ``cloze``;
- ``logprob_scoring``: ``loglikelihood`` from ``/completions`` with ``echo`` (``chat=false``), read with the alignment
  the server was measured to use (``echo``), and ``next_token`` label probabilities from the echoed prompt over all
  tokens of each label, or from ``top_logprobs`` on ``/chat/completions``, where a label must be one token;
- ``transport`` and ``retry``: sending, retrying, and storing every response as it arrives.

What an endpoint cannot answer is refused before the run starts (``refusal``).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from harness.api import (
    GenerateRequest,
    GenerateResponse,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    ModelAdapter,
    ModelLoadError,
    ModelSpec,
    NextTokenRequest,
    NextTokenResponse,
    Options,
    SampleWordsRequest,
    SampleWordsResponse,
)
from harness.plugins.openai_api.cloze_sampling import ClozeSampler
from harness.plugins.openai_api.endpoint import NEUTRAL_SAMPLING, REFUSALS, EndpointSetup
from harness.plugins.openai_api.generation import Generator
from harness.plugins.openai_api.logprob_scoring import LogprobScorer
from harness.plugins.openai_api.retry import RetryPolicy
from harness.plugins.openai_api.settings import OPTIONS, OpenAISettings, parse_settings
from harness.plugins.openai_api.transport import ApiTransport, Endpoint


class OpenAIAdapter(ModelAdapter):
    """A model behind an OpenAI-compatible HTTP API; nothing is loaded locally."""

    supported_requests: ClassVar[frozenset[str]] = frozenset(
        {"sample_words", "generate", "loglikelihood", "next_token"}
    )
    options: ClassVar[Options] = OPTIONS

    @classmethod
    def refusal(cls, spec: ModelSpec, kind: str) -> str | None:
        """Why this endpoint cannot answer ``kind`` (checked before the run, from the model arguments alone)."""
        chat = parse_settings(spec.name, spec.args).chat
        return REFUSALS.get((chat, kind)) or super().refusal(spec, kind)

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self.settings: OpenAISettings = parse_settings(spec.name, spec.args)
        s = self.settings
        self.group_size = s.instances_per_block
        cache_dir = s.cache_dir or spec.cache_dir
        if cache_dir is None:
            raise ModelLoadError("openai: no directory to store API responses in (--model-args cache_dir=PATH)")
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", s.model)
        self.transport = ApiTransport(
            base_url=s.base_url,
            api_key=s.api_key(),
            store_path=cache_dir / f"{slug}.jsonl",
            store_fingerprint=f"openai-api-responses-v1:{s.model}",
            concurrency=s.concurrency,
            timeout=s.timeout,
            policy=RetryPolicy(
                max_attempts=s.max_attempts, budget=s.retry_budget, base_delay=s.backoff, max_delay=s.backoff_max
            ),
        )
        #: The server family (asked from ``/models`` under ``server=auto``) and the bodies written for it.
        self.setup = EndpointSetup(s, self.transport, spec.label)
        self.generator = Generator(self.setup)
        self.cloze = ClozeSampler(self.setup)
        #: On ``/completions`` this measures the echo alignment with one probe request.
        self.scorer = LogprobScorer(self.setup)

    @property
    def server(self) -> str:
        return self.setup.server

    @property
    def endpoint(self) -> Endpoint:
        return self.setup.endpoint

    @property
    def use_n(self) -> bool:
        return self.setup.use_n

    @property
    def echo_shift(self) -> int | None:
        return self.scorer.echo_shift

    # -- the request kinds, one batched method each -----------------------------------------------------------------

    def generate_many(self, requests: list[GenerateRequest]) -> list[GenerateResponse]:
        return self.generator.generate_many(requests)

    def sample_words_many(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        return self.cloze.sample_words_many(requests)

    def loglikelihood_many(self, requests: list[LoglikelihoodRequest]) -> list[LoglikelihoodResponse]:
        return self.scorer.loglikelihood_many(requests)

    def next_token_many(self, requests: list[NextTokenRequest]) -> list[NextTokenResponse]:
        return self.scorer.next_token_many(requests)

    # -- provenance -----------------------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        s = self.settings
        info: dict[str, Any] = {
            "kind": self.spec.kind,
            "name": self.spec.name,
            "base_url": s.base_url,
            "endpoint": "/chat/completions" if s.chat else "/completions",
            "server": self.server,
            "sampling_overrides": NEUTRAL_SAMPLING[self.server],
            "n_parameter": self.use_n,
            "seeded": s.send_seed,
            "cloze": s.cloze,
            "concurrency": s.concurrency,
            "timeout_seconds": s.timeout,
            "retry": {"max_attempts": s.max_attempts, "budget": s.retry_budget, "backoff": s.backoff},
        }
        if self.server == "other":
            info["warning"] = "unknown server: its own sampling defaults apply (they may not be ancestral sampling)"
        if not s.chat:
            info["echo_alignment"] = self.scorer.alignment()
        if s.prices is not None:
            info["prices_usd_per_million_tokens"] = s.prices
        return info

    def run_stats(self) -> dict[str, Any]:
        return self.transport.stats.to_record()

    def close(self) -> None:
        """Nothing is held between batches: each batch opens and closes its own HTTP client."""

"""The ``openai`` model adapter: ``--model openai:MODEL --model-args base_url=...,chat=true|false,...``.

It answers the harness's request kinds over any OpenAI-compatible HTTP API (OpenAI, vLLM, llama.cpp, TGI):

- ``generate``: ``n`` samples per prompt, with the ``n`` parameter where the server honours it, otherwise one
  request per sample, each with its own seed;
- ``sample_words``: next words for the cloze task, asked one per request (``cloze=independent``) or as one list of
  ``n`` words (``cloze=list``), see ``plugins.openai_api.cloze``;
- ``loglikelihood`` from ``/completions`` with ``echo`` (``chat=false``), read with the alignment the server was
  measured to use (``plugins.openai_api.echo``);
- ``next_token`` label probabilities: from the echoed prompt log-probabilities on ``/completions``, over all tokens
  of each label, or from ``top_logprobs`` on ``/chat/completions``, where a label must be one token.

What an endpoint cannot answer is refused before the run starts (``refusal``). Sending, retrying and storing every
response as it arrives are ``plugins.openai_api.transport``'s job.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import openai

from harness.errors import HarnessError, ModelLoadError
from harness.models import ModelAdapter, ModelSpec
from harness.requests import (
    DecodingConfig,
    GenerateRequest,
    GenerateResponse,
    LoglikelihoodAnswer,
    LoglikelihoodQuery,
    NextTokenAnswer,
    NextTokenQuery,
    SampleWordsRequest,
    SampleWordsResponse,
    add_usage,
)
from harness.seeding import derive_seed
from harness.text import decide_word
from plugins.openai_api.cloze import ONE_WORD_PROMPT, WORD_LIST_PROMPT, first_word_of_reply, parse_word_list
from plugins.openai_api.echo import (
    PROBE_ALTERNATIVES,
    PROBE_TEXT,
    SAFE_ALTERNATIVES,
    EchoLogprobs,
    continuation_logprobs,
    detect_shift,
    fill_collided,
)
from plugins.openai_api.retry import RetryPolicy
from plugins.openai_api.settings import OpenAISettings, parse_settings
from plugins.openai_api.transport import ApiCall, ApiTransport, Endpoint

#: Seeds sent to servers stay below 2**31: llama.cpp takes an unsigned 32-bit seed, others a signed 64-bit one.
SEED_MODULUS = 2**31

#: Sampler settings that make each server draw from the model's distribution as ``DecodingConfig`` describes it.
#: llama.cpp defaults to top_k=40, min_p=0.05 and a repeat penalty of 1.1, which would quietly narrow every sample.
_NEUTRAL_SAMPLING: dict[str, dict[str, Any]] = {
    "llama-cpp": {"min_p": 0.0, "repeat_penalty": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0},
    "vllm": {"min_p": 0.0, "repetition_penalty": 1.0},
    "openai": {},
    "other": {},
}

_REFUSALS: dict[tuple[bool, str], str] = {
    (True, "loglikelihood"): (
        "a chat endpoint gives no log-probabilities of the prompt; use --model-args chat=false with a server whose "
        "/completions returns echo with logprobs (vLLM, llama.cpp)"
    ),
    (True, "similarity"): "an API gives no access to the model's hidden states",
    (False, "similarity"): "an API gives no access to the model's hidden states",
}


def _sample_seed(seed: int, index: int) -> int:
    return derive_seed(seed, "sample", index) % SEED_MODULUS


def _usage(responses: Sequence[dict[str, Any]]) -> dict[str, int]:
    total = {"requests": len(responses), "prompt_tokens": 0, "completion_tokens": 0}
    for response in responses:
        usage = response.get("usage") or {}
        total["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
        total["completion_tokens"] += int(usage.get("completion_tokens") or 0)
    return total


def _choice_text(choice: dict[str, Any], endpoint: Endpoint) -> str:
    if endpoint == "chat":
        return str((choice.get("message") or {}).get("content") or "")
    return str(choice.get("text") or "")


class OpenAIAdapter(ModelAdapter):
    """A model behind an OpenAI-compatible HTTP API; nothing is loaded locally."""

    supported_requests: ClassVar[frozenset[str]] = frozenset(
        {"sample_words", "generate", "loglikelihood", "next_token"}
    )

    @classmethod
    def refusal(cls, spec: ModelSpec, kind: str) -> str | None:
        """Why this endpoint cannot answer ``kind`` (checked before the run, from the model arguments alone)."""
        chat = parse_settings(spec.name, spec.args).chat
        return _REFUSALS.get((chat, kind)) or super().refusal(spec, kind)

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
        self.server = s.server if s.server != "auto" else self._detect_server()
        self.use_n = s.use_n if s.use_n is not None else self.server in ("openai", "vllm")
        self.endpoint: Endpoint = "chat" if s.chat else "completions"
        #: Alignment of echoed prompt log-probabilities (``plugins.openai_api.echo``), measured once on load.
        self.echo_shift: int | None = None
        self.echo_problem: str | None = None
        #: Share of the probe's positions each shift explains (``echo.detect_shift``), reported by ``info``.
        self.echo_shares: dict[int, float] = {}
        if not s.chat:
            self._probe_echo()

    # -- set-up ---------------------------------------------------------------------------------------------------

    def _detect_server(self) -> str:
        """Which server family this is, from ``/models`` (llama-cpp-python says ``owned_by: me``, llama.cpp's own
        server ``llamacpp``, vLLM ``vllm``); an unknown server keeps its own sampling defaults, which ``info`` says."""
        if self.settings.is_openai:
            return "openai"
        s = self.settings
        client = openai.OpenAI(base_url=s.base_url, api_key=s.api_key(), max_retries=2, timeout=s.timeout)
        try:
            owners = {str(getattr(m, "owned_by", "")) for m in client.models.list()}
        except openai.APIError as exc:
            raise ModelLoadError(
                f"{self.settings.base_url}/models: cannot reach the server ({type(exc).__name__}: "
                f"{self.transport.redact(str(exc))}); check base_url, or name the server with --model-args server=..."
            ) from None
        finally:
            client.close()
        if owners & {"me", "llamacpp"}:
            return "llama-cpp"
        if "vllm" in owners:
            return "vllm"
        if owners & {"openai", "system", "openai-internal"}:
            return "openai"
        return "other"

    def _probe_echo(self) -> None:
        body = {
            "model": self.settings.model,
            "prompt": PROBE_TEXT,
            "max_tokens": 1,
            "echo": True,
            "logprobs": PROBE_ALTERNATIVES,
            "temperature": 0.0,
        }
        try:
            (response,) = self.transport.run([ApiCall("completions", body)])
            echo = EchoLogprobs.from_response(response, PROBE_TEXT, "echo probe")
        except HarnessError as exc:
            self.echo_problem = f"the server's /completions does not return echoed prompt log-probabilities ({exc})"
            return
        shift, shares = detect_shift(echo)
        self.echo_shares = shares
        if shift is None:
            self.echo_problem = (
                "the server's echoed prompt log-probabilities fit no known alignment (share of probe tokens "
                f"explained by shift 0 / 1: {shares[0]:.2f} / {shares[1]:.2f}); refusing to report them"
            )
        self.echo_shift = shift

    def _require_echo(self, kind: str) -> int:
        if self.endpoint != "completions":
            raise HarnessError(f"model {self.spec.label}: {_REFUSALS[(True, 'loglikelihood')]}")
        if self.echo_shift is None:
            raise HarnessError(f"model {self.spec.label} cannot answer {kind} queries: {self.echo_problem}")
        return self.echo_shift

    # -- request bodies -------------------------------------------------------------------------------------------

    def _sampling(self, decoding: DecodingConfig) -> dict[str, Any]:
        body: dict[str, Any] = {"temperature": decoding.temperature, "top_p": decoding.top_p}
        body.update(_NEUTRAL_SAMPLING[self.server])
        if self.server == "llama-cpp":
            body["top_k"] = decoding.top_k
            body["typical_p"] = decoding.typical_p
        elif self.server == "vllm":
            body["top_k"] = decoding.top_k or -1
            if decoding.typical_p != 1.0:
                raise HarnessError(f"model {self.spec.label}: vLLM has no typical_p sampling ({decoding.label})")
        elif decoding.top_k or decoding.typical_p != 1.0:
            raise HarnessError(
                f"model {self.spec.label}: the {self.server} API takes no top_k or typical_p ({decoding.label}); "
                "name the server with --model-args server=vllm|llama-cpp if it does"
            )
        return body

    def _body(self, *, prompt: str = "", messages: Sequence[tuple[str, str]] = (), **fields: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.settings.model}
        if self.endpoint == "chat":
            turns = list(messages) or [("user", prompt)]
            body["messages"] = [{"role": role, "content": content} for role, content in turns]
        else:
            body["prompt"] = prompt
        body.update(fields)
        return body

    def _seeded(self, body: dict[str, Any], seed: int) -> dict[str, Any]:
        return {**body, "seed": seed} if self.settings.send_seed else dict(body)

    # -- generate -------------------------------------------------------------------------------------------------

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        return self.generate_many([request])[0]

    def generate_many(self, requests: list[GenerateRequest]) -> list[GenerateResponse]:
        """All samples of all requests go out together (bounded by ``concurrency``)."""
        bodies = [self._generate_body(r) for r in requests]
        if self.use_n:
            first = self.transport.run(
                [
                    ApiCall(self.endpoint, {**self._seeded(b, _sample_seed(r.seed, 0)), "n": r.n})
                    for r, b in zip(requests, bodies, strict=True)
                ]
            )
        else:
            first = [None] * len(requests)  # type: ignore[list-item]
        # Samples the n-request did not return (llama.cpp returns one choice whatever n is) are asked one by one.
        calls: list[list[ApiCall]] = []
        for request, body, response in zip(requests, bodies, first, strict=True):
            have = len(response["choices"]) if response is not None else 0
            calls.append(
                [
                    ApiCall(self.endpoint, self._seeded(body, _sample_seed(request.seed, i)), i)
                    for i in range(min(have, request.n), request.n)
                ]
            )
        flat = self.transport.run([c for group in calls for c in group])
        out: list[GenerateResponse] = []
        k = 0
        for request, response, group in zip(requests, first, calls, strict=True):
            singles = flat[k : k + len(group)]
            k += len(group)
            out.append(self._generate_response(request, response, singles))
        return out

    def _generate_body(self, request: GenerateRequest) -> dict[str, Any]:
        fields: dict[str, Any] = {"max_tokens": request.max_new_tokens, **self._sampling(request.decoding)}
        if request.stop:
            fields["stop"] = list(request.stop)
        if self.use_n:
            # Per-choice token counts are only in the log-probabilities when one response holds several samples.
            fields.update({"logprobs": True, "top_logprobs": 0} if self.endpoint == "chat" else {"logprobs": 0})
        return self._body(prompt=request.prompt, messages=request.messages, **fields)

    def _generate_response(
        self, request: GenerateRequest, batched: dict[str, Any] | None, singles: list[dict[str, Any]]
    ) -> GenerateResponse:
        choices: list[tuple[dict[str, Any], int | None]] = []
        if batched is not None:
            several = len(batched["choices"]) > 1
            for choice in batched["choices"][: request.n]:
                choices.append((choice, self._choice_tokens(choice) if several else _completion_tokens(batched)))
        for response in singles:
            choices.append((response["choices"][0], _completion_tokens(response)))
        texts, reasons, n_tokens = [], [], []
        for choice, count in choices:
            texts.append(_choice_text(choice, self.endpoint))
            reason = choice.get("finish_reason")
            reasons.append("length" if reason == "length" else ("stop" if request.stop else "eos"))
            n_tokens.append(count if count is not None else 0)
        responses = ([batched] if batched is not None else []) + singles
        usage = _usage(responses)
        return GenerateResponse(
            texts=texts,
            finish_reasons=reasons,
            n_tokens=n_tokens,
            tokens_evaluated=usage["prompt_tokens"] + usage["completion_tokens"],
            usage=usage,
        )

    def _choice_tokens(self, choice: dict[str, Any]) -> int | None:
        block = choice.get("logprobs") or {}
        items = block.get("content") if self.endpoint == "chat" else block.get("tokens")
        return len(items) if isinstance(items, list) else None

    # -- sample_words ---------------------------------------------------------------------------------------------

    def sample_words(self, request: SampleWordsRequest) -> SampleWordsResponse:
        return self.sample_words_many([request])[0]

    def sample_words_many(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        if self.settings.cloze == "list":
            return self._word_lists(requests)
        calls = []
        for request in requests:
            decoding = DecodingConfig(temperature=request.temperature)
            if self.endpoint == "chat":
                body = self._body(
                    prompt=ONE_WORD_PROMPT.format(context=request.context),
                    max_tokens=request.max_new_tokens,
                    **self._sampling(decoding),
                )
            else:
                limit = 5 if request.mode == "paper" else request.max_new_tokens
                body = self._body(prompt=request.context, max_tokens=limit, **self._sampling(decoding))
            calls.append(
                [ApiCall(self.endpoint, self._seeded(body, _sample_seed(request.seed, i)), i) for i in range(request.n)]
            )
        flat = self.transport.run([c for group in calls for c in group])
        answers: list[SampleWordsResponse] = []
        offset = 0
        for request, group in zip(requests, calls, strict=True):
            responses = flat[offset : offset + len(group)]
            offset += len(group)
            counts: dict[str, int] = {}
            rejected: dict[str, int] = {}
            for response in responses:
                choice = response["choices"][0]
                text = _choice_text(choice, self.endpoint)
                ended = choice.get("finish_reason") != "length"
                if self.endpoint == "chat":
                    word = first_word_of_reply(text)
                    outcome = ("word", word) if word else ("reject", "empty" if ended else "truncated")
                else:
                    depth = _completion_tokens(response) or 0
                    outcome = decide_word(
                        text, ended=ended, depth=depth, mode=request.mode, max_new_tokens=request.max_new_tokens
                    )
                    if outcome[0] == "open":  # the server stopped early for a reason of its own (a stop string)
                        outcome = ("reject", "truncated")
                bucket = counts if outcome[0] == "word" else rejected
                bucket[outcome[1]] = bucket.get(outcome[1], 0) + 1
            usage = _usage(responses)
            answers.append(
                SampleWordsResponse(
                    counts=counts,
                    n_requested=request.n,
                    rejected=rejected,
                    tokens_evaluated=usage["prompt_tokens"] + usage["completion_tokens"],
                    usage=usage,
                )
            )
        return answers

    def _word_lists(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        calls = []
        for request in requests:
            body = self._body(
                prompt=WORD_LIST_PROMPT.format(context=request.context, n=request.n),
                max_tokens=max(request.max_new_tokens, 8 * request.n + 32),
                **self._sampling(DecodingConfig(temperature=request.temperature)),
            )
            calls.append(ApiCall(self.endpoint, self._seeded(body, _sample_seed(request.seed, 0))))
        answers = []
        for request, response in zip(requests, self.transport.run(calls), strict=True):
            words = parse_word_list(_choice_text(response["choices"][0], self.endpoint))
            counts: dict[str, int] = {}
            for word in words[: request.n]:
                counts[word] = counts.get(word, 0) + 1
            missing = request.n - min(len(words), request.n)
            usage = _usage([response])
            answers.append(
                SampleWordsResponse(
                    counts=counts,
                    n_requested=request.n,
                    rejected={"missing": missing} if missing else {},
                    tokens_evaluated=usage["prompt_tokens"] + usage["completion_tokens"],
                    usage=usage,
                    listed=len(words),
                )
            )
        return answers

    # -- loglikelihood and next_token -----------------------------------------------------------------------------

    def _echo_calls(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[float], list[str], dict[str, int]]]:
        shift = self._require_echo("loglikelihood")
        # Shifted servers are read from the alternatives listed one position early: ask for enough of them.
        asked = 1 if shift == 0 else self.settings.echo_logprobs
        readings = self._echo_read(pairs, shift, asked)
        out = []
        retry = [k for k, (values, _, _) in enumerate(readings) if any(v is None for v in values)]
        second = dict(zip(retry, self._echo_read([pairs[k] for k in retry], shift, SAFE_ALTERNATIVES), strict=True))
        for k, (values, tokens, usage) in enumerate(readings):
            again: list[float | None] = list(values)
            if k in second:
                again, _, extra = second[k]
                add_usage(usage, extra)
            out.append((fill_collided(values, again, self._echo_where(pairs[k][1])), tokens, usage))
        return out

    def _echo_where(self, continuation: str) -> str:
        return f"model {self.spec.label}: loglikelihood of {continuation[:40]!r}"

    def _echo_read(
        self, pairs: Sequence[tuple[str, str]], shift: int, asked: int
    ) -> list[tuple[list[float | None], list[str], dict[str, int]]]:
        calls = []
        for context, continuation in pairs:
            body = self._body(prompt=context + continuation, max_tokens=1, echo=True, logprobs=asked, temperature=0.0)
            calls.append(ApiCall("completions", body))
        out = []
        for (context, continuation), response in zip(pairs, self.transport.run(calls), strict=True):
            where = self._echo_where(continuation)
            echo = EchoLogprobs.from_response(response, context + continuation, where)
            # lm-evaluation-harness's split: whitespace that ends the context belongs to the continuation.
            boundary = len(context.rstrip()) if context.strip() else len(context)
            values, tokens = continuation_logprobs(echo, boundary, shift, where, asked)
            out.append((values, tokens, _usage([response])))
        return out

    def loglikelihood_many(self, queries: list[LoglikelihoodQuery]) -> list[LoglikelihoodAnswer]:
        """One echoed request per query; the server (llama.cpp, vLLM) reuses the shared context's cache itself."""
        answers = []
        for logprobs, tokens, usage in self._echo_calls([(q.context, q.continuation) for q in queries]):
            answers.append(LoglikelihoodAnswer(logprobs, tokens, usage=usage))
        return answers

    def next_token_many(self, queries: list[NextTokenQuery]) -> list[NextTokenAnswer]:
        """Over every token of each label on ``/completions`` (echo), from ``top_logprobs`` on chat."""
        if self.endpoint == "completions":
            pairs = [(q.context, c) for q in queries for c in q.candidates]
            scored = self._echo_calls(pairs)
            answers, k = [], 0
            for q in queries:
                part = scored[k : k + len(q.candidates)]
                k += len(q.candidates)
                usage: dict[str, int] = {}
                for _, _, u in part:
                    add_usage(usage, u)
                answers.append(
                    NextTokenAnswer(
                        logprobs=[math.fsum(lp) for lp, _, _ in part],
                        tokens=[toks[0] for _, toks, _ in part],
                        n_tokens=[len(toks) for _, toks, _ in part],
                        usage=usage,
                    )
                )
            return answers
        return self._top_logprob_labels(queries)

    def _top_logprob_labels(self, queries: list[NextTokenQuery]) -> list[NextTokenAnswer]:
        """The first token of the reply, with its ``top_logprobs`` alternatives. A chat reply starts a new message,
        so labels are matched without leading whitespace, and variants of a label that differ only in surrounding
        whitespace (``"1"``, ``" 1"``) are summed. A label not among the alternatives has an unknown probability:
        the run stops and says so rather than guess."""
        n_top = self.settings.top_logprobs
        calls = [
            ApiCall(
                "chat",
                self._body(prompt=q.context, max_tokens=1, logprobs=True, top_logprobs=n_top, temperature=1.0),
            )
            for q in queries
        ]
        answers = []
        for query, response in zip(queries, self.transport.run(calls), strict=True):
            try:
                first = response["choices"][0]["logprobs"]["content"][0]
                listed = [(str(t["token"]), float(t["logprob"])) for t in first["top_logprobs"]]
            except (KeyError, IndexError, TypeError, ValueError):
                raise HarnessError(
                    f"model {self.spec.label}: the chat response has no top_logprobs; this server cannot score labels"
                ) from None
            logprobs = []
            for candidate in query.candidates:
                label = candidate.strip()
                matches = [lp for token, lp in listed if token.strip() == label]
                if not matches:
                    shown = ", ".join(repr(t) for t, _ in listed[:8])
                    raise HarnessError(
                        f"model {self.spec.label}: label {candidate!r} is not among the {len(listed)} first-token "
                        f"alternatives the server listed ({shown}, ...), so its probability is unknown; raise "
                        "--model-args top_logprobs=N where the server allows it, or use chat=false with an "
                        "echo-capable server"
                    )
                top = max(matches)
                logprobs.append(top + math.log(math.fsum(math.exp(lp - top) for lp in matches)))
            answers.append(
                NextTokenAnswer(
                    logprobs=logprobs,
                    tokens=[c.strip() for c in query.candidates],
                    n_tokens=[1] * len(query.candidates),
                    usage=_usage([response]),
                )
            )
        return answers

    # -- provenance -----------------------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        s = self.settings
        info: dict[str, Any] = {
            "kind": self.spec.kind,
            "name": self.spec.name,
            "base_url": s.base_url,
            "endpoint": "/chat/completions" if s.chat else "/completions",
            "server": self.server,
            "sampling_overrides": _NEUTRAL_SAMPLING[self.server],
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
            info["echo_alignment"] = (
                {"shift": self.echo_shift, "fit": self.echo_shares}
                if self.echo_shift is not None
                else {"unavailable": self.echo_problem}
            )
        if s.prices is not None:
            info["prices_usd_per_million_tokens"] = s.prices
        return info

    def run_stats(self) -> dict[str, Any]:
        return self.transport.stats.to_record()

    def close(self) -> None:
        """Nothing is held between batches: each batch opens and closes its own HTTP client."""


def _completion_tokens(response: dict[str, Any]) -> int | None:
    usage = response.get("usage") or {}
    value = usage.get("completion_tokens")
    return int(value) if value is not None else None

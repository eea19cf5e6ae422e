"""``generate`` over an OpenAI-compatible API: ``n`` samples per prompt.

Where the server honours it (``use_n``), a prompt's samples are asked in one request with ``n``; the samples that
request did not return (llama.cpp returns one choice whatever ``n`` is) are asked one by one, each with its own
seed. All samples of all requests of a batch go out together, bounded by ``concurrency``.
"""

from __future__ import annotations

from typing import Any

from harness.api import GenerateRequest, GenerateResponse
from harness.plugins.openai_api.endpoint import EndpointSetup, choice_text, completion_tokens, sample_seed, usage_of
from harness.plugins.openai_api.transport import ApiCall


class Generator:
    """Answers ``generate`` requests through ``setup``'s endpoint."""

    def __init__(self, setup: EndpointSetup) -> None:
        self.setup = setup

    def generate_many(self, requests: list[GenerateRequest]) -> list[GenerateResponse]:
        """All samples of all requests go out together (bounded by ``concurrency``)."""
        setup, transport = self.setup, self.setup.transport
        bodies = [self._body(r) for r in requests]
        first: list[dict[str, Any] | None]
        if setup.use_n:
            first = list(
                transport.run(
                    [
                        ApiCall(setup.endpoint, {**setup.seeded(b, sample_seed(r.seed, 0)), "n": r.n})
                        for r, b in zip(requests, bodies, strict=True)
                    ]
                )
            )
        else:
            first = [None] * len(requests)
        # Samples the n-request did not return (llama.cpp returns one choice whatever n is) are asked one by one.
        calls: list[list[ApiCall]] = []
        for request, body, batched in zip(requests, bodies, first, strict=True):
            have = len(batched["choices"]) if batched is not None else 0
            calls.append(
                [
                    ApiCall(setup.endpoint, setup.seeded(body, sample_seed(request.seed, i)), i)
                    for i in range(min(have, request.n), request.n)
                ]
            )
        flat = transport.run([c for group in calls for c in group])
        out: list[GenerateResponse] = []
        k = 0
        for request, batched, group in zip(requests, first, calls, strict=True):
            singles = flat[k : k + len(group)]
            k += len(group)
            out.append(self._response(request, batched, singles))
        return out

    def _body(self, request: GenerateRequest) -> dict[str, Any]:
        setup = self.setup
        fields: dict[str, Any] = {"max_tokens": request.max_new_tokens, **setup.sampling(request.decoding)}
        if request.stop:
            fields["stop"] = list(request.stop)
        if setup.use_n:
            # Per-choice token counts are only in the log-probabilities when one response holds several samples.
            fields.update({"logprobs": True, "top_logprobs": 0} if setup.endpoint == "chat" else {"logprobs": 0})
        return setup.body(prompt=request.prompt, messages=request.messages, **fields)

    def _response(
        self, request: GenerateRequest, batched: dict[str, Any] | None, singles: list[dict[str, Any]]
    ) -> GenerateResponse:
        """The samples of ``batched`` (the ``n`` request's JSON response, if one was sent), then of ``singles``."""
        choices: list[tuple[dict[str, Any], int | None]] = []
        if batched is not None:
            several = len(batched["choices"]) > 1
            for choice in batched["choices"][: request.n]:
                choices.append((choice, self._choice_tokens(choice) if several else completion_tokens(batched)))
        for single in singles:
            choices.append((single["choices"][0], completion_tokens(single)))
        texts, reasons, n_tokens = [], [], []
        for choice, count in choices:
            texts.append(choice_text(choice, self.setup.endpoint))
            reason = choice.get("finish_reason")
            reasons.append("length" if reason == "length" else ("stop" if request.stop else "eos"))
            n_tokens.append(count if count is not None else 0)
        usage = usage_of(([batched] if batched is not None else []) + singles)
        return GenerateResponse(
            texts=texts,
            finish_reasons=reasons,
            n_tokens=n_tokens,
            tokens_evaluated=usage["prompt_tokens"] + usage["completion_tokens"],
            usage=usage,
        )

    def _choice_tokens(self, choice: dict[str, Any]) -> int | None:
        block = choice.get("logprobs") or {}
        items = block.get("content") if self.setup.endpoint == "chat" else block.get("tokens")
        return len(items) if isinstance(items, list) else None

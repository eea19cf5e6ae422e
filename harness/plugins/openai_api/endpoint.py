"""Which server is behind ``base_url``, and how a request body is written for it.

Servers differ in their sampling defaults: llama.cpp samples with top_k=40, min_p=0.05 and a repeat penalty of 1.1
unless told otherwise, which would quietly narrow every sample. So the server is recognised once on load (``server=
auto`` asks ``/models``), and every body carries the settings that make that server draw from the model's
distribution as ``DecodingConfig`` describes it. Each sample gets its own seed, derived from the request's seed and
the sample index. The helpers at the end read the parts of a JSON response that every request kind needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import openai

from harness.api import DecodingConfig, HarnessError, ModelLoadError, derive_seed
from harness.plugins.openai_api.settings import OpenAISettings
from harness.plugins.openai_api.transport import ApiTransport, Endpoint

#: Seeds sent to servers stay below 2**31: llama.cpp takes an unsigned 32-bit seed, others a signed 64-bit one.
SEED_MODULUS = 2**31

#: Sampler settings that make each server draw from the model's distribution as ``DecodingConfig`` describes it.
#: llama.cpp defaults to top_k=40, min_p=0.05 and a repeat penalty of 1.1, which would quietly narrow every sample.
NEUTRAL_SAMPLING: dict[str, dict[str, Any]] = {
    "llama-cpp": {"min_p": 0.0, "repeat_penalty": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0},
    "vllm": {"min_p": 0.0, "repetition_penalty": 1.0},
    "openai": {},
    "other": {},
}

#: What an endpoint cannot answer, keyed by (chat endpoint?, request kind): refused before the run starts.
REFUSALS: dict[tuple[bool, str], str] = {
    (True, "loglikelihood"): (
        "a chat endpoint gives no log-probabilities of the prompt; use --model-args chat=false with a server whose "
        "/completions returns echo with logprobs (vLLM, llama.cpp)"
    ),
    (True, "similarity"): "an API gives no access to the model's hidden states",
    (False, "similarity"): "an API gives no access to the model's hidden states",
}


def detect_server(settings: OpenAISettings, redact: Callable[[str], str]) -> str:
    """Which server family this is, from ``/models`` (llama-cpp-python says ``owned_by: me``, llama.cpp's own
    server ``llamacpp``, vLLM ``vllm``); an unknown server keeps its own sampling defaults, which ``info`` says."""
    if settings.is_openai:
        return "openai"
    s = settings
    client = openai.OpenAI(base_url=s.base_url, api_key=s.api_key(), max_retries=2, timeout=s.timeout)
    try:
        owners = {str(getattr(m, "owned_by", "")) for m in client.models.list()}
    except openai.APIError as exc:
        raise ModelLoadError(
            f"{s.base_url}/models: cannot reach the server ({type(exc).__name__}: "
            f"{redact(str(exc))}); check base_url, or name the server with --model-args server=..."
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


class EndpointSetup:
    """The server family, the endpoint asked (``chat`` or ``completions``) and whether ``n`` is sent; writes the
    bodies of every request kind. ``label`` (``openai:MODEL``) starts every error message."""

    def __init__(self, settings: OpenAISettings, transport: ApiTransport, label: str) -> None:
        self.settings = settings
        self.transport = transport
        self.label = label
        self.server = settings.server if settings.server != "auto" else detect_server(settings, transport.redact)
        self.use_n = settings.use_n if settings.use_n is not None else self.server in ("openai", "vllm")
        self.endpoint: Endpoint = "chat" if settings.chat else "completions"

    def sampling(self, decoding: DecodingConfig) -> dict[str, Any]:
        """The sampler fields of a body: ``decoding`` as given, with this server's defaults neutralised."""
        body: dict[str, Any] = {"temperature": decoding.temperature, "top_p": decoding.top_p}
        body.update(NEUTRAL_SAMPLING[self.server])
        if self.server == "llama-cpp":
            body["top_k"] = decoding.top_k
            body["typical_p"] = decoding.typical_p
        elif self.server == "vllm":
            body["top_k"] = decoding.top_k or -1
            if decoding.typical_p != 1.0:
                raise HarnessError(f"model {self.label}: vLLM has no typical_p sampling ({decoding.label})")
        elif decoding.top_k or decoding.typical_p != 1.0:
            raise HarnessError(
                f"model {self.label}: the {self.server} API takes no top_k or typical_p ({decoding.label}); "
                "name the server with --model-args server=vllm|llama-cpp if it does"
            )
        return body

    def body(self, *, prompt: str = "", messages: Sequence[tuple[str, str]] = (), **fields: Any) -> dict[str, Any]:
        """A body for this endpoint: chat ``messages`` (or ``prompt`` as one user turn), or the plain ``prompt``."""
        body: dict[str, Any] = {"model": self.settings.model}
        if self.endpoint == "chat":
            turns = list(messages) or [("user", prompt)]
            body["messages"] = [{"role": role, "content": content} for role, content in turns]
        else:
            body["prompt"] = prompt
        body.update(fields)
        return body

    def seeded(self, body: dict[str, Any], seed: int) -> dict[str, Any]:
        """``body`` with ``seed``, unless seeds are not sent (``--model-args seed=false``)."""
        return {**body, "seed": seed} if self.settings.send_seed else dict(body)


def sample_seed(seed: int, index: int) -> int:
    """The seed sent for sample ``index`` of a request with seed ``seed``."""
    return derive_seed(seed, "sample", index) % SEED_MODULUS


def usage_of(responses: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Requests and tokens billed for ``responses`` (JSON responses of the server)."""
    total = {"requests": len(responses), "prompt_tokens": 0, "completion_tokens": 0}
    for response in responses:
        usage = response.get("usage") or {}
        total["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
        total["completion_tokens"] += int(usage.get("completion_tokens") or 0)
    return total


def choice_text(choice: dict[str, Any], endpoint: Endpoint) -> str:
    if endpoint == "chat":
        return str((choice.get("message") or {}).get("content") or "")
    return str(choice.get("text") or "")


def completion_tokens(response: dict[str, Any]) -> int | None:
    usage = response.get("usage") or {}
    value = usage.get("completion_tokens")
    return int(value) if value is not None else None

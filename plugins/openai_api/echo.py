"""Prompt log-probabilities from ``/completions`` with ``echo``: where they sit, and how to read them.

OpenAI's convention puts the log-probability of prompt token ``i`` given the tokens before it at index ``i`` of
``token_logprobs`` (index 0 is ``None``). Some servers differ: llama.cpp's Python server (llama-cpp-python 0.3,
abetlen/llama-cpp-python#1983) puts log P(t_{i+1} | t_<=i) at index ``i``, one position early. Reading such a
response the OpenAI way gives every token the probability of its successor: plausible-looking, silently wrong
numbers. So the adapter measures the alignment once, on a prompt whose tokens are easy to predict, and reads every
later response with it; a server that fits neither alignment is refused.

The probe: for each candidate shift ``s``, count the prompt tokens ``t_i`` that appear among the alternatives
listed at index ``i - s`` with the same log-probability as the one given for the token at that index. Only the
true alignment makes the listed alternatives agree with the token they are reported for, on most positions of a
counting sequence ("1, 2, 3, ..."), whose every next token is among the model's top few.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError

PROBE_TEXT = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20"
PROBE_ALTERNATIVES = 5
#: Share of the probe's positions the chosen alignment must explain, and most the other may.
ACCEPT_SHARE = 0.6
REJECT_SHARE = 0.3
SHIFTS: tuple[int, ...] = (0, 1)


@dataclass(frozen=True)
class EchoLogprobs:
    """The ``logprobs`` block of one echoed choice, cut to the prompt's tokens."""

    tokens: list[str]
    token_logprobs: list[float | None]
    top_logprobs: list[dict[str, float] | None]
    text_offset: list[int]

    @classmethod
    def from_response(cls, response: dict[str, Any], prompt: str, where: str) -> EchoLogprobs:
        try:
            choice = response["choices"][0]
            block = choice["logprobs"]
            tokens = [str(t) for t in block["tokens"]]
            token_logprobs = [None if x is None else float(x) for x in block["token_logprobs"]]
            top = block.get("top_logprobs") or [None] * len(tokens)
            offsets = [int(x) for x in block["text_offset"]]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise HarnessError(f"{where}: the server's echo response has no usable logprobs ({exc!r})") from None
        usage = response.get("usage") or {}
        n_prompt = usage.get("prompt_tokens")
        if not isinstance(n_prompt, int) or not 0 < n_prompt <= len(tokens):
            n_prompt = sum(1 for o in offsets if o < len(prompt))
        if not (len(token_logprobs) >= n_prompt and len(offsets) >= n_prompt):
            raise HarnessError(f"{where}: the server's echo response is shorter than the prompt")
        tops: list[dict[str, float] | None] = [
            {str(k): float(v) for k, v in t.items()} if isinstance(t, dict) else None for t in top
        ]
        return cls(tokens, token_logprobs, tops, offsets)


def detect_shift(echo: EchoLogprobs, n_prompt: int) -> tuple[int | None, dict[int, float]]:
    """The alignment that explains the probe (``None`` when none does) and each alignment's share of positions."""
    shares: dict[int, float] = {}
    positions = range(1, n_prompt)
    for s in SHIFTS:
        fits = 0
        for i in positions:
            j = i - s
            if not 0 <= j < len(echo.token_logprobs):
                continue
            listed, given = echo.top_logprobs[j], echo.token_logprobs[j]
            if listed is None or given is None:
                continue
            value = listed.get(echo.tokens[i])
            if value is not None and math.isclose(value, given, abs_tol=1e-3):
                fits += 1
        shares[s] = fits / max(1, len(positions))
    best = max(shares, key=lambda s: shares[s])
    others = [v for s, v in shares.items() if s != best]
    if shares[best] >= ACCEPT_SHARE and all(v <= REJECT_SHARE for v in others):
        return best, shares
    return None, shares


def continuation_logprobs(
    echo: EchoLogprobs, n_prompt: int, boundary: int, shift: int, where: str
) -> tuple[list[float], list[str]]:
    """Log-probabilities and token strings of the prompt tokens that end after character ``boundary``.

    A token that straddles the boundary (the server merged the end of the context with the start of the
    continuation) counts as part of the continuation: its probability is the only one the response has for the
    continuation's first characters.
    """
    first = next((i for i in range(n_prompt) if echo.text_offset[i] + len(echo.tokens[i]) > boundary), None)
    if first is None:
        raise HarnessError(f"{where}: the continuation has no tokens in the server's echo")
    if first == 0:
        raise HarnessError(f"{where}: the context is empty, so the first token has no log-probability")
    logprobs: list[float] = []
    for i in range(first, n_prompt):
        value = echo.token_logprobs[i - shift]
        if value is None:
            raise HarnessError(f"{where}: the server gave no log-probability for prompt token {i}")
        logprobs.append(value)
    return logprobs, echo.tokens[first:n_prompt]

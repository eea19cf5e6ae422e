"""Prompt log-probabilities from ``/completions`` with ``echo``: where they sit, and how to read them.

OpenAI's convention: index ``i`` of ``token_logprobs`` holds log P(t_i | t_<i), and ``top_logprobs[i]`` lists the
most probable alternatives at that position (index 0 is ``None``). llama-cpp-python's server (0.3.x,
abetlen/llama-cpp-python#1983) reads every position one row late: ``top_logprobs[i]`` is the distribution of the
NEXT position, P(. | t_<=i), and ``token_logprobs[i]`` is t_i's probability under that wrong distribution,
P(t_i | t_<=i), a number with no meaning (often -12 for a token the model was sure of). Read the OpenAI way, such a
response gives plausible-looking, silently wrong numbers.

So the adapter measures the alignment once, on a prompt whose tokens are easy to predict (a counting sequence),
before any real request. With shift ``s``, position ``i``'s distribution is the one listed at ``i - s``; only the
true shift puts most probe tokens at or near the top of their own position's distribution. Under shift 1 the right
value of t_i is read from the alternatives listed at ``i - 1``, which holds it whenever t_i is among the
``echo_logprobs`` most probable tokens there; a token outside them has no recoverable value and the request is refused
(``UnrecoverableToken``) rather than answered with the wrong row. A server that fits neither shift is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.api import HarnessError

PROBE_TEXT = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20"
PROBE_ALTERNATIVES = 5
#: How far below the most probable alternative a probe token may be and still count as expected there (nats).
NEAR_TOP = 3.0
#: Share of the probe's positions the chosen alignment must explain, and most the other may.
ACCEPT_SHARE = 0.6
REJECT_SHARE = 0.3
SHIFTS: tuple[int, ...] = (0, 1)
#: Alternatives asked for on the second reading of a position whose listing had a collision (see
#: ``continuation_logprobs``): the top few tokens of a position are distinct strings in practice.
SAFE_ALTERNATIVES = 8


@dataclass(frozen=True)
class EchoLogprobs:
    """The ``logprobs`` block of one echoed choice; its first ``n_prompt`` entries are the prompt's tokens."""

    tokens: list[str]
    token_logprobs: list[float | None]
    top_logprobs: list[dict[str, float] | None]
    text_offset: list[int]
    n_prompt: int

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
        return cls(tokens, token_logprobs, tops, offsets, n_prompt)


def detect_shift(echo: EchoLogprobs) -> tuple[int | None, dict[int, float]]:
    """The shift that explains the probe (``None`` when none does) and the share of positions each explains.

    A position counts for shift ``s`` when its token is listed at ``i - s`` within ``NEAR_TOP`` nats of the most
    probable alternative there: in a counting sequence nearly every token is the obvious next one.
    """
    shares: dict[int, float] = {}
    positions = range(1, echo.n_prompt)
    for s in SHIFTS:
        fits = 0
        for i in positions:
            j = i - s
            listed = echo.top_logprobs[j] if 0 <= j < len(echo.top_logprobs) else None
            if not listed:
                continue
            value = listed.get(echo.tokens[i])
            if value is not None and value >= max(listed.values()) - NEAR_TOP:
                fits += 1
        shares[s] = fits / max(1, len(positions))
    best = max(shares, key=lambda s: shares[s])
    others = [v for s, v in shares.items() if s != best]
    if shares[best] >= ACCEPT_SHARE and all(v <= REJECT_SHARE for v in others):
        return best, shares
    return None, shares


class UnrecoverableToken(HarnessError):
    """A shifted server listed too few alternatives to recover a token's log-probability."""


def continuation_logprobs(
    echo: EchoLogprobs, boundary: int, shift: int, where: str, asked: int = 0
) -> tuple[list[float | None], list[str]]:
    """Log-probabilities and token strings of the prompt tokens that end after character ``boundary``.

    A token that straddles the boundary (the server merged the end of the context with the start of the
    continuation) counts as part of the continuation: its probability is the only one the response has for the
    continuation's first characters.

    Under shift 1 a value is ``None`` when it cannot be trusted: the server keys alternatives by their decoded
    strings, and several tokens decode to the same string (``" "`` and a space followed by an incomplete UTF-8
    byte), so the less probable one overwrites the other. A row of fewer than the ``asked`` alternatives had such a
    collision; ask again with fewer alternatives (``SAFE_ALTERNATIVES``), where the most probable tokens are distinct.
    """
    n_prompt = echo.n_prompt
    first = next((i for i in range(n_prompt) if echo.text_offset[i] + len(echo.tokens[i]) > boundary), None)
    if first is None:
        raise HarnessError(f"{where}: the continuation has no tokens in the server's echo")
    if first == 0:
        raise HarnessError(f"{where}: the context is empty, so the first token has no log-probability")
    logprobs: list[float | None] = []
    for i in range(first, n_prompt):
        if shift == 0:
            value = echo.token_logprobs[i]
            if value is None:
                raise HarnessError(f"{where}: the server gave no log-probability for prompt token {i}")
            logprobs.append(value)
            continue
        listed = echo.top_logprobs[i - shift] or {}
        value = listed.get(echo.tokens[i])
        if value is None:
            raise UnrecoverableToken(
                f"{where}: token {echo.tokens[i]!r} is not among the {len(listed)} alternatives the server listed "
                "for its position, and the server's own value for it is read from the wrong position (see "
                "plugins/openai_api/echo.py); raise --model-args echo_logprobs=N"
            )
        logprobs.append(value if _collision_free(echo, i - shift, asked) else None)
    return logprobs, echo.tokens[first:n_prompt]


def _collision_free(echo: EchoLogprobs, row: int, asked: int) -> bool:
    """Whether row ``row`` lists ``asked`` distinct strings: the server adds the row's own token to its top
    ``asked``, so a full row has ``asked + 1`` keys, or ``asked`` when that token was among the top already."""
    listed = echo.top_logprobs[row] or {}
    own, own_value = echo.tokens[row], echo.token_logprobs[row]
    others = [v for k, v in listed.items() if k != own]
    own_in_top = own_value is not None and bool(others) and own in listed and own_value >= min(others)
    return len(listed) >= (asked if own_in_top else asked + 1)


def fill_collided(values: list[float | None], second: list[float | None], where: str) -> list[float]:
    """``values`` with each untrusted entry taken from a second reading with fewer alternatives."""
    out: list[float] = []
    for value, again in zip(values, second, strict=True):
        if value is None:
            value = again
        if value is None:
            raise UnrecoverableToken(
                f"{where}: several tokens the server lists for one position decode to the same text, so the "
                "log-probability of this token cannot be told apart"
            )
        out.append(value)
    return out

"""The model side of the next-token games (Shlegeris et al. 2022, "Language models are better than humans at next-token
prediction"): texts cut into one model's tokens, the positions a person guesses or judges, and the which-one game's
rounds, each pairing the true next token with a token sampled from a generator model, their probabilities recorded.

Why it lives apart from the server: a study's rounds are prepared once, before anyone takes part, from a model
(``--model hf:NAME``) that need not be loaded while the study is served; and every number a round carries
(``generator_prob``, ``generator_true_prob``) is the one ``harness human-perplexity`` reads (docs/human-perplexity.md).
The model is anything implementing :class:`harness.models.TokenLevelModel` (the ``hf`` and ``mock`` adapters).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import HarnessError
from harness.models import TokenLevelModel
from harness.registry.manager import get_registry
from harness.run.sweep import parse_model
from harness.seeding import derive_rng

#: Context tokens decoded in front of a sampled token, so that it reads as it would after the context (a
#: SentencePiece tokenizer drops a token's leading space when it is decoded alone).
SAMPLED_TOKEN_TAIL = 8


@dataclass(frozen=True)
class TokenisedText:
    """One study text as a model's tokens: ``"".join(tokens)`` is the text (for ordinary text; see
    ``TokenLevelModel.token_strings``), and ``tokens[i]`` is what ``token_ids[i]`` shows."""

    #: The text's id in the study (unique), the first part of every ``position_id`` in it.
    text_id: str
    #: Each token as shown to a person.
    tokens: tuple[str, ...]
    #: The model's token ids, read mid-text (no special tokens).
    token_ids: tuple[int, ...]


@dataclass(frozen=True)
class SampledRound:
    """One which-one round: a context, its true next token and one token drawn from the generator after it."""

    #: ``f"{text_id}-{index}"``: the rounds of one position share it (``harness human-perplexity`` groups by it).
    position_id: str
    #: The text the position is in.
    text_id: str
    #: The true token's index in the text's tokens (0-based).
    index: int
    #: The text before the true token, as shown: ``"".join(tokens[:index])``.
    context: str
    #: The token that really follows, as shown.
    true_token: str
    #: The token drawn from the generator, decoded as it reads after the context (the true token's own string when
    #: the draw is the true token).
    sampled_token: str
    #: The drawn token's id.
    sampled_token_id: int
    #: The true token's id.
    true_token_id: int
    #: The generator's probability of the drawn token after the context.
    generator_prob: float
    #: The generator's probability of the true token after the context (the same on every round of a position).
    generator_true_prob: float
    #: Which draw of the position this is (``0 .. samples_per_position - 1``).
    sample: int


def tokenise_texts(model: TokenLevelModel, texts: Sequence[tuple[str, str]]) -> list[TokenisedText]:
    """Each ``(text_id, text)`` as the model's tokens, in order. Text ids must be unique and non-empty, since
    positions are named after them."""
    seen: set[str] = set()
    out = []
    for text_id, text in texts:
        if not text_id:
            raise HarnessError("a study text has an empty id; every text needs a unique id")
        if text_id in seen:
            raise HarnessError(f"study text id '{text_id}' is used twice; text ids must be unique")
        seen.add(text_id)
        ids = [int(t) for t in model.token_ids(text)]
        out.append(TokenisedText(text_id, tuple(model.token_strings(ids)), tuple(ids)))
    return out


def choose_positions(
    texts: Sequence[TokenisedText], start: int, every: int, max_per_text: int | None
) -> list[tuple[str, int]]:
    """The ``(text_id, token index)`` pairs to guess or judge, text by text: indices ``start, start + every, ...``
    below the text's length, at most ``max_per_text`` of them per text (None: no limit).

    An index whose true token is empty or whitespace only (a line break, a byte-level token holding part of a
    character) is skipped: nobody can be asked to guess or judge it. A skipped index does not count towards
    ``max_per_text``, and the grid does not move (the next index tried is still the next multiple of ``every``).
    """
    if start < 0:
        raise HarnessError(f"positions: start must be at least 0, got {start}")
    if every < 1:
        raise HarnessError(f"positions: every must be at least 1, got {every}")
    if max_per_text is not None and max_per_text < 0:
        raise HarnessError(f"positions: max_per_text must be at least 0, got {max_per_text}")
    chosen: list[tuple[str, int]] = []
    for text in texts:
        taken = 0
        for index in range(start, len(text.tokens), every):
            if max_per_text is not None and taken >= max_per_text:
                break
            if not text.tokens[index].strip():
                continue
            chosen.append((text.text_id, index))
            taken += 1
    return chosen


def _resolve(texts: Sequence[TokenisedText], positions: Sequence[tuple[str, int]]) -> list[tuple[TokenisedText, int]]:
    """Each position with its text, checked: a known text id and an index inside the text."""
    by_id = {t.text_id: t for t in texts}
    resolved = []
    for text_id, index in positions:
        text = by_id.get(text_id)
        if text is None:
            raise HarnessError(f"position {text_id}-{index}: no study text has id '{text_id}'")
        if not 0 <= index < len(text.token_ids):
            raise HarnessError(
                f"position {text_id}-{index}: index out of range (the text has {len(text.token_ids)} tokens)"
            )
        resolved.append((text, index))
    return resolved


def _distributions(
    model: TokenLevelModel, resolved: Sequence[tuple[TokenisedText, int]], batch_size: int
) -> Iterable[tuple[TokenisedText, int, np.ndarray]]:
    """The generator's log-distribution after each position's context, asked ``batch_size`` contexts at a time."""
    if batch_size < 1:
        raise HarnessError(f"batch_size must be at least 1, got {batch_size}")
    for start in range(0, len(resolved), batch_size):
        group = resolved[start : start + batch_size]
        answers = model.next_token_logprobs([text.token_ids[:index] for text, index in group])
        if len(answers) != len(group):
            raise HarnessError(f"the model answered {len(answers)} distributions for {len(group)} contexts")
        for (text, index), logprobs in zip(group, answers, strict=True):
            yield text, index, np.asarray(logprobs, dtype=np.float64)


def sample_rounds(
    model: TokenLevelModel,
    texts: Sequence[TokenisedText],
    positions: Sequence[tuple[str, int]],
    samples_per_position: int,
    seed: int,
    batch_size: int = 8,
) -> list[SampledRound]:
    """``samples_per_position`` which-one rounds per position, in the order of ``positions``.

    Each position's tokens are drawn from the generator's distribution after the context ids (``token_ids[:index]``)
    with a generator seeded from ``(seed, position_id)`` alone (``harness.seeding.derive_rng``), so a position's
    draws do not depend on the other positions, their order or the batch size. ``generator_prob`` and
    ``generator_true_prob`` are ``exp`` of the drawn and of the true token's log-probability. A draw that is the true
    token itself is kept: the round then shows the same token twice and its calibrated answer is 50%, as the method
    requires (docs/human-perplexity.md). The sampled token is shown as its decoded string, as it reads after the
    last :data:`SAMPLED_TOKEN_TAIL` context tokens; it may be a special token (end of text) or, for a byte-level
    tokenizer, a part of a character (shown as U+FFFD).
    """
    if samples_per_position < 1:
        raise HarnessError(f"samples_per_position must be at least 1, got {samples_per_position}")
    rounds: list[SampledRound] = []
    for text, index, logprobs in _distributions(model, _resolve(texts, positions), batch_size):
        position_id = f"{text.text_id}-{index}"
        probs = np.exp(logprobs)
        rng = derive_rng("collect.sample_rounds", seed, position_id)
        drawn = rng.choice(len(probs), size=samples_per_position, p=probs / probs.sum())
        true_id = text.token_ids[index]
        tail = list(text.token_ids[max(0, index - SAMPLED_TOKEN_TAIL) : index])
        for sample, token in enumerate(int(t) for t in drawn):
            shown = text.tokens[index] if token == true_id else model.token_strings([*tail, token])[-1]
            rounds.append(
                SampledRound(
                    position_id=position_id,
                    text_id=text.text_id,
                    index=index,
                    context="".join(text.tokens[:index]),
                    true_token=text.tokens[index],
                    sampled_token=shown,
                    sampled_token_id=token,
                    true_token_id=true_id,
                    generator_prob=float(math.exp(logprobs[token])),
                    generator_true_prob=float(math.exp(logprobs[true_id])),
                    sample=sample,
                )
            )
    return rounds


def top1_tokens(
    model: TokenLevelModel,
    texts: Sequence[TokenisedText],
    positions: Sequence[tuple[str, int]],
    batch_size: int = 8,
) -> dict[str, tuple[str, float]]:
    """The model's most probable next token at each position (by ``position_id``): its string, as it reads after the
    context, and its probability, so an export can put a model's top-1 guess beside the people's on the same
    positions. Ties go to the lowest token id."""
    out: dict[str, tuple[str, float]] = {}
    for text, index, logprobs in _distributions(model, _resolve(texts, positions), batch_size):
        best = int(np.argmax(logprobs))
        tail = list(text.token_ids[max(0, index - SAMPLED_TOKEN_TAIL) : index])
        shown = text.tokens[index] if best == text.token_ids[index] else model.token_strings([*tail, best])[-1]
        out[f"{text.text_id}-{index}"] = (shown, float(math.exp(logprobs[best])))
    return out


def load_token_model(
    model: str,
    device: str = "auto",
    model_args: str | dict[str, Any] | None = None,
    batch_size: str = "auto",
) -> TokenLevelModel:
    """The adapter for a ``--model`` string (``hf:smollm2-135m``, ``mock:x``) built through the plugin registry, as
    ``harness run`` builds it; refused before anything loads when its adapter cannot act at the token level. The
    object returned is also a ``ModelAdapter``: call its ``close()`` to free the model's memory."""
    spec = parse_model(model, model_args, device, batch_size)
    adapter_cls = get_registry().model(spec.kind)
    if not issubclass(adapter_cls, TokenLevelModel):
        raise HarnessError(
            f"model {spec.label} cannot be used for the next-token games: its adapter ({adapter_cls.__name__}) does "
            "not show texts as tokens or give next-token log-probabilities (TokenLevelModel; hf and mock do)"
        )
    adapter = adapter_cls(spec)
    if not isinstance(adapter, TokenLevelModel):  # an adapter that drops the methods on its instance
        raise HarnessError(f"model {spec.label} cannot be used for the next-token games (no TokenLevelModel)")
    return adapter

"""When a generated sample stops and what text it yields: the rules both generation paths apply (the batched
shared-prefix loop and the plain ``model.generate`` fallback), so they stop and cut rows identically.

A row ends at the first of: end-of-sequence (its token counts but adds no text), a stop string anywhere in the
decoded text (the text is cut before the earliest occurrence), or ``max_new_tokens`` tokens. Texts are decoded by
:class:`harness.plugins.hf.shared.tokens.ContinuationDecoder` (the whole list at once, as it reads after the prompt).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from harness.api import GenerateRequest
from harness.plugins.hf.shared.tokens import ContinuationDecoder


def validate_request(request: GenerateRequest) -> None:
    """ValueError for requests no path can answer (checked before any forward pass, so a group fails as a whole)."""
    if request.n < 0:
        raise ValueError(f"n must be non-negative, got {request.n}")
    if request.max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {request.max_new_tokens}")
    if any(not s for s in request.stop):
        raise ValueError("stop strings must be non-empty (an empty one would stop every sample at once)")


def first_stop(text: str, stops: Sequence[str]) -> int | None:
    """Index in ``text`` of the earliest occurrence of any stop string, or None."""
    found = [i for i in (text.find(s) for s in stops) if i >= 0]
    return min(found) if found else None


def finish_row(
    tokens: Sequence[int], decoder: ContinuationDecoder, eos: frozenset[int], stops: Sequence[str], max_new_tokens: int
) -> tuple[str, str, int] | None:
    """``(text, finish_reason, n_tokens)`` if a row with these generated ``tokens`` has stopped, else None.

    Checked after every new token, so the first rule that fires is the row's end: end-of-sequence (its token counts
    but adds no text), then a stop string anywhere in the decoded text (the text is cut before the earliest
    occurrence; the tokens up to the one that completed it count), then the token cap.
    """
    if tokens and tokens[-1] in eos:
        return decoder(tokens[:-1]), "eos", len(tokens)
    text: str | None = None
    if stops:
        text = decoder(tokens)
        cut = first_stop(text, stops)
        if cut is not None:
            return text[:cut], "stop", len(tokens)
    if len(tokens) >= max_new_tokens:
        return (text if text is not None else decoder(tokens)), "length", len(tokens)
    return None


def scan_row(
    row: Sequence[int], decoder: ContinuationDecoder, eos: frozenset[int], stops: Sequence[str], max_new_tokens: int
) -> tuple[str, str, int]:
    """Where a ``generate`` row ended, by the rules of :func:`finish_row` (tokens after the end are ``generate``'s
    padding). Prefixes are decoded one by one only when the row's text holds a stop string."""
    end = next((k + 1 for k, t in enumerate(row) if t in eos), len(row))
    if stops and first_stop(decoder(row[:end]), stops) is not None:
        for k in range(1, end + 1):
            done = finish_row(row[:k], decoder, eos, stops, max_new_tokens)
            if done is not None:
                return done
    if end and row[end - 1] in eos:
        return decoder(row[: end - 1]), "eos", end
    return decoder(row[:end]), "length", end


class StopCriterion:
    """A ``generate`` stopping criterion: a row is done once its decoded continuation holds a stop string (the rule
    :func:`finish_row` applies), so ``generate`` stops rows where the shared-prefix path would."""

    def __init__(self, decoder: ContinuationDecoder, stops: Sequence[str], start: int, eos: frozenset[int]) -> None:
        self.decoder = decoder
        self.stops = tuple(stops)
        self.start = start
        self.eos = eos
        self.done: set[int] = set()

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        flags = []
        for r, row in enumerate(input_ids[:, self.start :].tolist()):
            if (
                r not in self.done
                and row
                and row[-1] not in self.eos
                and first_stop(self.decoder(row), self.stops) is not None
            ):
                self.done.add(r)
            flags.append(r in self.done)
        return torch.tensor(flags, dtype=torch.bool, device=input_ids.device)

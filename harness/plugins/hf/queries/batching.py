"""The forward-pass batching every scoring query shares: right-padded rows, passes of at most ``batch_size`` rows,
and one float32 gather of the log-probabilities a pass's rows predict.

Continuations, decoder targets and similarity texts are all batched this way, so the rules that keep batching from
changing a number (right padding that no real position sees, log-softmax in float32 whatever the model dtype) live
in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

#: Token ids as a tuple: hashable, so queries can be grouped and deduplicated by their encoded context.
Ids = tuple[int, ...]


@dataclass(frozen=True)
class ScoringModel:
    """The model with what every scoring pass needs to call it, read once instead of at every pass."""

    model: Any
    device: torch.device
    #: Rows of one forward pass at most.
    batch_size: int
    #: Filler for padded positions; right padding keeps it out of every real position, so any id works.
    pad_id: int
    #: The name under which ``forward`` takes a key/value cache (see :mod:`harness.plugins.hf.shared.model_calls`).
    cache_keyword: str
    #: Whether ``forward`` takes ``logits_to_keep``, so the vocabulary projection of positions nobody reads is skipped.
    keeps_logits: bool


def pad_right(rows: Sequence[Sequence[int]], length: int, value: int) -> tuple[list[list[int]], list[list[int]]]:
    """Right-pad ``rows`` to ``length``: ids and the matching attention mask. Right padding never changes a causal
    model's real positions (they cannot see what comes after them), so only the mask's length matters."""
    ids = [list(r) + [value] * (length - len(r)) for r in rows]
    mask = [[1] * len(r) + [0] * (length - len(r)) for r in rows]
    return ids, mask


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    """Consecutive slices of at most ``size`` items: the rows of one forward pass each."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def gather_logprobs(logits: torch.Tensor, rows: Sequence[tuple[int, int, Ids]]) -> list[list[float]]:
    """Float32 log-softmax at the positions that predict each row's targets, read off in one gather.

    ``rows[r] = (batch row, first position, targets)``: position ``first + j`` predicts ``targets[j]``. Only those
    positions are normalised, so padding costs no vocabulary-sized softmax.
    """
    batch_index: list[int] = []
    position_index: list[int] = []
    target_index: list[int] = []
    for row, first, targets in rows:
        batch_index.extend([row] * len(targets))
        position_index.extend(range(first, first + len(targets)))
        target_index.extend(targets)
    device = logits.device
    selected = logits[torch.tensor(batch_index, device=device), torch.tensor(position_index, device=device)]
    logprobs = torch.log_softmax(selected.float(), dim=-1)
    values = logprobs.gather(-1, torch.tensor(target_index, device=device)[:, None])[:, 0].tolist()
    out, start = [], 0
    for _, _, targets in rows:
        out.append([float(v) for v in values[start : start + len(targets)]])
        start += len(targets)
    return out

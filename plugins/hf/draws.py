"""Inverse-transform draws from next-token distributions, done on the model's device, many rows at a time.

Both the batched generator (one draw per row and step) and the trie word sampler (``count`` draws per trie node)
draw by inverse transform: a uniform ``u`` from the caller's own ``numpy`` random stream, times the row's total mass,
searched in the row's float64 cumulative sum. Two things keep this cheap:

* all rows of a forward pass are drawn together on the model's device, so on a GPU the probabilities never come
  back to the host (only the drawn token ids do);
* the cumulative sum is taken in two levels: per block of :data:`BLOCK` tokens, then inside only the blocks that a
  uniform falls into. A full float64 cumulative sum of every row wrote 8 bytes per vocabulary entry per trie node
  and was the largest cost after the matrix products; most nodes draw a few samples, which touch a few blocks.

The two-level sum adds the same float32 probabilities in float64 in another order than one running sum, so a
boundary between two tokens can move by a few float64 units in the last place (about 1e-16 of the row's mass): a
draw lands on another token only if its uniform falls within that distance of a boundary. The distribution drawn
from is the same float32 softmax.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

#: Tokens per block of the two-level cumulative sum: 256 gives 192 blocks for a 49,152-token vocabulary, so both
#: levels are short.
BLOCK = 256


def require_mass(totals: torch.Tensor) -> None:
    """FloatingPointError unless every row's total probability is finite and positive.

    -inf logits are a legitimate "never" (masked tokens); NaN, +inf or an all -inf row poison the softmax."""
    if not bool((torch.isfinite(totals) & (totals > 0)).all()):
        raise FloatingPointError("the model produced NaN or infinite logits (try dtype=float32)")


class _Blocked:
    """A batch of probability rows cut into blocks, with the float64 cumulative sum over whole blocks."""

    def __init__(self, probs: torch.Tensor):
        rows, vocab = probs.shape
        pad = (-vocab) % BLOCK
        if pad:
            probs = torch.nn.functional.pad(probs, (0, pad))
        self.blocks = probs.reshape(rows, -1, BLOCK)
        if probs.device.type == "cpu":
            # numpy's float64 reduction of float32 input is faster than torch's on a CPU (the same sums up to the
            # order of addition): 198.8 s against 218.4 s for the first 200 Provo contexts (docs/word-sampling.md).
            sums = torch.from_numpy(np.add.reduce(self.blocks.numpy(), axis=-1, dtype=np.float64))
        else:
            sums = self.blocks.sum(dim=-1, dtype=torch.float64)
        self.block_cdf = torch.cumsum(sums, dim=-1)
        self.total = self.block_cdf[:, -1:].contiguous()
        require_mass(self.total)

    def search(self, uniforms: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """Tokens for ``uniforms`` (rows x k, float64, one row per probability row); entries where ``valid`` is False
        are padding, left as -1. A token of probability 0 has an empty interval and is never drawn."""
        target = uniforms * self.total
        block = torch.searchsorted(self.block_cdf, target, right=True)
        # ``u * total`` can round up to ``total`` for ``u`` within 2**-53 of 1: keep it on the last block with mass.
        block = torch.minimum(block, torch.searchsorted(self.block_cdf, self.total, right=False))
        before = torch.where(block > 0, self.block_cdf.gather(1, (block - 1).clamp(min=0)), 0.0)
        rows = torch.arange(uniforms.shape[0], device=uniforms.device)[:, None].expand_as(block)
        keep = valid if valid is not None else torch.ones_like(block, dtype=torch.bool)
        row, blk, offset = rows[keep], block[keep], (target - before)[keep]
        inner = torch.cumsum(self.blocks[row, blk], dim=-1, dtype=torch.float64)
        index = torch.searchsorted(inner, offset[:, None], right=True)
        # The block's own running sum can end a unit below the block total used above: stay on its last token with
        # mass, never on a zero-probability token after it.
        index = torch.minimum(index, torch.searchsorted(inner, inner[:, -1:].contiguous(), right=False))[:, 0]
        tokens = torch.full_like(block, -1)
        tokens[keep] = blk * BLOCK + index
        return tokens


def draw_tokens(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """One token per row of ``probs`` (rows x vocabulary), with ``uniforms[r]`` for row ``r``."""
    blocked = _Blocked(probs)
    return blocked.search(uniforms.to(probs.device, torch.float64)[:, None])[:, 0]


def draw_counts(probs: torch.Tensor, uniforms: Sequence[np.ndarray]) -> list[list[tuple[int, int]]]:
    """For each row, the tokens drawn with that row's uniforms, as ``(token, count)`` pairs sorted by token id.

    ``uniforms[r]`` holds row ``r``'s ``count`` uniforms: the counts of ``count`` i.i.d. draws are exactly one
    ``Multinomial(count, p)`` draw, which a trie node needs. Rows are padded to the longest; padding is not searched.
    """
    if len(uniforms) != probs.shape[0]:
        raise ValueError(f"{len(uniforms)} rows of uniforms for {probs.shape[0]} rows of probabilities")
    blocked = _Blocked(probs)
    width = max((len(u) for u in uniforms), default=0)
    if width == 0:
        return [[] for _ in uniforms]
    padded = np.zeros((len(uniforms), width))
    valid = np.zeros((len(uniforms), width), dtype=bool)
    for row, values in enumerate(uniforms):
        padded[row, : len(values)] = values
        valid[row, : len(values)] = True
    device = probs.device
    tokens = blocked.search(torch.from_numpy(padded).to(device), torch.from_numpy(valid).to(device)).cpu().numpy()
    pairs = []
    for row, values in enumerate(uniforms):
        drawn, counts = np.unique(tokens[row, : len(values)], return_counts=True)
        pairs.append(list(zip(drawn.tolist(), counts.tolist(), strict=True)))
    return pairs

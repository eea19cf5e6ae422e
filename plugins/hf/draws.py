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
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

#: Tokens per block of the two-level cumulative sum: 256 gives 192 blocks for a 49,152-token vocabulary, so both
#: levels are short.
BLOCK = 256


#: Rows per thread below which the block sums run on the calling thread alone (a thread hand-off costs tens of us).
_MIN_ROWS_PER_THREAD = 16

_pool: ThreadPoolExecutor | None = None
_pool_workers = 0


def _block_sums(blocks: np.ndarray) -> np.ndarray:
    """Float64 sums of the last axis of float32 ``blocks`` (rows x blocks x tokens), split by rows over torch's
    threads.

    numpy's reduction runs on one core and releases the GIL, and the draws run between forward passes while the other
    cores idle: for 512 rows of a 49,152-token vocabulary the sum took 16.6 ms on one of 2 cores and 8.9 ms on both.
    Each row's sums are the same operations either way, so the values are identical."""
    global _pool, _pool_workers
    rows = blocks.shape[0]
    threads = min(torch.get_num_threads(), rows // _MIN_ROWS_PER_THREAD)
    if threads < 2:
        return np.add.reduce(blocks, axis=-1, dtype=np.float64)
    if _pool is None or _pool_workers < threads - 1:
        _pool = ThreadPoolExecutor(max_workers=threads - 1, thread_name_prefix="harness-draws")
        _pool_workers = threads - 1
    out = np.empty(blocks.shape[:-1], dtype=np.float64)
    bounds = np.linspace(0, rows, threads + 1).astype(int)

    def part(k: int) -> None:
        np.add.reduce(blocks[bounds[k] : bounds[k + 1]], axis=-1, dtype=np.float64, out=out[bounds[k] : bounds[k + 1]])

    futures = [_pool.submit(part, k) for k in range(1, threads)]
    part(0)
    for future in futures:
        future.result()
    return out


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
            sums = torch.from_numpy(_block_sums(self.blocks.numpy()))
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


def _search_padded(probs: torch.Tensor, uniforms: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """Every row's uniforms searched at once: tokens ``[rows, width]`` on the device, -1 where ``valid`` is False."""
    if len(uniforms) != probs.shape[0]:
        raise ValueError(f"{len(uniforms)} rows of uniforms for {probs.shape[0]} rows of probabilities")
    blocked = _Blocked(probs)
    lengths = np.fromiter((len(u) for u in uniforms), dtype=np.int64, count=len(uniforms))
    width = int(lengths.max(initial=0))
    padded = np.zeros((len(uniforms), width))
    valid = np.zeros((len(uniforms), width), dtype=bool)
    if width:  # every row's uniforms put in place at once (a loop over 8,192 rows cost milliseconds per pass)
        row = np.repeat(np.arange(len(uniforms)), lengths)
        col = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        padded[row, col] = np.concatenate(uniforms)
        valid[row, col] = True
    device = probs.device
    on_device = torch.from_numpy(valid).to(device)
    if width == 0:
        return torch.full(valid.shape, -1, dtype=torch.long, device=device), on_device
    return blocked.search(torch.from_numpy(padded).to(device), on_device), on_device


def draw_counts(probs: torch.Tensor, uniforms: Sequence[np.ndarray]) -> list[list[tuple[int, int]]]:
    """For each row, the tokens drawn with that row's uniforms, as ``(token, count)`` pairs sorted by token id.

    ``uniforms[r]`` holds row ``r``'s ``count`` uniforms: the counts of ``count`` i.i.d. draws are exactly one
    ``Multinomial(count, p)`` draw, which a trie node needs. Rows are padded to the longest; padding is not searched.
    """
    tokens, _ = _search_padded(probs, uniforms)
    return _counts_to_host(tokens, None)[0]


def draw_counts_folded(
    probs: torch.Tensor, uniforms: Sequence[np.ndarray], rows: torch.Tensor, tokens_mask: torch.Tensor
) -> tuple[list[list[tuple[int, int]]], list[int]]:
    """:func:`draw_counts`, except that draws of a token in ``tokens_mask`` (``[vocab]`` booleans) on a row where
    ``rows`` (``[rows]`` booleans) is True are only counted, per row, on the device: the second list. The trie
    sampler folds the children whose word is already decided this way (:mod:`plugins.hf.word_boundaries`); the same
    uniforms draw the same tokens, so the folded counts plus the listed ones are exactly :func:`draw_counts`'s."""
    tokens, valid = _search_padded(probs, uniforms)
    folded = valid & rows[:, None] & tokens_mask[tokens.clamp(min=0)]
    return _counts_to_host(torch.where(folded, -1, tokens), folded.sum(dim=1))


def _counts_to_host(
    tokens: torch.Tensor, per_row: torch.Tensor | None, on_device: bool | None = None
) -> tuple[list[list[tuple[int, int]]], list[int]]:
    """Each row's ``(token, count)`` pairs of ``tokens`` (``[rows, width]``, -1 not drawn) and ``per_row`` (or
    zeros), with one transfer to the host, which is the pass's one synchronisation.

    On a CPU the padded token matrix is counted by numpy (:func:`_count_rows`). On a GPU it is counted where it is
    (:func:`runs_on_device`) and only the runs come back: a wide trie level's padded matrix (8,192 rows by the
    largest count of any row, up to 1,000) was tens of MB to copy and sort on the host per pass. Both give the same
    integers (``on_device`` forces either way; by default, the device's way off a CPU)."""
    rows = tokens.shape[0]
    if not (on_device if on_device is not None else tokens.device.type != "cpu"):
        host = tokens.numpy()
        return _count_rows(host, host >= 0), per_row.tolist() if per_row is not None else [0] * rows
    if per_row is None:
        per_row = tokens.new_zeros(rows)
    row, token, count = runs_on_device(tokens)
    flat = torch.cat([per_row.to(torch.long), row, token, count]).cpu().numpy()
    runs = (flat.size - rows) // 3
    row_of, token_of, count_of = flat[rows:].reshape(3, runs)
    first_of_row = np.searchsorted(row_of, np.arange(rows + 1))
    pairs = list(zip(token_of.tolist(), count_of.tolist(), strict=True))
    return [pairs[first_of_row[r] : first_of_row[r + 1]] for r in range(rows)], flat[:rows].tolist()


def runs_on_device(tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The distinct valid tokens of every row of ``tokens`` (-1 invalid, anywhere) with their counts, computed where
    the tensor is: ``(row, token, count)``, ordered by row, then token."""
    big = torch.iinfo(torch.long).max
    ordered = torch.sort(torch.where(tokens >= 0, tokens, big), dim=1).values
    valid = ordered != big
    starts = valid.clone()
    starts[:, 1:] &= ordered[:, 1:] != ordered[:, :-1]
    row, col = starts.nonzero(as_tuple=True)
    ends = valid.sum(dim=1)[row]
    if row.numel() > 1:
        ends[:-1] = torch.where(row[1:] == row[:-1], col[1:], ends[:-1])
    return row, ordered[row, col], ends - col


def _count_rows(tokens: np.ndarray, valid: np.ndarray) -> list[list[tuple[int, int]]]:
    """Each row's distinct valid tokens with their counts, sorted by token, for all rows at once: one row-wise sort
    and one pass over the flattened runs (a ``np.unique`` per row cost 4.6 ms of Python calls per pass of 512 rows)."""
    rows, width = tokens.shape
    # Invalid entries (padding, folded draws) sort last in their row, past every token id, so after the sort each
    # row's valid tokens are its first ones.
    ordered = np.sort(np.where(valid, tokens, np.iinfo(tokens.dtype).max), axis=1)
    first = np.arange(width)[None, :] < valid.sum(axis=1)[:, None]
    flat, row_of = ordered[first], np.nonzero(first)[0]
    if flat.size == 0:
        return [[] for _ in range(rows)]
    starts = np.flatnonzero(np.r_[True, (flat[1:] != flat[:-1]) | (row_of[1:] != row_of[:-1])])
    counts = np.diff(np.r_[starts, flat.size])
    first_of_row = np.searchsorted(row_of[starts], np.arange(rows + 1))
    pairs = list(zip(flat[starts].tolist(), counts.tolist(), strict=True))
    return [pairs[first_of_row[r] : first_of_row[r + 1]] for r in range(rows)]

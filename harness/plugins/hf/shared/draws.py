"""Inverse-transform draws from next-token distributions, done on the model's device, many rows at a time.

Both the batched generator (one draw per row and step) and the trie word sampler (``count`` draws per trie node)
draw by inverse transform: a uniform ``u`` from the caller's own ``numpy`` random stream, times the row's total mass,
searched in the row's float64 cumulative sum. Two things keep this cheap:

* all rows of a forward pass are drawn together on the model's device, so on a GPU the probabilities never come
  back to the host (only the drawn token ids do). The uniforms travel as one flat array and the drawn tokens come
  back as one sorted array, with no value read on the way that would make the host wait for the device
  (:func:`launch_counts`): the trie sampler queues its next forward pass before it reads a pass's draws;
* the cumulative sum is taken in two levels: per block of :data:`BLOCK` tokens, then inside only the blocks that a
  uniform falls into. A full float64 cumulative sum of every row wrote 8 bytes per vocabulary entry per trie node
  and was the largest cost after the matrix products; most nodes draw a few samples, which touch a few blocks.

The two-level sum adds the same float32 probabilities in float64 in another order than one running sum, so a
boundary between two tokens can move by a few float64 units in the last place (about 1e-16 of the row's mass): a
draw lands on another token only if its uniform falls within that distance of a boundary. The distribution drawn
from is the same float32 softmax.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from harness.plugins.hf.shared.device_copy import to_device

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
    if not bool(_has_mass(totals)):
        raise FloatingPointError(_NO_MASS)


_NO_MASS = "the model produced NaN or infinite logits (try dtype=float32)"


def _has_mass(totals: torch.Tensor) -> torch.Tensor:
    """:func:`require_mass`'s test, left on the device (a zero-dimensional boolean) until the caller reads it."""
    return (torch.isfinite(totals) & (totals > 0)).all()


def _search_rows(cdf: torch.Tensor, row: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``torch.searchsorted(cdf[row[i]], target[i], right=True)`` for every ``i`` at once: how many entries of its
    (non-decreasing) row are at most the target.

    A branchless binary search of fixed length over flat arrays: ``torch.searchsorted`` wants every row's values
    padded to the longest row's count (up to 1,000 in a trie level, where most rows draw a few samples), which was 54
    times as many entries as draws on the first 64 Provo contexts. Each row is padded with +inf to a power of two
    longer than it, and each step asks whether the entry ``step`` further is still at most the target: the same
    comparisons of the same numbers as any binary search, so exactly searchsorted's result, in five small operations
    per step (eight steps for 192 blocks). A NaN target compares false and gives 0."""
    n = cdf.shape[1]
    width = 1 << n.bit_length()  # a power of two above n: at least one +inf entry ends every row
    padded = torch.nn.functional.pad(cdf, (0, width - n), value=math.inf).view(-1)
    start = row * width
    at = start
    step = width >> 1
    while step:
        at = at + (padded[at + (step - 1)] <= target) * step
        step >>= 1
    return at - start


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
        #: Whether every row has mass (:func:`require_mass`), on the device: read with the draws, not before them.
        self.has_mass = _has_mass(self.total)
        # ``u * total`` can round up to ``total`` for ``u`` within 2**-53 of 1: such a draw stays on the last block
        # with mass.
        self.last_block = torch.searchsorted(self.block_cdf, self.total, right=False)[:, 0]

    def search(self, row: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
        """The token of each uniform (float64) in the row ``row`` names. A token of probability 0 has an empty
        interval and is never drawn. Nothing here waits for the device: no value decides a shape."""
        target = uniforms * self.total[row, 0]
        block = torch.minimum(_search_rows(self.block_cdf, row, target), self.last_block[row])
        block = block.clamp(max=self.blocks.shape[1] - 1)  # only rows without mass reach past it (refused later)
        before = torch.where(block > 0, self.block_cdf[row, (block - 1).clamp(min=0)], 0.0)
        inner = torch.cumsum(self.blocks[row, block], dim=-1, dtype=torch.float64)
        index = torch.searchsorted(inner, (target - before)[:, None], right=True)
        # The block's own running sum can end a unit below the block total used above: stay on its last token with
        # mass, never on a zero-probability token after it.
        index = torch.minimum(index, torch.searchsorted(inner, inner[:, -1:].contiguous(), right=False))[:, 0]
        return block * BLOCK + index.clamp(max=BLOCK - 1)


def draw_tokens(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """One token per row of ``probs`` (rows x vocabulary), with ``uniforms[r]`` for row ``r``."""
    blocked = _Blocked(probs)
    require_mass(blocked.total)
    rows = torch.arange(probs.shape[0], device=probs.device)
    return blocked.search(rows, uniforms.to(probs.device, torch.float64))


#: The sort key of a folded draw: after every ``row * vocabulary + token``, so a pass's listed draws come first.
_FOLDED = torch.iinfo(torch.long).max


@dataclass
class PendingCounts:
    """One pass's draws, computed (or being computed) where its probabilities are, and on their way to the host.

    :meth:`collect` waits for them. The trie sampler launches the next forward pass before it does, so on a GPU that
    pass runs while the host waits for these draws and then decides their children; the draws' kernels were
    queued first, so the next pass cannot overwrite the probabilities they read."""

    #: ``[has mass, folded count of each row, sorted keys]``, on the host once ``ready`` has happened.
    packed: torch.Tensor
    ready: Any
    rows: int
    vocab: int

    def collect(self) -> tuple[list[list[tuple[int, int]]], list[int]]:
        """Each row's listed ``(token, count)`` pairs, sorted by token, and its folded count."""
        if self.ready is not None:
            self.ready.synchronize()
        flat = self.packed.numpy()
        if not flat[0]:
            raise FloatingPointError(_NO_MASS)
        folded = flat[1 : 1 + self.rows].tolist()
        return _pairs_by_row(flat[1 + self.rows :], self.rows, self.vocab), folded


def launch_counts(
    probs: torch.Tensor,
    uniforms: Sequence[np.ndarray],
    rows_mask: torch.Tensor | None = None,
    tokens_mask: torch.Tensor | None = None,
) -> PendingCounts:
    """Draw ``uniforms[r]`` (row ``r``'s ``count`` uniforms) from each row of ``probs`` without waiting for them.

    The counts of ``count`` i.i.d. draws are exactly one ``Multinomial(count, p)`` draw, which a trie node needs.
    With masks, the draws of a token in ``tokens_mask`` (``[vocab]`` booleans) on a row where ``rows_mask``
    (``[rows]`` booleans) is True are only counted per row (the trie sampler folds the children whose word is
    already decided this way: :mod:`harness.plugins.hf.shared.word_boundaries`); the same uniforms draw the same tokens,
    so the folded counts plus the listed ones are exactly the unfolded draws.

    All rows' uniforms go to the device as one flat array (no padding) and come back as one sorted array of
    ``row * vocabulary + token`` keys with the per-row folded counts: one copy each way, and no value read on the
    way that would make the host wait (the check that the rows have mass travels with the result)."""
    lengths = np.fromiter((len(u) for u in uniforms), dtype=np.int64, count=len(uniforms))
    flat = np.concatenate(uniforms) if len(uniforms) else np.zeros(0)
    return launch_flat(probs, flat, lengths, rows_mask, tokens_mask)


def launch_flat(
    probs: torch.Tensor,
    flat: np.ndarray,
    lengths: np.ndarray,
    rows_mask: torch.Tensor | None = None,
    tokens_mask: torch.Tensor | None = None,
) -> PendingCounts:
    """:func:`launch_counts` with the rows' uniforms one after another in ``flat``, ``lengths[r]`` of them for row
    ``r``: how the trie sampler draws them from its random streams (cutting them per row cost a view per row)."""
    rows, vocab = probs.shape
    if len(lengths) != rows:
        raise ValueError(f"{len(lengths)} rows of uniforms for {rows} rows of probabilities")
    device = probs.device
    total = int(lengths.sum())
    if len(flat) != total:
        raise ValueError(f"{len(flat)} uniforms for rows that draw {total}")
    per_row_lengths = to_device(lengths, device, torch.long)
    row = torch.repeat_interleave(torch.arange(rows, device=device), per_row_lengths, output_size=total)
    blocked = _Blocked(probs)
    tokens = blocked.search(row, to_device(flat, device, torch.float64))
    keys = row * vocab + tokens
    per_row = torch.zeros(rows, dtype=torch.long, device=device)
    if rows_mask is not None and tokens_mask is not None:
        folded = rows_mask[row] & tokens_mask[tokens.clamp(max=tokens_mask.shape[0] - 1)]
        per_row.index_add_(0, row, folded.long())
        keys = torch.where(folded, _FOLDED, keys)
    packed = torch.cat([blocked.has_mass.long().view(1), per_row, torch.sort(keys).values])
    if device.type != "cuda":
        return PendingCounts(packed, None, rows, vocab)
    host = torch.empty(packed.shape, dtype=packed.dtype, pin_memory=True)
    host.copy_(packed, non_blocking=True)
    ready = torch.cuda.Event()
    ready.record()
    return PendingCounts(host, ready, rows, vocab)


def draw_counts(probs: torch.Tensor, uniforms: Sequence[np.ndarray]) -> list[list[tuple[int, int]]]:
    """For each row, the tokens drawn with that row's uniforms, as ``(token, count)`` pairs sorted by token id
    (:func:`launch_counts`, waited for)."""
    return launch_counts(probs, uniforms).collect()[0]


def _pairs_by_row(keys: np.ndarray, rows: int, vocab: int) -> list[list[tuple[int, int]]]:
    """Each row's distinct tokens with their counts, from sorted ``row * vocab + token`` keys (folded ones, last,
    left out): one pass over the runs of equal keys for all rows at once."""
    keys = keys[: np.searchsorted(keys, _FOLDED)]
    if keys.size == 0:
        return [[] for _ in range(rows)]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    counts = np.diff(np.r_[starts, keys.size])
    row_of, token_of = np.divmod(keys[starts], vocab)
    first_of_row = np.searchsorted(row_of, np.arange(rows + 1))
    pairs = list(zip(token_of.tolist(), counts.tolist(), strict=True))
    return [pairs[first_of_row[r] : first_of_row[r + 1]] for r in range(rows)]

"""The trie samplers' key/value caches and how a group's rows share them: which context's pass serves which
context, runs of rows of one request, gathering the parent rows a trie level continues, and measuring a cache.

Why apart from the samplers: the word sampler and the exact word search gather rows the same way (beam-search
style reordering, several chunk caches concatenated), and the sampler's module has its algorithm to hold.
"""

from __future__ import annotations

import copy
from bisect import bisect_right
from typing import Any

import torch


def shallow_copy_cache(cache: Any) -> Any:
    """A cache whose layers can be reassigned without touching ``cache``: layers rebind tensors, never write."""
    new = copy.copy(cache)
    new.layers = [copy.copy(layer) for layer in cache.layers]
    return new


def cache_bytes(cache: Any) -> int:
    """Bytes of key/value tensors held by ``cache`` (layers without ``keys``/``values`` count as zero)."""
    total = 0
    for layer in cache.layers:
        for name in ("keys", "values"):
            tensor = getattr(layer, name, None)
            if isinstance(tensor, torch.Tensor):
                total += tensor.nelement() * tensor.element_size()
    return total


def rows_by_chunk(parent_rows: list[int], chunk_starts: list[int]) -> list[tuple[int, list[int]]]:
    """``(chunk, rows within that chunk)`` for parent rows of a level cut into chunks starting at ``chunk_starts``
    (ascending): chunks in ascending order, each chunk's rows in the order given, chunks with no row left out.

    One pass with a binary search per row: testing every row against every chunk cost a wide block's level (a dozen
    chunks and 8,192 rows per pass) a second of Python per level on the H100 machine's host."""
    grouped: dict[int, list[int]] = {}
    for row in parent_rows:
        k = bisect_right(chunk_starts, row) - 1
        grouped.setdefault(k, []).append(row - chunk_starts[k])
    return sorted(grouped.items())


def carriers(contexts: list[list[int]]) -> list[tuple[int, list[int]]]:
    """Which context's forward pass serves which contexts: each context goes to the first of the longest contexts
    of the group that begin with its tokens (itself when there is none). Longest first, so a context that could
    serve another is always placed before it."""
    served: dict[int, list[int]] = {}
    for i in sorted(range(len(contexts)), key=lambda k: (-len(contexts[k]), k)):
        ids = contexts[i]
        carrier = next((c for c in served if contexts[c][: len(ids)] == ids), i)
        served.setdefault(carrier, []).append(i)
    return list(served.items())


def request_runs(requests: list[int]) -> list[tuple[int, int, int]]:
    """``(request, start, end)`` runs of consecutive rows that belong to the same request (``requests[k]`` is row
    ``k``'s): the trie sampler's prefix attention reads one context per run, and draws one random stream per run."""
    runs: list[tuple[int, int, int]] = []
    start = 0
    for k in range(1, len(requests) + 1):
        if k == len(requests) or requests[k] != requests[start]:
            runs.append((requests[start], start, k))
            start = k
    return runs


def mergeable(cache: Any) -> bool:
    """Whether rows from several caches can be concatenated layer by layer (plain key/value tensor layers)."""
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    return all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) for layer in cache.layers)


def _take_rows(pieces: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """Rows of several tensors, concatenated. A one-row source is broadcast with ``expand`` (a view, no copy): the
    first trie level draws every row from the context's cache, and the cache's own ``torch.cat`` copies it anyway."""
    taken = []
    for tensor, rows in pieces:
        if tensor.shape[0] == 1:
            taken.append(tensor.expand(len(rows), *tensor.shape[1:]))
        else:
            taken.append(tensor.index_select(0, rows.to(tensor.device)))
    return taken[0] if len(taken) == 1 else torch.cat(taken)


def gather_rows(parts: list[tuple[Any, torch.Tensor]], can_merge: bool) -> Any:
    """A new cache holding the given rows of one or more chunk caches, in order; the sources are left untouched.

    Plain key/value layers are assembled directly (rows from several chunks concatenated). Any other cache type
    goes through its own ``reorder_cache`` (what beam search uses), which needs all rows from one source.
    """
    if not can_merge:
        if len(parts) != 1:
            raise ValueError("rows from several caches need plain key/value cache layers")
        cache, rows = parts[0]
        new = shallow_copy_cache(cache)
        new.reorder_cache(rows)
        return new
    new = shallow_copy_cache(parts[0][0])
    for i, layer in enumerate(new.layers):
        layer.keys = _take_rows([(c.layers[i].keys, r) for c, r in parts])
        layer.values = _take_rows([(c.layers[i].values, r) for c, r in parts])
    return new

"""The word sampler's records of a trie: its nodes, the forward passes that ran a level, and what a group counted.

Apart from :mod:`harness.plugins.hf.trie.word_sampler` so the sampler's module holds its algorithm, and so the replay
benchmark (``benchmarks/bench_trie_replay.py``) builds levels from the same records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.api import Outcome, SampleWordsRequest
from harness.plugins.hf.shared.draws import PendingCounts
from harness.plugins.hf.shared.tokens import ContinuationDecoder
from harness.plugins.hf.trie.cache import carriers


@dataclass(slots=True)
class TrieNode:
    """A trie node: a token prefix, the samples that reached it, its parent's row in the previous level, its word.

    Slotted: a run makes about a million nodes, and a slotted one is made and read faster."""

    tokens: tuple[int, ...]
    count: int
    parent_row: int
    text: str
    outcome: Outcome = ("open", "")
    #: Index of the request (within one ``sample_many`` group) this node samples for.
    req: int = 0
    #: For an open node, the word every child whose token starts with a space gets, or None if that is not decided
    #: (:func:`harness.plugins.hf.shared.word_boundaries.word_on_space`); found with the node's own outcome.
    closes: str | None = None


@dataclass
class PassChunk:
    """One forward pass of a trie level: rows ``start:end`` and their key/value cache, which the next level gathers
    its parents' rows from. (Its probabilities are drawn from as soon as the pass ends, then dropped.)"""

    cache: Any
    start: int
    end: int


#: What a pass's draws give each of its rows, as three lists: the drawn ``(token, count)`` pairs, the word its
#: space-initial children get (or None), and how many of those the device counted in bulk.
Drawn = tuple[list[list[tuple[int, int]]], list[str | None], list[int]]


def collect_drawn(pending: PendingCounts, words: list[str | None]) -> Drawn:
    """A pass's launched draws (``TrieWordSampler._draw``), waited for, with its rows' words of space-initial
    children."""
    listed, folded = pending.collect()
    return listed, words, folded


@dataclass
class Tallies:
    """The per-request state of one ``sample_many`` call: requests, random streams, decoders, and what was counted."""

    requests: Sequence[SampleWordsRequest]
    rngs: list[np.random.Generator]
    decoders: list[ContinuationDecoder]
    counts: list[dict[str, int]]
    rejected: list[dict[str, int]]


def level_slices(nodes: list[TrieNode], chunks: list[PassChunk], can_merge: bool, rows: int) -> list[tuple[int, int]]:
    """Row ranges of the next forward passes: at most ``rows`` rows, within one parent chunk if needed."""
    slices: list[tuple[int, int]] = []
    start = 0
    while start < len(nodes):
        end = min(start + rows, len(nodes))
        if not can_merge:
            chunk_end = next(c.end for c in chunks if c.start <= nodes[start].parent_row < c.end)
            while end > start + 1 and nodes[end - 1].parent_row >= chunk_end:
                end -= 1
        slices.append((start, end))
        start = end
    return slices


def trace_record(contexts: list[list[int]], n: list[int], slots: int) -> dict[str, Any]:
    """A group's trie trace (``TrieWordSampler.trace``) before its levels: the contexts' lengths, which context's pass
    serves which, each request's sample count and the suffix slots its rows may hold (``max_new_tokens``)."""
    served_by = [[carrier, served] for carrier, served in carriers(contexts)]
    return {"contexts": [len(ids) for ids in contexts], "carriers": served_by, "n": n, "levels": [],
            "max_new_tokens": slots}  # fmt: skip

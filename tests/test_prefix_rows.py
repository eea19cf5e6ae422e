"""The trie sampler's GPU layout of the prefix attention (``harness.plugins.hf.trie.prefix_rows``): the same attention
as the CPU's per-run layout, with nested contexts, several carriers and a request without rows; the same draws."""

from __future__ import annotations

import pytest
import torch

from harness.plugins.hf.shared.prefix_attention import PrefixBatch, SharedPrefix
from harness.plugins.hf.trie.prefix_rows import PaddedCarriers, RowPrefix, layout_for
from harness.plugins.hf.trie.word_sampler import TrieWordSampler
from harness.requests import SampleWordsRequest
from tests.test_model_families import tiny
from tests.test_word_sampler import ByteTokenizer


def _prefix(positions: int, layers: int = 2, kv: int = 2, dim: int = 8) -> SharedPrefix:
    return SharedPrefix([torch.randn(kv, positions, dim) for _ in range(layers)],
                        [torch.randn(kv, positions, dim) for _ in range(layers)])  # fmt: skip


def test_rows_layout_equals_the_runs_layout() -> None:
    torch.manual_seed(0)
    long, other = _prefix(7), _prefix(5)
    # Request 0 reads all of `long`, request 1 its first 4 positions (a nested context read off the same pass),
    # request 2 `other`, request 3 has n = 0 (no prefix, no rows).
    prefixes = [long, long.shortened(4), other, SharedPrefix([], [])]
    rows = [0, 0, 1, 1, 1, 2, 2]
    segments = [(0, 0, 2), (1, 2, 5), (2, 5, 7)]
    q = torch.randn(len(rows), 2, 3, 8)
    key, value = torch.randn(len(rows), 2, 3, 8), torch.randn(len(rows), 2, 3, 8)
    padded = PaddedCarriers(prefixes)
    assert padded.carrier == [0, 0, 1, 0] and padded.length == [7, 4, 5, 0] and padded.max_positions == 7
    rows_layout = RowPrefix(padded, rows)
    assert rows_layout.longest() == 7
    for layer in (0, 1):
        expected = PrefixBatch(prefixes, segments).attend(q, key, value, layer, 0.35)
        torch.testing.assert_close(rows_layout.attend(q, key, value, layer, 0.35), expected, atol=1e-6, rtol=1e-5)
    # Positions past a row's own context weigh nothing: changing them changes no output.
    long.keys[0][:, 4:] += 100.0
    changed = RowPrefix(PaddedCarriers(prefixes), rows).attend(q, key, value, 0, 0.35)
    before = PrefixBatch(prefixes, segments).attend(q, key, value, 0, 0.35)
    torch.testing.assert_close(changed[2:5], before[2:5], atol=1e-6, rtol=1e-5)


def test_layout_by_device() -> None:
    assert layout_for("auto", torch.device("cpu")) == "runs"
    assert layout_for("auto", torch.device("cuda")) == "rows"
    assert layout_for("rows", torch.device("cpu")) == "rows"
    with pytest.raises(ValueError, match="unknown prefix layout 'columns'"):
        layout_for("columns", torch.device("cpu"))


def test_sampler_draws_the_same_words_in_either_layout() -> None:
    """A group of nested and separate contexts on a tiny llama in float32: every request's counts are those of the
    CPU's layout (the probabilities differ in the last bits only, far below any draw's distance to a boundary)."""
    contexts = ["the cat sat on the mat", "the cat sat", "a dog ran", "the cat sat on"]
    requests = [SampleWordsRequest(context=c, n=400, seed=k, mode="exact", max_new_tokens=4)
                for k, c in enumerate(contexts)]  # fmt: skip
    runs = TrieWordSampler(tiny("llama"), ByteTokenizer(), batch_size=64, prefix_layout="runs")
    rows = TrieWordSampler(tiny("llama"), ByteTokenizer(), batch_size=64, prefix_layout="rows")
    assert (runs.prefix_layout, rows.prefix_layout) == ("runs", "rows")
    expected = [r.to_record() for r in runs.sample_many(requests)]
    assert [r.to_record() for r in rows.sample_many(requests)] == expected
    assert rows._padded is None  # the group's padded context tensors are not kept after the group

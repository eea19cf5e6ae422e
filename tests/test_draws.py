"""Inverse-transform draws (``plugins.hf.draws``): exact tokens on hand cases, the right distribution, and the same
tokens as the per-row ``numpy`` version the trie sampler used before (so results did not change)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from plugins.hf import draws
from plugins.hf.draws import draw_counts, draw_tokens


def test_draw_tokens_is_exact_inverse_transform() -> None:
    probs = torch.tensor([[0.0, 0.25, 0.0, 0.75, 0.0]] * 5)
    uniforms = torch.tensor([0.0, 0.2499, 0.25, 0.9999, 1.0 - 2**-53], dtype=torch.float64)
    # Zero-probability tokens (0, 2, 4) have empty intervals and are never drawn, not even for u -> 1.
    assert draw_tokens(probs, uniforms).tolist() == [1, 1, 3, 3, 3]
    with pytest.raises(FloatingPointError):
        draw_tokens(torch.tensor([[float("nan"), 1.0]]), torch.tensor([0.5], dtype=torch.float64))


def test_draw_tokens_distribution() -> None:
    rng = np.random.default_rng(0)
    p = torch.tensor([0.5, 0.2, 0.2, 0.1])
    tokens = draw_tokens(p.expand(20000, 4), torch.from_numpy(rng.random(20000))).tolist()
    counts = np.bincount(tokens, minlength=4)
    assert stats.chisquare(counts, 20000 * p.numpy()).pvalue > 1e-3


def test_draw_counts_hand_case() -> None:
    probs = torch.tensor([[0.0, 0.25, 0.0, 0.75, 0.0], [0.5, 0.5, 0.0, 0.0, 0.0]])
    uniforms = [np.array([0.0, 0.2499, 0.25, 0.9999, 1.0 - 2**-53]), np.array([0.7])]
    # Row 0: two uniforms below 0.25 land on token 1, three on token 3 (never on the empty intervals 0, 2, 4).
    assert draw_counts(probs, uniforms) == [[(1, 2), (3, 3)], [(1, 1)]]
    assert draw_counts(probs, [np.array([]), np.array([])]) == [[], []]
    with pytest.raises(ValueError, match="rows of uniforms"):
        draw_counts(probs, [np.array([0.5])])
    with pytest.raises(FloatingPointError):
        draw_counts(torch.tensor([[float("nan"), 1.0]]), [np.array([0.5])])


def _per_row_numpy(rng: np.random.Generator, probs: np.ndarray, count: int) -> list[tuple[int, int]]:
    """The trie sampler's former draw, one row at a time on the host (kept here as the reference)."""
    cdf = np.cumsum(probs, dtype=np.float64)
    total = cdf[-1]
    tokens = np.searchsorted(cdf, rng.random(count) * total, side="right")
    np.minimum(tokens, np.searchsorted(cdf, total, side="left"), out=tokens)
    values, counts = np.unique(tokens, return_counts=True)
    return list(zip(values.tolist(), counts.tolist(), strict=True))


def test_draw_counts_equals_the_per_row_numpy_draws() -> None:
    torch.manual_seed(0)
    probs = torch.softmax(torch.randn(64, 4096) * 4, dim=-1)
    counts = [int(c) for c in np.random.default_rng(1).integers(0, 300, size=64)]
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    expected = [_per_row_numpy(rng_a, probs[r].numpy(), c) for r, c in enumerate(counts)]
    assert draw_counts(probs, [rng_b.random(c) for c in counts]) == expected


def test_draw_counts_distribution() -> None:
    p = torch.tensor([[0.5, 0.2, 0.2, 0.1]])
    ((*pairs,),) = draw_counts(p, [np.random.default_rng(0).random(20000)])
    counts = np.array([c for _, c in pairs])
    assert [t for t, _ in pairs] == [0, 1, 2, 3]
    assert stats.chisquare(counts, 20000 * p[0].numpy()).pvalue > 1e-3


def test_block_sums_split_over_threads_are_the_one_thread_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = np.random.default_rng(3).random((101, 7, 256), dtype=np.float32)
    expected = np.add.reduce(blocks, axis=-1, dtype=np.float64)
    for threads in (1, 2, 3):
        monkeypatch.setattr(torch, "get_num_threads", lambda t=threads: t)
        # 101 rows over 3 threads: parts of 33, 34 and 34 rows, each the same float64 sums bit for bit.
        assert np.array_equal(draws._block_sums(blocks), expected)


def test_count_rows_hand_case() -> None:
    tokens = np.array([[5, 2, 5, -1], [7, -1, -1, -1], [-1, -1, -1, -1], [3, 3, 3, 1]])
    valid = np.array([[True, True, True, False], [True, False, False, False], [False] * 4, [True] * 4])
    assert draws._count_rows(tokens, valid) == [[(2, 1), (5, 2)], [(7, 1)], [], [(1, 1), (3, 3)]]
    assert draws._count_rows(tokens, np.zeros_like(valid)) == [[], [], [], []]


def test_runs_counted_on_the_device_equal_the_hosts_count() -> None:
    """The GPU's way of counting (sort and run starts where the tokens are) gives the numpy count's pairs, with
    invalid entries anywhere in a row (padding at the end, folded draws in the middle)."""
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 40, size=(50, 30))
    tokens[rng.random(tokens.shape) < 0.3] = -1
    tokens[7] = -1  # a row with nothing left
    expected = draws._count_rows(tokens, tokens >= 0)
    row, token, count = draws.runs_on_device(torch.from_numpy(tokens))
    got: list[list[tuple[int, int]]] = [[] for _ in range(50)]
    for r, t, c in zip(row.tolist(), token.tolist(), count.tolist(), strict=True):
        got[r].append((t, c))
    assert got == expected
    assert got[7] == [] and sum(c for pairs in got for _, c in pairs) == int((tokens >= 0).sum())
    # By hand: row [3, -1, 3, 1] has token 1 once and token 3 twice.
    row, token, count = draws.runs_on_device(torch.tensor([[3, -1, 3, 1]]))
    assert (row.tolist(), token.tolist(), count.tolist()) == ([0, 0], [1, 3], [1, 2])
    # The whole way back to the host, as a GPU takes it, with per-row extras.
    t = torch.from_numpy(tokens)
    extra = torch.arange(50)
    assert draws._counts_to_host(t, extra, on_device=True) == draws._counts_to_host(t, extra, on_device=False)
    assert draws._counts_to_host(t, None, on_device=True)[0] == expected

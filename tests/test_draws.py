"""Inverse-transform draws (``harness.plugins.hf.shared.draws``): exact tokens on hand cases, the right distribution,
and the same tokens as the per-row ``numpy`` version the trie sampler used before (so results did not change)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from harness.plugins.hf.shared import draws
from harness.plugins.hf.shared.draws import draw_counts, draw_tokens
from tests.device_waits import DeviceWaits


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


def test_pairs_by_row_hand_case() -> None:
    # Keys row * 10 + token, sorted, folded draws last: row 0 drew 2 once and 5 twice, row 1 drew 7, row 2 nothing,
    # row 3 drew 1 once and 3 three times.
    keys = np.array([2, 5, 5, 17, 31, 33, 33, 33, draws._FOLDED, draws._FOLDED])
    assert draws._pairs_by_row(keys, 4, 10) == [[(2, 1), (5, 2)], [(7, 1)], [], [(1, 1), (3, 3)]]
    assert draws._pairs_by_row(np.array([draws._FOLDED]), 2, 10) == [[], []]
    assert draws._pairs_by_row(np.zeros(0, dtype=np.int64), 3, 10) == [[], [], []]


def test_flat_search_is_searchsorted_row_by_row() -> None:
    """The binary search over flat arrays gives ``torch.searchsorted(right=True)``'s index on every row, at ties
    (a target equal to an entry, repeated entries) and past both ends; NaN gives 0."""
    cdf = torch.tensor([[0.1, 0.2, 0.2, 0.5, 1.0], [0.0, 0.0, 0.3, 0.3, 0.3]], dtype=torch.float64)
    values = [0.0, 0.05, 0.1, 0.2, 0.25, 0.5, 0.99, 1.0, 1.5, 0.3, -1.0]
    row = torch.tensor([r for r in (0, 1) for _ in values])
    target = torch.tensor(values * 2, dtype=torch.float64)
    expected = torch.searchsorted(cdf[row], target[:, None], right=True)[:, 0]
    assert draws._search_rows(cdf, row, target).tolist() == expected.tolist()
    assert draws._search_rows(cdf, row[:5], target[:5]).tolist() == [0, 0, 1, 3, 3]  # by hand
    for n in (1, 2, 3, 7, 8, 9, 192):  # every length of row, so the loop's count is enough
        wide = torch.cumsum(torch.rand(3, n, dtype=torch.float64), dim=-1)
        row = torch.arange(3).repeat_interleave(50)
        target = torch.rand(150, dtype=torch.float64) * (n + 1) - 0.5
        expected = torch.searchsorted(wide[row], target[:, None], right=True)[:, 0]
        assert draws._search_rows(wide, row, target).tolist() == expected.tolist()
    nan = torch.tensor([float("nan")], dtype=torch.float64)
    assert draws._search_rows(cdf, torch.tensor([0]), nan).tolist() == [0]


def test_launched_draws_are_read_when_collected() -> None:
    """A pass's draws are launched without reading anything back; a row without mass is refused when they are read,
    with the error ``draw_counts`` gives, and every listed count plus the folded ones is the row's sample count."""
    pending = draws.launch_counts(torch.tensor([[float("nan"), 1.0]]), [np.array([0.5])])
    with pytest.raises(FloatingPointError, match="NaN or infinite"):
        pending.collect()
    probs = torch.tensor([[0.0, 0.25, 0.0, 0.75, 0.0], [0.5, 0.5, 0.0, 0.0, 0.0]])
    pending = draws.launch_counts(
        probs, [np.array([0.1, 0.3, 0.9]), np.array([0.7, 0.2])], torch.tensor([True, False]),
        torch.tensor([False, False, False, True, False]),
    )  # fmt: skip
    # Row 0: 0.1 -> token 1, 0.3 and 0.9 -> token 3 (folded); row 1 is not folded: 0.2 -> 0, 0.7 -> 1.
    assert pending.collect() == ([[(1, 1)], [(0, 1), (1, 1)]], [2, 0])


def test_launching_draws_reads_nothing_back() -> None:
    """Launching a pass's draws, folded or not, holds no operation that would wait for a GPU (``tests.device_waits``:
    the padded search read the mass check back and indexed by boolean masks four times)."""
    torch.manual_seed(0)
    probs = torch.softmax(torch.randn(6, 700) * 3, dim=-1)
    uniforms = [np.random.default_rng(k).random(c) for k, c in enumerate((3, 0, 50, 1, 2, 9))]
    with torch.inference_mode(), DeviceWaits() as spy:
        plain = draws.launch_counts(probs, uniforms)
        folded = draws.launch_counts(probs, uniforms, torch.tensor([True, False] * 3), torch.rand(700) < 0.5)
    assert spy.waits == []
    listed, counts = folded.collect()
    every = sum(c for row in plain.collect()[0] for _, c in row)
    assert sum(c for row in listed for _, c in row) + sum(counts) == every == 65

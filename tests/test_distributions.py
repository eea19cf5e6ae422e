"""Word-count helpers: hand-computed values, tie rules, and the split procedure."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from harness.scorers.distributions import (
    counts_tvd,
    entropy_bits,
    majority_words,
    split_halves,
    subsample,
    to_distribution,
    top_word,
    tvd,
)


def test_to_distribution_normalises_and_drops_zero_counts() -> None:
    assert to_distribution({"a": 3, "b": 1, "c": 0}) == {"a": 0.75, "b": 0.25}
    assert to_distribution({}) == {}
    assert to_distribution({"a": 0}) == {}
    with pytest.raises(ValueError):
        to_distribution({"a": -1})


def test_tvd_hand_example() -> None:
    # {a:2,b:2} vs {a:3,c:1}: 0.5 * (|0.5-0.75| + |0.5-0| + |0-0.25|) = 0.5
    assert counts_tvd({"a": 2, "b": 2}, {"a": 3, "c": 1}) == pytest.approx(0.5)
    assert tvd({"a": 0.5, "b": 0.5}, {"a": 0.75, "c": 0.25}) == pytest.approx(0.5)
    # {y:1,x:1} vs {y:3,z:1}: 0.5 * (|0.5-0.75| + |0.5-0| + |0-0.25|) = 0.5
    assert counts_tvd({"y": 1, "x": 1}, {"y": 3, "z": 1}) == pytest.approx(0.5)
    # {a:1,b:3} vs {a:1,b:1}: 0.5 * (|0.25-0.5| + |0.75-0.5|) = 0.25
    assert counts_tvd({"a": 1, "b": 3}, {"a": 1, "b": 1}) == pytest.approx(0.25)


def test_counts_tvd_is_exact_for_integer_counts() -> None:
    # 0.5 * (|.5-.5| + |.25-.5| + |.25-0|) = 0.25 exactly, whatever the summation order
    assert counts_tvd({"a": 2, "b": 1, "c": 1}, {"a": 1, "b": 1}) == 0.25
    assert counts_tvd({"c": 1, "b": 1, "a": 2}, {"b": 1, "a": 1}) == 0.25


def test_tvd_bounds_and_symmetry() -> None:
    assert counts_tvd({"a": 5, "b": 1}, {"b": 2, "a": 10}) == 0.0
    assert counts_tvd({"a": 1}, {"b": 7}) == 1.0
    p, q = {"a": 1, "b": 2, "c": 3}, {"b": 1, "d": 4}
    assert counts_tvd(p, q) == pytest.approx(counts_tvd(q, p))


def test_tvd_of_empty_distribution_is_an_error() -> None:
    with pytest.raises(ValueError):
        tvd({}, {"a": 1.0})
    with pytest.raises(ValueError):
        counts_tvd({"a": 1}, {})


def test_entropy_bits() -> None:
    assert entropy_bits({"a": 1, "b": 1, "c": 1, "d": 1}) == pytest.approx(2.0)
    assert entropy_bits({"a": 0.25, "b": 0.25, "c": 0.25, "d": 0.25}) == pytest.approx(2.0)
    assert entropy_bits({"a": 7}) == 0.0
    assert entropy_bits({"a": 2, "b": 2}) == pytest.approx(1.0)
    # -(0.75 log2 0.75 + 0.25 log2 0.25) = 0.75 * 0.4150374992788438 + 0.25 * 2
    assert entropy_bits({"a": 3, "b": 1}) == pytest.approx(0.8112781244591328)
    with pytest.raises(ValueError):
        entropy_bits({})


def test_top_word_breaks_ties_by_smallest_word() -> None:
    assert top_word({"b": 2, "a": 2, "c": 1}) == "a"
    assert top_word({"a": 2, "b": 2}) == top_word({"b": 2, "a": 2}) == "a"
    assert top_word({"zeta": 3, "alpha": 1}) == "zeta"
    assert top_word({"y": 0.5, "x": 0.5}) == "x"
    assert top_word({}) is None
    assert top_word({"a": 0}) is None


def test_majority_words_is_the_whole_tie() -> None:
    assert majority_words({"b": 2, "a": 2, "c": 1}) == frozenset({"a", "b"})
    assert majority_words({"a": 5, "b": 1}) == frozenset({"a"})
    assert majority_words({}) == frozenset()


@pytest.mark.parametrize("total", [2, 7, 40, 41])
def test_split_halves_sizes_and_partition(total: int) -> None:
    counts = {"many": total - total // 3, "some": total // 3}
    counts = {w: c for w, c in counts.items() if c}
    half_a, half_b = split_halves(counts, np.random.default_rng(3))
    assert sum(half_a.values()) == total // 2
    assert sum(half_b.values()) == total - total // 2
    # The halves partition the individual guesses: together they are exactly the original multiset.
    assert Counter(half_a) + Counter(half_b) == Counter(counts)


def test_split_halves_deterministic_given_seed_and_independent_of_dict_order() -> None:
    counts = {"a": 5, "b": 3, "c": 2, "d": 1}
    reordered = {"d": 1, "c": 2, "b": 3, "a": 5}
    first = split_halves(counts, np.random.default_rng(11))
    assert split_halves(counts, np.random.default_rng(11)) == first
    assert split_halves(reordered, np.random.default_rng(11)) == first
    draws = {str(split_halves(counts, np.random.default_rng(seed))) for seed in range(20)}
    assert len(draws) > 1  # different seeds give different splits


def test_split_halves_of_a_single_word_is_that_word_twice() -> None:
    assert split_halves({"a": 4}, np.random.default_rng(0)) == ({"a": 2}, {"a": 2})
    assert split_halves({"a": 1}, np.random.default_rng(0)) == ({}, {"a": 1})


def test_subsample_draws_without_replacement() -> None:
    counts = {"a": 5, "b": 3, "c": 2}
    sub = subsample(counts, 4, np.random.default_rng(0))
    assert sum(sub.values()) == 4
    assert all(sub[w] <= counts[w] for w in sub)
    assert subsample(counts, 4, np.random.default_rng(0)) == sub
    assert subsample({"b": 3, "c": 2, "a": 5}, 4, np.random.default_rng(0)) == sub
    assert subsample(counts, 10, np.random.default_rng(0)) == counts
    assert subsample(counts, 99, np.random.default_rng(0)) == counts  # fewer items than asked: all of them
    assert subsample(counts, 0, np.random.default_rng(0)) == {}

"""Pure functions on word-count dictionaries: the building blocks of the next-word metrics.

Both the human data (``ClozeInstance.human_counts``) and the model samples (``SampleWordsResponse.counts``) are
``{word: count}`` mappings over normalised words, so every metric is computed from the same few operations here.
Human data given only as proportions (``ClozeInstance.counts_known`` False) is a mapping of shares: every function
on distributions takes it as it is, and the ones on individual people (``expand``, ``split_halves``,
``subsample``) refuse a count that is not a whole number rather than round it.
Everything is deterministic: ties are broken by the lexicographically smallest word, and the only randomness
(``split_halves``, ``subsample``) comes from the ``numpy.random.Generator`` the caller passes in. Nothing lists
more than ``EXPAND_LIMIT`` people one by one: above it, draws are made from the counts, so a count of 10**15 costs
no memory (above ``MAX_DRAWN`` it is refused as a data error, ``TooManyPeopleError``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from harness.api import HarnessError

#: Numbers of people or samples per word; human data given as proportions has shares here (see the module docstring).
Counts = Mapping[str, int] | Mapping[str, float]
Distribution = Mapping[str, float]


def as_number(count: float) -> int | float:
    """A count as an ``int`` when it is a whole number (so integer arithmetic stays exact), else as a ``float`` (a
    proportion, kept as it is: truncating it would make up a count).

    >>> as_number(3.0), as_number(0.25)
    (3, 0.25)
    """
    value = float(count)
    return int(value) if value.is_integer() else value


def _check_counts(counts: Counts) -> None:
    for word, count in counts.items():
        if count < 0:
            raise ValueError(f"negative count {count} for word {word!r}")


def to_distribution(counts: Counts) -> dict[str, float]:
    """Normalise counts to probabilities; words with count 0 are dropped. Empty (or all-zero) counts give ``{}``.

    >>> to_distribution({"a": 3, "b": 1})
    {'a': 0.75, 'b': 0.25}
    """
    _check_counts(counts)
    total = sum(counts.values())
    if total == 0:
        return {}
    return {word: count / total for word, count in counts.items() if count > 0}


def tvd(p: Distribution, q: Distribution) -> float:
    """Total variation distance ``0.5 * sum over the union of words |p(w) - q(w)|`` between two distributions.

    ``p`` and ``q`` must be probability distributions (see ``to_distribution``); an empty one has no defined
    distance, so it raises ``ValueError`` and the caller applies its own rule (the scorers use 1.0).

    >>> tvd({"a": 0.5, "b": 0.5}, {"a": 0.75, "c": 0.25})
    0.5
    """
    if not p or not q:
        raise ValueError("tvd of an empty distribution is undefined")
    # fsum is exactly rounded, so the result does not depend on the (hash-seed dependent) order of the set.
    total = math.fsum(abs(p.get(word, 0.0) - q.get(word, 0.0)) for word in p.keys() | q.keys())
    return min(1.0, max(0.0, 0.5 * total))


def counts_tvd(a: Counts, b: Counts) -> float:
    """``tvd`` of two count mappings, each normalised first.

    Integer counts are compared exactly: ``|a(w)/A - b(w)/B| = |a(w) B - b(w) A| / (A B)``, so the sum is an
    integer and the result is the correctly rounded TVD (0.25 prints as 0.25, not 0.24999999999999997).

    >>> counts_tvd({"a": 2, "b": 2}, {"a": 3, "c": 1})
    0.5
    """
    _check_counts(a)
    _check_counts(b)
    total_a, total_b = sum(a.values()), sum(b.values())
    if not total_a or not total_b:
        raise ValueError("tvd of an empty distribution is undefined")
    if not all(isinstance(v, (int, np.integer)) for v in (*a.values(), *b.values())):
        return tvd(to_distribution(a), to_distribution(b))
    numerator = sum(abs(int(a.get(w, 0)) * total_b - int(b.get(w, 0)) * total_a) for w in a.keys() | b.keys())
    return numerator / (2 * int(total_a) * int(total_b))


def entropy_bits(counts: Counts | Distribution) -> float:
    """Shannon entropy in bits of the distribution the counts (or probabilities) define; normalised first.

    >>> entropy_bits({"a": 1, "b": 1, "c": 1, "d": 1})
    2.0
    """
    if any(v < 0 for v in counts.values()):
        raise ValueError("negative count in entropy_bits")
    total = float(sum(counts.values()))
    if total <= 0:
        raise ValueError("entropy of an empty distribution is undefined")
    h = -math.fsum((v / total) * math.log2(v / total) for v in counts.values() if v > 0)
    return max(0.0, h)


def top_word(counts: Counts | Distribution) -> str | None:
    """The most frequent word; ties go to the lexicographically smallest word. ``None`` if there is no word.

    A fixed tie rule makes accuracy and calibration reproducible: among ~40 human guesses, ties at the top are
    common (e.g. 8 and 8), and dictionary order would otherwise decide.

    >>> top_word({"b": 2, "a": 2, "c": 1})
    'a'
    """
    best: str | None = None
    best_count = 0.0
    for word, count in counts.items():
        if count <= 0:
            continue
        if best is None or count > best_count or (count == best_count and word < best):
            best, best_count = word, count
    return best


def majority_words(counts: Counts | Distribution) -> frozenset[str]:
    """Every word tied at the maximum count (the gold set for "majority" accuracy); empty if there is no word.

    >>> sorted(majority_words({"b": 2, "a": 2, "c": 1}))
    ['a', 'b']
    """
    positive = {word: count for word, count in counts.items() if count > 0}
    if not positive:
        return frozenset()
    top = max(positive.values())
    return frozenset(word for word, count in positive.items() if count == top)


#: Up to this many people (or samples), ``split_halves`` and ``subsample`` list the individual guesses and permute
#: them, as they always have, so their draws (and every stored result) stay exactly what they were. Above it they
#: draw from the counts (a multivariate hypergeometric draw: the same distribution, other random numbers), so a
#: count of a billion costs no memory. No study has a million people per item, so in practice only hostile or
#: broken data takes the second path.
EXPAND_LIMIT = 1_000_000
#: The most people (or samples) a draw from counts handles: numpy's multivariate hypergeometric sampler
#: (``method="marginals"``) needs a total below 10**9. A count above it is a data error (there are fewer than ten
#: billion people), refused with a ``TooManyPeopleError`` saying so (``too_many_people`` lets a scorer refuse up
#: front, naming the instance).
MAX_DRAWN = 10**9 - 1


class TooManyPeopleError(HarnessError, ValueError):
    """More people (or samples) than a draw can take (``EXPAND_LIMIT``, ``MAX_DRAWN``): a data error, shown as one
    line (a ``HarnessError``); a ``ValueError`` too, like every other refusal of this module."""


def whole_counts(counts: Counts) -> tuple[list[str], list[int]]:
    """The words in sorted order and their counts as exact integers; ``ValueError`` for a negative count or one that
    is not a whole number of people (a proportion cannot be split into people).

    >>> whole_counts({"b": 1, "a": 2.0})
    (['a', 'b'], [2, 1])
    """
    _check_counts(counts)
    words = sorted(counts)
    numbers: list[int] = []
    for word in words:
        count = counts[word]
        if isinstance(count, (int, np.integer)):
            numbers.append(int(count))
            continue
        if not float(count).is_integer():
            raise ValueError(
                f"count {count} for word {word!r} is not a whole number of people: proportions cannot be expanded "
                "into individual guesses"
            )
        numbers.append(int(count))
    return words, numbers


def expand(counts: Counts) -> list[str]:
    """The individual items of ``counts``, words in sorted order (so a random draw from them depends only on the
    counts and the generator, not on dictionary order). ``ValueError`` above ``EXPAND_LIMIT`` items: a list of one
    entry per person would not fit in memory (draw from the counts instead, ``draw_from_counts``).

    >>> expand({"b": 1, "a": 2})
    ['a', 'a', 'b']
    """
    words, numbers = whole_counts(counts)
    total = sum(numbers)
    if total > EXPAND_LIMIT:
        raise TooManyPeopleError(f"{total:,} people are too many to list one by one (at most {EXPAND_LIMIT:,})")
    return [word for word, number in zip(words, numbers, strict=True) for _ in range(number)]


def too_many_people(named_counts: Iterable[tuple[str, Counts]], limit: int = MAX_DRAWN) -> tuple[str, int] | None:
    """The first ``(name, total)`` of ``(name, counts)`` pairs whose total passes ``limit``, else None (for a
    scorer's ``prepare``, to refuse before scoring anything).

    >>> too_many_people([("a", {"x": 3}), ("b", {"x": 10**15, "y": 1})])
    ('b', 1000000000000001)
    """
    for name, counts in named_counts:
        total = sum(int(c) for c in counts.values() if c > 0)
        if total > limit:
            return name, total
    return None


def draw_from_counts(numbers: Sequence[int], k: int, rng: np.random.Generator) -> list[int]:
    """How many of ``k`` items drawn without replacement from ``numbers[i]`` items of each kind are of each kind: a
    multivariate hypergeometric draw, without listing the items (``ValueError`` above ``MAX_DRAWN`` in all).

    >>> draw_from_counts([5, 0, 3], 8, np.random.default_rng(0))
    [5, 0, 3]
    """
    total = sum(numbers)
    if total > MAX_DRAWN:
        raise TooManyPeopleError(
            f"{total:,} people (or samples) in one instance are too many to draw from (at most {MAX_DRAWN:,}): "
            "is a count wrong?"
        )
    if not 0 <= k <= total:
        raise ValueError(f"cannot draw {k} of {total}")
    drawn = rng.multivariate_hypergeometric(np.asarray(numbers, dtype=np.int64), k, method="marginals")
    return [int(x) for x in drawn]


def _nonzero(words: Sequence[str], numbers: Sequence[int]) -> dict[str, int]:
    return {word: number for word, number in zip(words, numbers, strict=True) if number > 0}


def counts_by_group(counts: Counts, group_of: Mapping[str, str]) -> dict[str, int | float]:
    """The counts summed per group of each word (``group_of[word]``: a POS tag, a cluster), groups sorted.
    Whole numbers stay integers; proportions are summed as they are.

    >>> counts_by_group({"cat": 2, "dog": 1, "ran": 3, "x": 0}, {"cat": "NOUN", "dog": "NOUN", "ran": "VERB", "x": "X"})
    {'NOUN': 3, 'VERB': 3}
    >>> counts_by_group({"cat": 0.5, "dog": 0.25, "ran": 0.25}, {"cat": "NOUN", "dog": "NOUN", "ran": "VERB"})
    {'NOUN': 0.75, 'VERB': 0.25}
    """
    out: dict[str, int | float] = {}
    for word, count in counts.items():
        if count > 0:
            group = group_of[word]
            out[group] = out.get(group, 0) + as_number(count)
    return dict(sorted(out.items()))


def split_halves(counts: Counts, rng: np.random.Generator) -> tuple[dict[str, int], dict[str, int]]:
    """Split the individual guesses at random into two disjoint halves: A = first ``floor(N/2)``, B = the rest.

    The guesses are expanded into a multiset in sorted word order before the permutation, so the result depends
    only on ``counts`` and the state of ``rng`` (not on dictionary order). ``A + B == counts`` always. Above
    ``EXPAND_LIMIT`` people, half A is drawn from the counts instead (``draw_from_counts``): the same distribution,
    without a list of one entry per person.
    """
    words, numbers = whole_counts(counts)
    total = sum(numbers)
    if total > EXPAND_LIMIT:
        drawn = draw_from_counts(numbers, total // 2, rng)
        rest = [n - a for n, a in zip(numbers, drawn, strict=True)]
        return _nonzero(words, drawn), _nonzero(words, rest)
    guesses = expand(counts)
    order = rng.permutation(len(guesses))
    half = len(guesses) // 2
    half_a = Counter(guesses[i] for i in order[:half])
    half_b = Counter(guesses[i] for i in order[half:])
    return dict(sorted(half_a.items())), dict(sorted(half_b.items()))


def subsample(counts: Counts, k: int, rng: np.random.Generator) -> dict[str, int]:
    """``k`` of the individual items drawn without replacement (all of them if there are at most ``k``).

    Drawing without replacement from i.i.d. samples gives ``k`` i.i.d. samples, so a subsample of a model's
    samples is a model sample of size ``k``, comparable with a human sample of the same size. Deterministic given
    ``rng``, like ``split_halves`` (and, like it, drawn from the counts above ``EXPAND_LIMIT`` items).
    """
    if k < 0:
        raise ValueError(f"subsample size must be >= 0, got {k}")
    words, numbers = whole_counts(counts)
    total = sum(numbers)
    if total > EXPAND_LIMIT:
        if total <= k:
            return _nonzero(words, numbers)
        return _nonzero(words, draw_from_counts(numbers, k, rng))
    items = expand(counts)
    if len(items) <= k:
        return dict(sorted(Counter(items).items()))
    chosen = rng.choice(len(items), size=k, replace=False)
    return dict(sorted(Counter(items[i] for i in chosen).items()))

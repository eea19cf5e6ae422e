"""The original Provo study's conventions (Ilia & Aziz 2024, ``evgeniael/predict_next_word``), for ``variant: paper``.

The ``ece`` and ``human_control`` scorers take ``variant=paper`` to reproduce the original notebooks' numbers; the
conventions they share live here, each a transcription of the original code (``docs/metrics.md``, "Paper-faithful
variants", lists every difference from the default and why the default is the better choice):

- **Support order** (``first_argmax``): a predictor's top word is the *first* word with the maximal count in its
  support order (``torch.argmax`` / ``list.index(max(...))``), not the alphabetically smallest. The model's order
  is ``response.first_seen`` where the source recorded it, else codepoint order (what ``np.unique`` gave the
  original); the humans' is the order of ``human_counts`` (the loader keeps the release's); an oracle subset's is
  its ``random.sample`` draw order.
- **Confidence** (``paper_confidence``): the top word's probability rounded to float32, as ``torch.Tensor`` stored
  it, so 28/40 = 0.7 becomes 0.69999999 and falls in the bin below.
- **ECE** (``paper_ece_columns``): lower bin edges ``np.arange(0, 1, 1/n_bins)``, membership
  ``edge <= conf < edge + 1/n_bins``: a confidence of exactly 1.0 is in no bin but still counts in ``N``.
- **Oracle split** (``oracle_split``): Python's ``random`` (CPython's algorithm, which the original ran), reseeded
  at every call; an odd list first loses one response, removed *in place* from the caller's list; subset 1 is
  ``random.sample(words, 20)`` in draw order and subset 2 the rest.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from harness.scorers.distributions import EXPAND_LIMIT, TooManyPeopleError

#: Responses in an oracle subset (the original's ``N = 20``).
ORACLE_SIZE = 20
#: The fewest responses a position needs for the oracle metrics. The original's split cannot draw 20 from fewer,
#: and with exactly 20 the "subset" would be every response; such positions are left out (their values are None).
MIN_ORACLE_RESPONSES = ORACLE_SIZE + 1
#: The seed whose split the original used for its TVD oracles, and which removed an odd response first.
TVD_SPLIT_SEED = 1


def expand_responses(counts: Mapping[str, int] | Mapping[str, float]) -> list[str]:
    """The individual responses, each word repeated by its count, in the mapping's order (the original's list).
    Counts must be whole numbers of people: a proportion raises ``ValueError`` (it cannot be made into people), and
    so does a total above ``EXPAND_LIMIT`` (the original's algorithm draws from this list, so it cannot be drawn
    from the counts instead; a Provo position has about 40 people).

    >>> expand_responses({"b": 2, "a": 1})
    ['b', 'b', 'a']
    """
    for word, count in counts.items():
        if not float(count).is_integer():
            raise ValueError(f"count {count} for word {word!r} is not a whole number of people")
    total = sum(int(count) for count in counts.values() if count > 0)
    if total > EXPAND_LIMIT:
        raise TooManyPeopleError(
            f"{total:,} people are too many for the paper variant, which lists them one by one (at most "
            f"{EXPAND_LIMIT:,})"
        )
    words: list[str] = []
    for word, count in counts.items():
        words.extend([word] * int(count))
    return words


def oracle_split(words: list[str], seed: int, size: int = ORACLE_SIZE) -> tuple[list[str], list[str]]:
    """``sample_oracle_without_replacement_disjoint_groups(words, seed, N=size)`` of the original, line for line.

    The generator is reseeded with ``seed``; if ``words`` has an odd length, one response drawn by
    ``sample(words, 1)`` is removed **in place** (``list.remove``, so its first occurrence goes, not the drawn
    position): later calls on the same list see it even and draw no removal. Subset 1 is ``sample(words, size)``
    in draw order; subset 2 is the rest, each subset-1 item removed from a copy of ``words``.
    ``random.Random(seed)`` runs the same algorithm as ``random.seed(seed)`` and the module functions, without
    touching the interpreter's global generator. ``ValueError`` if fewer than ``size`` responses remain.
    """
    rng = random.Random(seed)
    if len(words) % 2 == 1:
        removed = rng.sample(words, 1)
        words.remove(removed[0])
    subset1 = rng.sample(words, size)
    subset2 = words.copy()
    for item in subset1:
        subset2.remove(item)
    return subset1, subset2


def oracle_subsets(counts: Mapping[str, int] | Mapping[str, float], n_seeds: int) -> list[list[str]] | None:
    """Subset 1 of the split with seed ``k`` for ``k`` in ``0..n_seeds-1``, as the original's ECE loop drew them.

    The original called the split with seed 1 first (for its TVD oracle), which removed an odd response from the
    list in place; the seeds 0..19 of the ECE loop then split the already-even list without a removal draw. None
    for a position with fewer than ``MIN_ORACLE_RESPONSES`` responses.
    """
    words = expand_responses(counts)
    if len(words) < MIN_ORACLE_RESPONSES:
        return None
    oracle_split(words, TVD_SPLIT_SEED)
    return [oracle_split(words, seed)[0] for seed in range(n_seeds)]


def first_argmax(counts: Mapping[str, int | float], order: Iterable[str] | None = None) -> str | None:
    """The first word with the maximal (positive) count in ``order`` (default: the mapping's own order).

    Words of ``counts`` missing from ``order`` come after it, in codepoint order. None if there is no word.

    >>> first_argmax({"a": 2, "b": 2}, ["b", "a"]), first_argmax({"a": 2, "b": 2})
    ('b', 'a')
    """
    best: str | None = None
    best_count: int | float = 0
    for word in support_order(counts, order):
        count = counts[word]
        if count > 0 and (best is None or count > best_count):
            best, best_count = word, count
    return best


def support_order(counts: Mapping[str, int | float], order: Iterable[str] | None = None) -> list[str]:
    """The words of ``counts`` in ``order`` (each once), then any others in codepoint order."""
    if order is None:
        return list(counts)
    seen: dict[str, None] = {}
    for word in order:
        if word in counts:
            seen.setdefault(word, None)
    rest = sorted(word for word in counts if word not in seen)
    return [*seen, *rest]


def model_order(counts: Mapping[str, int], first_seen: Sequence[str] | None) -> list[str]:
    """The model's support order: ``first_seen`` where the response has it, else codepoint order (``np.unique``)."""
    return support_order(counts, sorted(counts) if first_seen is None else first_seen)


def paper_confidence(count: float, total: float) -> float:
    """``count / total`` rounded to float32, as the original's ``torch.Tensor`` of probabilities held it.

    >>> paper_confidence(28, 40) < 0.7
    True
    """
    return float(np.float32(count / total))


def predict_paper(
    counts: Mapping[str, int] | Mapping[str, float], order: Iterable[str] | None = None
) -> tuple[str | None, float]:
    """``(first-argmax word, its float32 probability)``; ``(None, 0.0)`` for an empty distribution."""
    word = first_argmax(counts, order)
    if word is None:
        return None, 0.0
    return word, paper_confidence(counts[word], sum(counts.values()))


def subset_counts(words: Sequence[str]) -> dict[str, int]:
    """The counts of a list of responses, in first-occurrence order (``dict(Counter(words))``)."""
    return dict(Counter(words))


def bin_edges(n_bins: int) -> NDArray[np.float64]:
    """The original's lower bin edges, ``np.arange(0, 1, 1/n_bins)`` (e.g. 0.30000000000000004 for 10 bins)."""
    edges: NDArray[np.float64] = np.arange(0, 1, 1 / n_bins)
    return edges


def paper_ece_columns(confidences: ArrayLike, correct: ArrayLike, n_bins: int = 10) -> NDArray[np.float64]:
    """The original's ``calculate_ECE`` for each column of ``(N, S)`` arrays (1-D input: one column).

    For each lower edge ``i`` of ``bin_edges(n_bins)``, the bin holds the confidences with ``conf >= i`` and
    ``conf < i + 1/n_bins`` (float64 comparisons); a non-empty bin adds ``|avg_conf - acc| * n_bin / N``, in edge
    order. ``N`` counts every prediction, so a confidence of 1.0, which no bin holds, only enlarges the
    denominator. The sums are exact for float32 confidences of a few thousand predictions, so the result equals
    the original's loop over one column.

    >>> float(paper_ece_columns([1.0, 0.5], [True, False])[0])  # bin [0.5, 0.6): |0.5 - 0| * 1 / 2
    0.25
    """
    conf = np.asarray(confidences, dtype=np.float64)
    corr = np.asarray(correct, dtype=np.float64)
    if conf.shape != corr.shape:
        raise ValueError(f"confidences {conf.shape} and correct {corr.shape} differ in shape")
    if conf.ndim == 1:
        conf, corr = conf[:, None], corr[:, None]
    if conf.ndim != 2 or conf.shape[0] == 0:
        raise ValueError("paper ECE needs 1-D or 2-D arrays with at least one prediction")
    n = conf.shape[0]
    width = 1 / n_bins
    total = np.zeros(conf.shape[1], dtype=np.float64)
    for edge in bin_edges(n_bins):
        inside = (conf >= edge) & (conf < (edge + width))
        n_bin = inside.sum(axis=0)
        filled = n_bin > 0
        if not filled.any():
            continue
        safe = np.where(filled, n_bin, 1)
        avg_conf = np.where(inside, conf, 0.0).sum(axis=0) / safe
        acc = np.where(inside, corr, 0.0).sum(axis=0) / safe
        total = total + np.where(filled, np.abs(avg_conf - acc) * n_bin / n, 0.0)
    return total


def population_std(values: ArrayLike) -> float:
    """The standard deviation with ddof 0, the original's ``np.std`` over its 20 seeds (exactly rounded sums,
    like ``harness.scoring.stats.sample_std``, so the result does not depend on the array's memory alignment).

    >>> population_std([1.0, 3.0])
    1.0
    """
    data = [float(x) for x in np.ravel(np.asarray(values, dtype=np.float64))]
    mean = math.fsum(data) / len(data)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in data) / len(data))

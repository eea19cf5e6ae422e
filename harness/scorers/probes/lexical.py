"""Lexical probe: word n-gram distance between two texts (unigrams, bigrams, trigrams by default).

Distance (from the task issue): the number of n-gram occurrences of each text not found in the other, divided by the
total number of n-grams of both texts. With the n-gram lists ``A`` and ``B`` (with repetition)::

    d = (#{a in A : a not in set(B)} + #{b in B : b not in set(A)}) / (|A| + |B|)

0 means the same n-grams, 1 none shared. It is 1 minus the overlap of the original study's code (Giulianelli et al.,
2023, ``scorer.py``: ``(count_1_in_2 + count_2_in_1) / combined_length``). When neither text has an n-gram of that
order (two empty texts, or two single tokens for bigrams) the distance is undefined: NaN (the study's code also
returned NaN, for the overlap), which the scorer counts and leaves out, or sets to 0 with its ``undefined: zero``
argument. An empty text against a non-empty one is at distance 1.

Tokens are spaCy tokens of the (stripped, optionally truncated) text, lower-cased ``token.text``, punctuation
included, as in the study. The language's spaCy pipeline tokenises when one loads (the study's tokenizer); otherwise
``spacy.blank(language)``, spaCy's rule-based tokenizer for that language, so that the lexical probe works for any
language spaCy knows even without a tagger. :meth:`NgramProbe.describe` records which was used per language.

The same n-gram machinery serves the syntactic probe (``harness.scorers.probes.syntactic``) over POS tags.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from harness.api import Option, Options, optional, positive_int
from harness.scorers.probes import spacy_docs
from harness.scorers.probes.base import Probe, ProbeUnavailable
from harness.scorers.probes.spacy_docs import DEFAULT_BATCH_SIZE, DEFAULT_PIPELINES, Pipeline
from harness.scorers.probes.truncation import Truncator, tokenizer_name

#: Measure names of the usual orders; any other order ``n`` is called ``f"{n}gram"``.
NGRAM_NAMES = {1: "unigram", 2: "bigram", 3: "trigram"}

#: Texts per side of one dense block in :func:`distance_matrix` (bounds memory for large ``a`` x ``b`` calls).
BLOCK = 128


def measure_name(n: int) -> str:
    return NGRAM_NAMES.get(n, f"{n}gram")


def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The n-grams of ``tokens`` in order, with repetition (none when there are fewer than ``n`` tokens)."""
    return list(zip(*(tokens[i:] for i in range(n)), strict=False))


def ngram_distance(a: Sequence[str], b: Sequence[str], n: int) -> float:
    """The n-gram distance between two token sequences, written as defined (reference for the vectorised code)."""
    grams_a, grams_b = ngrams(a, n), ngrams(b, n)
    total = len(grams_a) + len(grams_b)
    if total == 0:
        return float("nan")
    set_a, set_b = set(grams_a), set(grams_b)
    unshared = sum(g not in set_b for g in grams_a) + sum(g not in set_a for g in grams_b)
    return unshared / total


@dataclass(frozen=True)
class Grams:
    """One text's distinct n-grams of one order as integer ids with their counts (float for BLAS products)."""

    ids: np.ndarray
    counts: np.ndarray
    total: float


def distance_matrix(a: Sequence[Grams], b: Sequence[Grams]) -> np.ndarray:
    """``[len(a), len(b)]`` n-gram distances, computed blockwise with dense count matrices over the block's n-grams.

    With ``X`` the count and ``P`` the presence matrix of the block's texts over their n-grams, the occurrences of
    ``a_i`` found in ``b_j`` are ``(X_a P_b^T)_ij`` and those of ``b_j`` found in ``a_i`` are ``(P_a X_b^T)_ij``, so
    ``d = 1 - shared / (|A| + |B|)`` for all pairs in two matrix products instead of a Python loop over pairs.
    """
    out = np.empty((len(a), len(b)), dtype=np.float64)
    for i in range(0, len(a), BLOCK):
        for j in range(0, len(b), BLOCK):
            out[i : i + BLOCK, j : j + BLOCK] = _block(a[i : i + BLOCK], b[j : j + BLOCK])
    return out


def _block(a: Sequence[Grams], b: Sequence[Grams]) -> np.ndarray:
    feats = [*a, *b]
    m = len(a)
    totals = np.fromiter((g.total for g in feats), dtype=np.float64, count=len(feats))
    lengths = np.fromiter((g.ids.size for g in feats), dtype=np.intp, count=len(feats))
    if lengths.sum():
        ids = np.concatenate([g.ids for g in feats])
        uniq, cols = np.unique(ids, return_inverse=True)
        rows = np.repeat(np.arange(len(feats)), lengths)
        x = np.zeros((len(feats), uniq.size), dtype=np.float64)
        x[rows, cols.reshape(-1)] = np.concatenate([g.counts for g in feats])
        p = (x > 0).astype(np.float64)
        shared = x[:m] @ p[m:].T + p[:m] @ x[m:].T
    else:
        shared = np.zeros((m, len(b)), dtype=np.float64)
    denom = totals[:m, None] + totals[None, m:]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (denom - shared) / denom  # 0 / 0 -> NaN: no n-gram on either side


def pipeline_overrides(value: object) -> dict[str, tuple[str, ...]]:
    """The ``pipelines`` argument checked: language -> spaCy packages (a package name or a list of them); ``{}`` for
    None. The probe merges it into ``spacy_docs.DEFAULT_PIPELINES``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"pipelines must map a language to a list of spaCy packages, got {value!r}")
    overrides: dict[str, tuple[str, ...]] = {}
    for lang, packages in value.items():
        names = [packages] if isinstance(packages, str) else packages
        if (
            not isinstance(lang, str)
            or not isinstance(names, (list, tuple))
            or not names
            or not all(isinstance(p, str) and p for p in names)
        ):
            raise ValueError(
                f"pipelines[{lang!r}] must be a package name or a non-empty list of them, got {packages!r}"
            )
        overrides[lang] = tuple(names)
    return overrides


def parse_orders(n: object) -> tuple[int, ...]:
    """The n-gram orders from a YAML value (an int or a list), checked: each order becomes a measure name."""
    orders = [n] if isinstance(n, int) else n
    if (
        not isinstance(orders, (list, tuple))
        or not orders
        or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in orders)
    ):
        raise ValueError(f"n must be a positive integer or a non-empty list of them, got {n!r}")
    if len(set(orders)) != len(orders):
        raise ValueError(f"n has repeated orders: {n!r}")
    return tuple(orders)


class NgramProbe(Probe):
    """Word n-gram distances (``unigram``, ``bigram``, ``trigram`` by default) between texts.

    Args (keyword, as in a task YAML):
        n: n-gram orders, default ``[1, 2, 3]``; each order is one measure.
        pipelines: language -> spaCy packages to try in order for tokenisation (merged into
            ``spacy_docs.DEFAULT_PIPELINES``); when none loads, ``spacy.blank(language)`` tokenises.
        max_tokens: cut each text at this many tokens before probing (``None``: no cut).
        truncate_tokenizer: tokenizer counting those tokens: ``"whitespace"`` or a sentence-transformers model
            (default: the semantic probe's default model, all-MiniLM-L6-v2).
        batch_size: texts per ``nlp.pipe`` batch.
    """

    name = "lexical"
    #: What the n-grams are made of (for provenance).
    units = "lower-cased token.text"
    options: ClassVar[Options] = Options(
        Option("n", parse_orders, (1, 2, 3), "n-gram orders, each one measure (unigram, bigram, ...)", "int or list"),
        Option(
            "pipelines",
            pipeline_overrides,
            None,
            "language -> spaCy packages to try in order, merged into the defaults",
            "mapping",
        ),
        Option("max_tokens", optional(positive_int), None, "cut each text at this many tokens first (null: no cut)"),
        Option(
            "truncate_tokenizer",
            optional(tokenizer_name),
            None,
            "tokenizer counting max_tokens: whitespace or a model (null: all-MiniLM-L6-v2)",
            "str or null",
        ),
        Option("batch_size", positive_int, DEFAULT_BATCH_SIZE, "texts per nlp.pipe batch"),
    )

    def __init__(self, **args: Any) -> None:
        settings = self.parse_options(args)
        self.n: tuple[int, ...] = tuple(settings["n"])
        self.pipelines = {**DEFAULT_PIPELINES, **(settings["pipelines"] or {})}
        self.batch_size: int = settings["batch_size"]
        self.truncator = Truncator(settings["max_tokens"], settings["truncate_tokenizer"])
        self._pipelines: dict[str, Pipeline] = {}
        self._vocab: dict[tuple[str, ...], int] = {}
        self._features: dict[tuple[str, str], tuple[Grams, ...]] = {}

    @property
    def measures(self) -> tuple[str, ...]:
        return tuple(measure_name(k) for k in self.n)

    # -- what is counted: overridden by the syntactic probe --------------------------------------------------------

    def _pipeline(self, language: str) -> Pipeline:
        """The language's pipeline if one of its packages loads, else spaCy's blank tokenizer for the language."""
        if language not in self._pipelines:
            found = spacy_docs.candidates(language, self.pipelines)
            pipeline = spacy_docs.first_loadable(found[1], need_tags=False)[0] if found else None
            if pipeline is None:
                try:
                    pipeline = spacy_docs.blank(language.replace("_", "-").split("-")[0].lower())
                except Exception as exc:  # spaCy raises ImportError/ValueError/... for a language it lacks
                    raise ProbeUnavailable(
                        f"{self.name} probe: no spaCy tokenizer for language {language!r} "
                        f"(tried {list(found[1]) if found else []} and spacy.blank): {type(exc).__name__}: {exc}"
                    ) from exc
            self._pipelines[language] = pipeline
        return self._pipelines[language]

    def _sequences(self, pipeline: Pipeline, texts: list[str]) -> list[tuple[str, ...]]:
        return spacy_docs.tokens(pipeline, texts, self.batch_size)

    # -- the probe interface ------------------------------------------------------------------------------------

    def prepare(self, texts: Sequence[str], language: str) -> None:
        pipeline = self._pipeline(language)
        missing = [t for t in dict.fromkeys(texts) if (language, t) not in self._features]
        if not missing:
            return
        # Stripped as in the study (leading/trailing whitespace would otherwise be SPACE tokens).
        cut = [t.strip() for t in self.truncator(missing)]
        for text, seq in zip(missing, self._sequences(pipeline, cut), strict=True):
            self._features[(language, text)] = tuple(self._grams(seq, k) for k in self.n)

    def _grams(self, seq: Sequence[str], n: int) -> Grams:
        counts = Counter(ngrams(seq, n))
        if not counts:
            return Grams(np.empty(0, np.int64), np.empty(0, np.float64), 0.0)
        vocab = self._vocab
        ids = np.fromiter((vocab.setdefault(g, len(vocab)) for g in counts), dtype=np.int64, count=len(counts))
        values = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        return Grams(ids, values, float(values.sum()))

    def distances(self, a: Sequence[str], b: Sequence[str], language: str) -> dict[str, np.ndarray]:
        self.prepare([*a, *b], language)
        fa = [self._features[(language, t)] for t in a]
        fb = [self._features[(language, t)] for t in b]
        return {
            measure: distance_matrix([f[k] for f in fa], [f[k] for f in fb]) for k, measure in enumerate(self.measures)
        }

    def describe(self) -> dict[str, object]:
        return {
            "probe": self.name,
            "measures": list(self.measures),
            "n": list(self.n),
            "units": self.units,
            "pipelines": {lang: p.describe() for lang, p in self._pipelines.items()},
            "truncation": self.truncator.describe(),
        }

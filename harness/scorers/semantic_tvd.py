"""``semantic_tvd``: TVD over clusters of words with similar meaning (Ilia & Aziz 2024, section 5).

``sofa`` and ``couch`` are different words and the same answer. Per context, the union of the human and model words
is embedded, the vectors standardised (per dimension, over the context's words), and clustered with k-means;
the probability of each cluster is the summed probability of its words, and the TVD is taken over clusters. Words
without an embedding (possible with a word-vectors file) share one extra group, as in the study's code.

``k`` is chosen as the study's code chose it (``choose_k`` in its repository): with ``n`` words, ``k`` runs over
``range(2, n, step)`` with ``step = 1`` if ``n <= 3`` else ``n // 3``; for each ``k`` the within-cluster error is the
sum over words of the Euclidean distance to their centroid (the code's ``sse_score``, distances not squared); the
chosen ``k`` is the one before the first relative change below ``rel_change`` (0.05), else the ``k`` of least
error; two words make two clusters. k-means is scikit-learn's with ``random_state=seed``.

The embeddings differ from the study's: it used the word2vec Google News vectors (300 dimensions, words outside
their vocabulary in the extra group), which are not available offline here. The default is the packaged
sentence-transformers ``all-MiniLM-L6-v2`` (every word gets a vector, from its subword pieces); ``model`` takes any
sentence-transformers model, and ``vectors`` a word-vectors file in the word2vec/GloVe text format (``word v1 v2
...`` per line; the Google News vectors converted to text work) to use instead.

Metrics: ``semantic_tvd`` (model vs all the humans), ``semantic_tvd_human_halves`` (two random halves of the people
over the same clusters, mean over ``n_splits``; the control) and ``semantic_tvd_model_half`` (model vs half A).
Contexts with fewer than two words with a vector have no value. Human data given only as proportions
(``counts_known`` False): ``semantic_tvd`` sums the proportions per cluster; the two metrics on halves of the people
are None for such an instance, and the scorer's ``notes`` say so.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from harness.api import (
    HarnessError,
    Instance,
    Metric,
    Option,
    Options,
    ScorerUnavailable,
    counts_known,
    open_unit_float,
    optional,
    positive_int,
)
from harness.api import integer as integer_value
from harness.api import text as text_value
from harness.scorers.cloze import ClozeScorer, human_splits
from harness.scorers.distributions import counts_by_group, counts_tvd
from harness.scorers.probes.base import ProbeUnavailable
from harness.scorers.probes.semantic import DEFAULT_MODEL, EmbeddingProbe
from harness.scorers.tvd import EMPTY_MODEL_TVD

#: The group of the words without an embedding.
NO_EMBEDDING = "<no embedding>"


def within_cluster_error(x: np.ndarray, centroids: np.ndarray, labels: np.ndarray) -> float:
    """The sum over points of the Euclidean distance to their centroid (the study's ``sse_score``)."""
    return float(np.linalg.norm(x - centroids[labels], axis=1).sum())


def choose_clusters(x: np.ndarray, seed: int, rel_change: float) -> np.ndarray:
    """Cluster labels of the rows of ``x`` (at least two), with ``k`` chosen as the module docstring says."""
    from sklearn.cluster import KMeans

    n = len(x)
    if n == 2:
        return np.asarray(KMeans(n_clusters=2, random_state=seed, n_init=20, max_iter=400).fit(x).labels_)
    step = 1 if n <= 3 else n // 3
    fits = []
    for k in range(2, n, step):
        model = KMeans(n_clusters=k, random_state=seed).fit(x)
        fits.append((within_cluster_error(x, model.cluster_centers_, model.labels_), np.asarray(model.labels_)))
    errors = [error for error, _ in fits]
    chosen = int(np.argmin(errors))
    for i in range(1, len(errors)):
        if errors[i - 1] > 0 and abs((errors[i] - errors[i - 1]) / errors[i - 1]) < rel_change:
            chosen = i - 1
            break
    return fits[chosen][1]


def read_word_vectors(path: Path, wanted: Collection[str]) -> dict[str, np.ndarray]:
    """The vectors of the ``wanted`` words from a word2vec/GloVe text file (a first line ``count dim`` is skipped)."""
    wanted = set(wanted)
    found: dict[str, np.ndarray] = {}
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            for line_no, line in enumerate(f, start=1):
                word, _, rest = line.rstrip("\n").partition(" ")
                if word in wanted and word not in found:
                    try:
                        found[word] = np.array(rest.split(), dtype=np.float64)
                    except ValueError:
                        raise HarnessError(f"{path}: line {line_no}: not 'word v1 v2 ...'") from None
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read the word vectors ({exc.strerror or exc})") from exc
    return found


class SemanticTvdScorer(ClozeScorer):
    """Model-vs-human TVD over k-means clusters of word embeddings, with its split-half control."""

    name: ClassVar[str] = "semantic_tvd"
    extras: ClassVar[tuple[str, ...]] = ("probes",)
    headline: ClassVar[tuple[str, ...] | None] = ("semantic_tvd", "semantic_tvd_human_halves")
    options: ClassVar[Options] = Options(
        Option(
            "model", text_value, DEFAULT_MODEL, "sentence-transformers model embedding the words (default packaged)"
        ),
        Option("vectors", optional(text_value), None, "word2vec/GloVe text file to use instead of model"),
        Option("rel_change", open_unit_float, 0.05, "relative change of the within-cluster error that stops k"),
        Option("seed", integer_value, 0, "k-means random_state"),
        Option("n_splits", positive_int, 10, "random human halves for the control"),
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.embeddings: dict[str, np.ndarray] = {}
        self.source: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        return self.source

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        try:
            import sklearn.cluster  # noqa: F401 - checked here so a missing install is a clear reason
        except ImportError as exc:
            raise ScorerUnavailable(f"scikit-learn is not installed ({exc})") from None
        self.note_people(
            instances, "semantic_tvd_human_halves and semantic_tvd_model_half (random halves of the people)"
        )
        words: dict[str, None] = {}
        for instance, response in zip(instances, responses, strict=True):
            words.update(dict.fromkeys(self.cloze(instance).human_counts))
            if response is not None:
                words.update(dict.fromkeys(self.model_counts(response)))
        if self.args["vectors"]:
            path = Path(self.args["vectors"]).expanduser()
            self.embeddings = read_word_vectors(path, words)
            self.source = {"vectors": str(path), "words_found": len(self.embeddings), "words": len(words)}
            return
        probe = EmbeddingProbe(model=self.args["model"])
        try:
            vectors = probe.vectors(list(words), "en")
        except ProbeUnavailable as exc:
            raise ScorerUnavailable(str(exc)) from None
        self.embeddings = dict(zip(words, vectors, strict=True))
        self.source = {**probe.describe(), "words": len(words)}

    def cluster_of(self, words: list[str]) -> dict[str, str]:
        """Each word's group: a k-means cluster label, or the no-embedding group."""
        known = sorted(w for w in words if w in self.embeddings)
        groups = {w: NO_EMBEDDING for w in words if w not in self.embeddings}
        if len(known) < 2:
            return {}
        x = np.stack([self.embeddings[w] for w in known])
        sd = x.std(axis=0)
        x = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        labels = choose_clusters(x, self.args["seed"], self.args["rel_change"])
        groups.update({w: f"c{int(label)}" for w, label in zip(known, labels, strict=True)})
        return groups

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        cloze = self.cloze(instance)
        model = self.model_counts(response) if response is not None else {}
        # Proportions cannot be split into halves of people: no control for such an instance (never invented).
        splits = human_splits(cloze.human_counts, self.args["n_splits"], rng) if counts_known(cloze) else []
        groups = self.cluster_of(sorted(set(cloze.human_counts) | set(model)))
        if not groups:
            return {"semantic_clusters": None}
        human = counts_by_group(cloze.human_counts, groups)
        halves = [(counts_by_group(a, groups), counts_by_group(b, groups)) for a, b in splits if a and b]
        row: dict[str, Any] = {
            "semantic_clusters": len(set(groups.values())),
            "semantic_tvd_human_halves": float(np.mean([counts_tvd(a, b) for a, b in halves])) if halves else None,
        }
        if response is not None:
            own = counts_by_group(model, groups)
            row["semantic_tvd"] = counts_tvd(own, human) if own else EMPTY_MODEL_TVD
            row["semantic_tvd_model_half"] = (
                float(np.mean([counts_tvd(own, a) if own else EMPTY_MODEL_TVD for a, _ in halves])) if halves else None
            )
        return row

    def controls(self, metrics: Collection[str]) -> dict[str, str]:
        return {"semantic_tvd": "semantic_tvd_human_halves", "semantic_tvd_model_half": "semantic_tvd_human_halves"}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        keys = ("semantic_tvd", "semantic_tvd_model_half", "semantic_tvd_human_halves")
        return self.present_means(per_instance, keys, False, rng)

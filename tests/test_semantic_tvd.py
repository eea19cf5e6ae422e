"""``semantic_tvd``: the study's choice of k, clusters of word embeddings and TVD over them, on cases checked by
hand (embeddings given directly), a word-vectors file, and a finished mock run through ``harness score``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.instances import ClozeInstance
from harness.requests import SampleWordsResponse
from harness.scorers.semantic_tvd import (
    NO_EMBEDDING,
    SemanticTvdScorer,
    choose_clusters,
    read_word_vectors,
    within_cluster_error,
)
from tests.conftest import CliResult
from tests.helpers import rescored_mock_provo

VECTORS = {"sofa": [1.0, 0.0], "couch": [1.1, 0.1], "table": [-5.0, 3.0]}


def _instance(human: dict[str, int]) -> ClozeInstance:
    return ClozeInstance(id="t-1", context="She sat down on the", target="sofa", human_counts=human)


def _response(counts: dict[str, int]) -> SampleWordsResponse:
    return SampleWordsResponse(counts=counts, rejected={}, n_requested=sum(counts.values()))


def test_within_cluster_error_is_a_sum_of_distances() -> None:
    x = np.array([[0.0, 0.0], [3.0, 4.0], [10.0, 10.0]])
    centroids = np.array([[0.0, 0.0], [10.0, 10.0]])
    assert within_cluster_error(x, centroids, np.array([0, 0, 1])) == 5.0  # 0 + 5 + 0, not squared


def test_choice_of_k_for_few_words() -> None:
    assert sorted(choose_clusters(np.array([[0.0], [1.0]]), 0, 0.05)) == [0, 1]  # two words, two clusters
    labels = choose_clusters(np.array([[0.0], [0.1], [9.0]]), 0, 0.05)  # three words: only k = 2 is tried
    assert labels[0] == labels[1] != labels[2]


def test_synonyms_share_a_cluster() -> None:
    """Humans: sofa 2, table 2; model: couch 4. No word is shared (word TVD 1), but couch joins sofa's cluster:
    clusters {sofa, couch} and {table}, humans 0.5 / 0.5, model 1 / 0, TVD 0.5."""
    scorer = SemanticTvdScorer(n_splits=4)
    scorer.embeddings = {w: np.array(v) for w, v in VECTORS.items()}
    row = scorer.score(_instance({"sofa": 2, "table": 2}), _response({"couch": 4}), np.random.default_rng(0))
    assert row["semantic_clusters"] == 2
    assert row["semantic_tvd"] == 0.5
    assert 0.0 <= row["semantic_tvd_human_halves"] <= 1.0
    # Human-only: the control alone.
    row = scorer.score(_instance({"sofa": 2, "table": 2}), None, np.random.default_rng(0))
    assert "semantic_tvd" not in row and row["semantic_tvd_human_halves"] is not None


def test_words_without_an_embedding_share_a_group(tmp_path: Path) -> None:
    path = tmp_path / "vectors.txt"
    path.write_text("3 2\nsofa 1.0 0.0\ntable -5.0 3.0\nchair -4.0 3.5\n")
    assert set(read_word_vectors(path, ["sofa", "table", "couch"])) == {"sofa", "table"}
    scorer = SemanticTvdScorer(vectors=str(path), n_splits=2)
    instance, response = _instance({"sofa": 2, "table": 1, "chair": 1}), _response({"couch": 3, "sofa": 1})
    scorer.prepare([instance], [response])
    assert scorer.describe() == {"vectors": str(path), "words_found": 3, "words": 4}
    groups = scorer.cluster_of(["sofa", "table", "chair", "couch"])
    assert groups["couch"] == NO_EMBEDDING
    assert groups["table"] == groups["chair"] != groups["sofa"]
    row = scorer.score(instance, response, np.random.default_rng(0))
    # humans: sofa-cluster 2, table-cluster 2; model: no-embedding 3, sofa-cluster 1 -> TVD (0.25 + 0.5 + 0.75) / 2
    assert row["semantic_tvd"] == 0.75
    with pytest.raises(HarnessError, match=r"cannot read the word vectors"):
        read_word_vectors(tmp_path / "missing.txt", ["sofa"])


def test_one_embedded_word_has_no_value() -> None:
    scorer = SemanticTvdScorer()
    scorer.embeddings = {"sofa": np.array([1.0, 0.0])}
    assert scorer.score(_instance({"sofa": 3}), _response({"sofa": 2}), np.random.default_rng(0)) == {
        "semantic_clusters": None
    }


def test_rescoring_a_finished_run(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """The default embeddings (the packaged all-MiniLM-L6-v2) on a mock run: merging words into clusters can only
    bring the distributions closer, so per context semantic TVD <= word TVD."""
    results, scored = rescored_mock_provo(cli, tmp_path, 5, 50, "+semantic_tvd")
    metrics = results["metrics"]["provo"]
    assert {"semantic_tvd", "semantic_tvd_model_half", "semantic_tvd_human_halves"} <= set(metrics)
    assert results["controls"]["provo"]["semantic_tvd"] == "semantic_tvd_human_halves"
    (samples,) = scored.glob("samples_provo_*.jsonl")
    for line in samples.read_text().splitlines():
        values = json.loads(line)["metrics"]
        assert values["semantic_tvd"] <= values["tvd"] + 1e-12

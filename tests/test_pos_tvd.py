"""``pos_tvd`` (syntactic TVD): words tagged in their context with the packaged spaCy pipeline, distributions over
Universal POS compared by TVD, on hand-computed cases; and on a finished mock run through ``harness score``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness.instances import ClozeInstance
from harness.requests import SampleWordsResponse
from harness.scorers.cloze import human_splits
from harness.scorers.distributions import counts_tvd
from harness.scorers.pos_tvd import PosTvdScorer, package_list, tagged_text
from tests.conftest import CliResult
from tests.helpers import rescored_mock_provo

CONTEXT = "The cat sat on the"


def _instance(human: dict[str, int], context: str = CONTEXT) -> ClozeInstance:
    return ClozeInstance(id="t-1", context=context, target="mat", human_counts=human)


def _response(counts: dict[str, int]) -> SampleWordsResponse:
    return SampleWordsResponse(counts=counts, rejected={}, n_requested=sum(counts.values()))


def _prepared(instances: list[ClozeInstance], responses: list, **args: object) -> PosTvdScorer:
    scorer = PosTvdScorer(**args)
    scorer.prepare(list(instances), responses)
    return scorer


def test_tagged_text() -> None:
    assert tagged_text("The cat sat on the", "mat") == ("The cat sat on the mat", 19)
    assert tagged_text("The cat sat on the ", "mat") == ("The cat sat on the mat", 19)
    assert tagged_text("", "Once") == ("Once", 0)
    assert package_list("a;b c") == ("a", "b", "c")
    with pytest.raises(ValueError):
        package_list([])


def test_words_never_shared_but_half_the_syntax() -> None:
    """Humans: mat 3, floor 1 (NOUN), big 1 (ADJ); model: chair 5 (NOUN), quickly 5 (ADV). No word is shared, so the
    word TVD is 1; over POS: NOUN 0.8 vs 0.5, ADJ 0.2 vs 0, ADV 0 vs 0.5, so TVD = (0.3 + 0.2 + 0.5) / 2 = 0.5."""
    instance, response = _instance({"mat": 3, "floor": 1, "big": 1}), _response({"chair": 5, "quickly": 5})
    scorer = _prepared([instance], [response], n_splits=4)
    row = scorer.score(instance, response, np.random.default_rng(0))
    assert row["pos_human"] == {"ADJ": 1, "NOUN": 4}
    assert row["pos_model"] == {"ADV": 5, "NOUN": 5}
    assert counts_tvd(response.counts, instance.human_counts) == 1.0
    assert row["pos_tvd"] == 0.5
    # The control: the same splits the scorer drew, mapped to POS by hand (mat, floor NOUN; big ADJ).
    pos = {"mat": "NOUN", "floor": "NOUN", "big": "ADJ"}

    def by_pos(counts: dict[str, int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for word, count in counts.items():
            out[pos[word]] = out.get(pos[word], 0) + count
        return out

    splits = human_splits(instance.human_counts, 4, np.random.default_rng(0))
    halves = [counts_tvd(by_pos(a), by_pos(b)) for a, b in splits]
    model_half = [counts_tvd({"ADV": 5, "NOUN": 5}, by_pos(a)) for a, _ in splits]
    assert row["pos_tvd_human_halves"] == pytest.approx(float(np.mean(halves)), abs=1e-12)
    assert row["pos_tvd_model_half"] == pytest.approx(float(np.mean(model_half)), abs=1e-12)


def test_context_decides_the_tag() -> None:
    """The same word is tagged in the context it was produced for: 'closed' after 'streets still' is a verb, and
    humans who all give nouns agree with each other completely (control 0)."""
    streets = _instance({"closed": 2, "blocked": 2}, "With schools still closed, cars still buried and streets still")
    mat = _instance({"mat": 2, "floor": 2})
    scorer = _prepared([streets, mat], [_response({"closed": 4}), _response({"mat": 1, "big": 1})], n_splits=3)
    row = scorer.score(streets, _response({"closed": 4}), np.random.default_rng(1))
    assert row["pos_model"] == {"VERB": 4} and row["pos_tvd"] == 0.0
    row = scorer.score(mat, _response({"mat": 1, "big": 1}), np.random.default_rng(1))
    assert row["pos_tvd_human_halves"] == 0.0
    assert row["pos_tvd"] == 0.5  # NOUN 1 vs 0.5, ADJ 0 vs 0.5


def test_empty_model_and_human_only() -> None:
    instance = _instance({"mat": 2})
    scorer = _prepared([instance, instance], [_response({}), None])
    assert scorer.score(instance, _response({}), np.random.default_rng(0))["pos_tvd"] == 1.0
    row = scorer.score(instance, None, np.random.default_rng(0))
    assert "pos_tvd" not in row and row["pos_tvd_human_halves"] == 0.0
    metrics = scorer.aggregate([row], np.random.default_rng(0))
    assert set(metrics) == {"pos_tvd_human_halves"}


def test_no_tagger_makes_the_scorer_unavailable() -> None:
    from harness.scoring.base import ScorerUnavailable

    scorer = PosTvdScorer(pipelines="no_such_pipeline_xyz")
    with pytest.raises(ScorerUnavailable, match=r"no POS tagger: tried no_such_pipeline_xyz"):
        scorer.prepare([_instance({"mat": 1})], [None])


def test_rescoring_a_finished_run(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    results, _ = rescored_mock_provo(cli, tmp_path, 5, 50, "+pos_tvd")
    metrics = results["metrics"]["provo"]
    assert {"pos_tvd", "pos_tvd_model_half", "pos_tvd_human_halves"} <= set(metrics)
    assert 0.0 <= metrics["pos_tvd"]["value"] <= metrics["tvd"]["value"]  # tags merge words: never further apart
    assert results["controls"]["provo"]["pos_tvd"] == "pos_tvd_human_halves"
    assert results["scorers"]["provo"]["pos_tvd"]["pipeline"].startswith("en_core_web_sm")

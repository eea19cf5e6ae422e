"""The variability comparison (H, M, C, W1, D_mu, both human controls) on distances checked by hand.

A stub probe makes the distance between two texts ``|x - y|`` for texts that are numbers, so every distance set
below can be written out by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.instances import GenerationInstance
from harness.options import Option, Options, optional, text
from harness.requests import GenerateResponse
from harness.scorers.probes.base import Probe, ProbeUnavailable
from harness.scorers.variability import (
    VARIABILITY_OPTIONS,
    LexicalScorer,
    SemanticScorer,
    SyntacticScorer,
    VariabilityScorer,
    control_halves,
    mean_gap,
    paper_halves,
    split_control,
    upper_pairs,
    w1,
)
from harness.scoring.base import ScorerUnavailable
from harness.seeding import derive_rng


class AbsProbe(Probe):
    name = "abs"
    options: ClassVar[Options] = Options(Option("unavailable", optional(text), None, "a language it cannot do"))

    def __init__(self, unavailable: str | None = None) -> None:
        self.prepared: list[tuple[list[str], str]] = []
        self.unavailable = unavailable

    @property
    def measures(self) -> tuple[str, ...]:
        return ("abs",)

    def prepare(self, texts: Sequence[str], language: str) -> None:
        if self.unavailable and language == self.unavailable:
            raise ProbeUnavailable(f"no tagger for {language}")
        self.prepared.append((list(texts), language))

    def distances(self, a: Sequence[str], b: Sequence[str], language: str) -> dict[str, np.ndarray]:
        x = np.array([float(t) for t in a])
        y = np.array([float(t) for t in b])
        return {"abs": np.abs(x[:, None] - y[None, :])}


class AbsScorer(VariabilityScorer):
    name: ClassVar[str] = "abs"
    options: ClassVar[Options] = AbsProbe.options

    @classmethod
    def make_probe(cls, **args: Any) -> Probe:
        return AbsProbe(**args)


def _instance(refs: list[str], language: str = "en", id: str = "0") -> GenerationInstance:
    return GenerationInstance(id=id, source="s", references=tuple(refs), language=language)


def _response(texts: list[str]) -> GenerateResponse:
    return GenerateResponse(texts=texts, finish_reasons=["eos"] * len(texts), n_tokens=[1] * len(texts))


def test_upper_pairs_are_the_unordered_pairs_row_by_row() -> None:
    m = np.array([[0, 1, 2], [1, 0, 3], [2, 3, 0]], dtype=float)
    assert upper_pairs(m).tolist() == [1.0, 2.0, 3.0]


def test_w1_and_mean_gap_on_known_distributions() -> None:
    # Uniform on {0, 1} against a point mass at 0.5: every unit of mass moves 0.5.
    assert w1(np.array([0.0, 1.0]), np.array([0.5])) == pytest.approx(0.5)
    # A shift by 0.2 costs 0.2.
    assert w1(np.array([0.0, 0.2]), np.array([0.2, 0.4])) == pytest.approx(0.2)
    assert w1(np.array([]), np.array([1.0])) is None
    assert mean_gap(np.array([0.5, 0.7]), np.array([0.2])) == pytest.approx(0.4)
    assert mean_gap(np.array([0.1]), np.array([0.2, 0.4])) == pytest.approx(-0.2)


def test_scorer_values_by_hand() -> None:
    scorer = AbsScorer(min_half=1, n_splits=4)
    inst = _instance(["0", "1", "3"])
    values = scorer.score(inst, _response(["0", "2"]), np.random.default_rng(0))
    # H = {|0-1|, |0-3|, |1-3|} = {1, 3, 2}; M = {|0-2|} = {2}; C = {0, 1, 3, 2, 1, 1}.
    assert values["abs_h_mean"] == pytest.approx(2.0)
    assert values["abs_m_mean"] == pytest.approx(2.0)
    assert values["abs_c_mean"] == pytest.approx(8 / 6)
    assert values["abs_dmu_mh"] == pytest.approx(0.0)
    assert values["abs_dmu_ch"] == pytest.approx(8 / 6 - 2)
    # W1({2}, {1, 2, 3}) = (1 + 0 + 1) / 3.
    assert values["abs_w1_mh"] == pytest.approx(2 / 3)
    # Sorted C = 0 1 1 1 2 3 against H's quantiles 1 1 2 2 3 3 (sixths): (1+0+1+1+1+0)/6.
    assert values["abs_w1_ch"] == pytest.approx(4 / 6)
    assert values["abs_distances"] == {"H": [1.0, 3.0, 2.0], "M": [2.0], "C": [0.0, 1.0, 3.0, 2.0, 1.0, 1.0]}


def test_paper_variant_resamples_with_seed_42_per_input() -> None:
    h = np.array([1.0, 3.0, 2.0, 5.0])
    h1, h2 = paper_halves(h)
    expected = np.random.default_rng(42).choice(h, size=4, replace=True)[:2]
    assert h1.tolist() == expected.tolist()
    assert h2.tolist() == [1.0, 3.0]  # the first half of H, unshuffled
    again1, _ = paper_halves(h)
    assert again1.tolist() == h1.tolist()  # re-seeded: the same draw for every call

    scorer = AbsScorer(min_half=1)
    values = scorer.score(_instance(["0", "1", "3", "8"]), _response(["0", "2"]), np.random.default_rng(0))
    h_all = np.array([1.0, 3.0, 8.0, 2.0, 7.0, 5.0])
    p1, p2 = paper_halves(h_all)
    assert values["abs_paper_control_w1"] == pytest.approx(w1(p1, p2))
    assert values["abs_paper_w1_mh"] == pytest.approx(w1(np.array([2.0]), p1))


def test_control_halves_are_disjoint_cover_and_seeded() -> None:
    splits = control_halves(7, np.random.default_rng(3), 20)
    assert len(splits) == 20
    for a, b in splits:
        assert len(a) == 3 and len(b) == 4
        assert set(a.tolist()).isdisjoint(b.tolist())
        assert set(a.tolist()) | set(b.tolist()) == set(range(7))
    again = control_halves(7, np.random.default_rng(3), 20)
    assert all((a1 == a2).all() and (b1 == b2).all() for (a1, b1), (a2, b2) in zip(splits, again, strict=True))
    assert len({tuple(a.tolist()) for a, _ in splits}) > 1  # splits differ from each other


def test_split_control_by_hand() -> None:
    # All references equally far apart: any two halves look alike, so every control value is exactly 0.
    constant = np.full((6, 6), 0.4)
    np.fill_diagonal(constant, 0)
    out = split_control(constant, np.random.default_rng(0), 5, 3)
    assert out["control_w1"] == 0.0 and out["control_dmu"] == 0.0 and out["control_w1_cross"] == 0.0
    assert len(out["control_w1_splits"]) == 5

    # References 0, 1, 2, 3 in halves of two: each half has one pair, so W1 is the gap between the two pairs'
    # distances, and the cross W1 the mean gap between the 4 cross distances and H_B's single value.
    x = np.array([0.0, 1.0, 2.0, 3.0])
    matrix = np.abs(x[:, None] - x[None, :])

    rng = np.random.default_rng(0)
    a, b = control_halves(4, np.random.default_rng(0), 1)[0]
    out = split_control(matrix, rng, 1, 2)
    h_a = upper_pairs(matrix[np.ix_(a, a)])
    h_b = upper_pairs(matrix[np.ix_(b, b)])
    cross = matrix[np.ix_(a, b)].ravel()
    assert out["control_w1"] == pytest.approx(abs(h_a[0] - h_b[0]))
    assert out["control_w1_cross"] == pytest.approx(np.mean(np.abs(np.sort(cross) - h_b[0])))
    # Too few references for halves of min_half: no control at all, rather than one on 1-2 items.
    assert split_control(matrix, np.random.default_rng(0), 3, 3) == {}


def test_human_only_rows_and_rng_use_match_model_rows() -> None:
    scorer = AbsScorer(min_half=2, n_splits=3)
    inst = _instance(["0", "1", "3", "4", "6"])
    human = scorer.score(inst, None, derive_rng(0, "t", "abs", "0"))
    model = scorer.score(inst, _response(["1", "2", "5"]), derive_rng(0, "t", "abs", "0"))
    assert "abs_w1_mh" not in human and "abs_m_mean" not in human
    for key in ("abs_h_mean", "abs_control_w1", "abs_control_w1_cross", "abs_paper_control_w1"):
        assert human[key] == model[key]


def test_aggregate_means_spread_and_notes() -> None:
    scorer = AbsScorer(min_half=2, n_splits=3, n_resamples=200)
    rows = [
        scorer.score(
            _instance(["0", "1", "3", "4", str(k)], id=str(k)), _response(["1", "2"]), np.random.default_rng(k)
        )
        for k in range(5)
    ]
    metrics = scorer.aggregate(rows, np.random.default_rng(0))
    assert metrics["abs_w1_mh"].value == pytest.approx(np.mean([r["abs_w1_mh"] for r in rows]))
    assert metrics["abs_w1_mh"].higher_is_better is False
    assert metrics["abs_dmu_ch"].higher_is_better is None
    control = metrics["abs_control_w1"]
    assert control.value == pytest.approx(np.mean([r["abs_control_w1"] for r in rows]))
    per_split = np.mean([r["abs_control_w1_splits"] for r in rows], axis=0)
    assert control.spread == pytest.approx(float(np.std(per_split, ddof=1)))
    assert "control" not in scorer.notes

    few = AbsScorer(min_half=3, paper_control=False)
    rows = [few.score(_instance(["0", "1", "3", "4", "6"]), _response(["1", "2"]), np.random.default_rng(0))]
    metrics = few.aggregate(rows, np.random.default_rng(0))
    assert "abs_control_w1" not in metrics and "abs_paper_control_w1" not in metrics
    assert "abs_paper_w1_mh" in metrics
    assert "6 references" in few.notes["control"]
    assert "paper_control" in few.notes


def test_prepare_batches_distinct_texts_per_language_and_reports_unavailable() -> None:
    scorer = AbsScorer()
    insts = [_instance(["1", "2"], "en", "a"), _instance(["2", "3"], "en", "b"), _instance(["4"], "de", "c")]
    scorer.prepare(insts, [_response(["1", "9"]), None, None])
    probe = scorer.probe
    assert isinstance(probe, AbsProbe)
    # References first and on their own (as in a human-only run), then the model's outputs.
    assert probe.prepared == [(["4"], "de"), (["1", "2", "3"], "en"), (["1", "9"], "en")]

    unavailable = AbsScorer(unavailable="de")
    with pytest.raises(ScorerUnavailable, match="no tagger for de"):
        unavailable.prepare(insts, [None, None, None])


def test_bad_arguments_name_the_argument() -> None:
    with pytest.raises(HarnessError, match="scorer 'abs': argument 'n_splits': expected a positive integer, got 0"):
        AbsScorer(n_splits=0)
    with pytest.raises(HarnessError, match="scorer 'abs': argument 'paper_control': expected true or false"):
        AbsScorer(paper_control="maybe")
    # The probe's arguments are checked with the common ones: a typo names the scorer and lists both kinds.
    with pytest.raises(
        HarnessError,
        match=r"scorer 'abs': unknown argument 'unavailabel' \(accepted: confidence, keep_distances, min_half, "
        r"n_resamples, n_splits, paper_control, unavailable, undefined\)",
    ):
        AbsScorer(unavailabel="de")
    with pytest.raises(HarnessError, match="scorer 'lexical': argument 'n': n must be a positive integer"):
        LexicalScorer(n=0)
    with pytest.raises(HarnessError, match="scorer 'semantic': unknown argument 'max_token' .*max_tokens"):
        SemanticScorer(max_token=5)


def test_each_scorer_lists_every_argument_it_accepts() -> None:
    common = ["n_resamples", "confidence", *VARIABILITY_OPTIONS.names()]
    lexical = [*common, "n", "pipelines", "max_tokens", "truncate_tokenizer", "batch_size"]
    assert LexicalScorer.options.names() == SyntacticScorer.options.names() == lexical
    semantic = [*common, "model", "batch_size", "device", "max_tokens", "truncate_tokenizer"]
    assert SemanticScorer.options.names() == semantic
    scorer = LexicalScorer(n=2, n_splits="4", keep_distances="no")
    assert (scorer.n_splits, scorer.keep_distances, scorer.probe.measures) == (4, False, ("bigram",))

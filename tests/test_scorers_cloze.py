"""The next-word scorers on hand-built instances, human-only mode, arguments, and the real Provo human data."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.instances import ClozeInstance
from harness.requests import SampleWordsResponse
from harness.scorers.calibration import expected_calibration_error
from harness.scorers.ece import EceScorer
from harness.scorers.entropy import EntropyScorer
from harness.scorers.human_control import HumanControlScorer
from harness.scorers.top1 import Top1Scorer
from harness.scorers.tvd import TvdScorer
from harness.scoring.base import Metric, Scorer
from harness.words.rules import normalise_word

SCORERS: list[type[Scorer]] = [TvdScorer, HumanControlScorer, EceScorer, Top1Scorer, EntropyScorer]
H_3_1 = 0.8112781244591328  # entropy in bits of (0.75, 0.25)

# Three positions with values worked out by hand below.
#   i1: target a, humans {a:2, b:2}, model {a:3, c:1} + 1 rejected.
#   i2: target x, humans {y:3, z:1}, model {y:1, x:1} (model tie -> "x").
#   i3: target q, humans {q:1, r:1}, the model produced no word (3 truncated samples).
INSTANCES = [
    ClozeInstance(id="i1", context="c1", target="a", human_counts={"a": 2, "b": 2}),
    ClozeInstance(id="i2", context="c2", target="x", human_counts={"y": 3, "z": 1}),
    ClozeInstance(id="i3", context="c3", target="q", human_counts={"q": 1, "r": 1}),
]
RESPONSES = [
    SampleWordsResponse(counts={"a": 3, "c": 1}, n_requested=5, rejected={"empty": 1}),
    SampleWordsResponse(counts={"y": 1, "x": 1}, n_requested=2),
    SampleWordsResponse(counts={}, n_requested=3, rejected={"truncated": 3}),
]


def run(scorer: Scorer, model: bool = True) -> tuple[list[dict[str, Any]], dict[str, Metric]]:
    rows = [
        scorer.score(inst, resp if model else None, np.random.default_rng(k))
        for k, (inst, resp) in enumerate(zip(INSTANCES, RESPONSES, strict=True))
    ]
    json.dumps(rows)  # per-instance values must be JSON-serialisable
    return rows, scorer.aggregate(rows, np.random.default_rng(99))


def test_registry_names_and_request_kinds() -> None:
    assert [cls.name for cls in SCORERS] == ["tvd", "human_control", "ece", "top1", "entropy"]
    assert all(cls.request_kinds == frozenset({"sample_words"}) for cls in SCORERS)


def test_tvd_scorer() -> None:
    rows, metrics = run(TvdScorer())
    # i1: 0.5 * (|.75-.5| + |0-.5| + |.25-0|) = 0.5; i2: 0.5 * (|.5-.75| + |.5-0| + |0-.25|) = 0.5; i3: empty -> 1.0
    assert [r["tvd"] for r in rows] == pytest.approx([0.5, 0.5, 1.0])
    assert [r["reject_rate"] for r in rows] == pytest.approx([0.2, 0.0, 1.0])
    assert [r["no_model_words"] for r in rows] == [False, False, True]
    assert metrics["tvd"].value == pytest.approx(2 / 3)
    assert metrics["tvd"].higher_is_better is False
    assert metrics["tvd"].n == 3
    assert metrics["model_reject_rate"].value == pytest.approx(0.4)
    assert metrics["n_no_model_words"].value == 1.0


def test_top1_scorer() -> None:
    rows, metrics = run(Top1Scorer())
    assert [r["human_top_word"] for r in rows] == ["a", "y", "q"]  # ties a/b and q/r go to the smaller word
    assert [r["model_top_word"] for r in rows] == ["a", "x", None]
    assert metrics["top1_model"].value == pytest.approx(2 / 3)  # [1, 1, 0]
    assert metrics["top1_model_samples"].value == pytest.approx((0.75 + 0.5 + 0.0) / 3)
    assert metrics["top1_human_guess"].value == pytest.approx((0.5 + 0.0 + 0.5) / 3)
    assert metrics["top1_human_majority"].value == pytest.approx(2 / 3)  # [1, 0, 1]
    assert all(metrics[k].higher_is_better is True for k in metrics)


def test_entropy_scorer() -> None:
    rows, metrics = run(EntropyScorer())
    assert [r["entropy_human"] for r in rows] == pytest.approx([1.0, H_3_1, 1.0])
    assert rows[0]["entropy_model"] == pytest.approx(H_3_1)
    assert rows[1]["entropy_model"] == pytest.approx(1.0)
    assert rows[2]["entropy_model"] is None
    assert metrics["entropy_model"].value == pytest.approx((H_3_1 + 1.0) / 2)
    assert metrics["entropy_model"].n == 2  # the instance without a model word is left out
    assert metrics["entropy_human"].value == pytest.approx((1.0 + H_3_1 + 1.0) / 3)
    assert metrics["entropy_human"].higher_is_better is None


def test_ece_scorer_single_gold_sets() -> None:
    rows, metrics = run(EceScorer())
    assert [(r["pred_model"], r["conf_model"]) for r in rows] == [("a", 0.75), ("x", 0.5), (None, 0.0)]
    assert [(r["pred_human"], r["conf_human"]) for r in rows] == [("a", 0.5), ("y", 0.75), ("q", 0.5)]
    assert [r["gold_majority"] for r in rows] == [["a", "b"], ["y"], ["q", "r"]]
    # Model vs corpus: conf [.75, .5, 0], correct [1, 1, 0] in bins 7, 5, 0 -> (.25 + .5 + 0) / 3
    assert metrics["ece_model_corpus"].value == pytest.approx(0.25)
    assert metrics["acc_model_corpus"].value == pytest.approx(2 / 3)
    # Model vs majority: correct [1, 0, 0] -> (.25 + .5 + 0) / 3
    assert metrics["ece_model_majority"].value == pytest.approx(0.25)
    assert metrics["acc_model_majority"].value == pytest.approx(1 / 3)
    assert metrics["conf_model"].value == pytest.approx(1.25 / 3)
    # Humans vs corpus: conf [.5, .75, .5], correct [1, 0, 1]: bin 5 |2 - 1.0|, bin 7 |0 - .75| -> 1.75 / 3
    assert metrics["ece_human_corpus"].value == pytest.approx(1.75 / 3)
    # Humans vs majority: always correct: bin 5 |2 - 1.0|, bin 7 |1 - .75| -> 1.25 / 3
    assert metrics["ece_human_majority"].value == pytest.approx(1.25 / 3)
    assert metrics["acc_human_majority"].value == 1.0
    assert metrics["conf_human"].value == pytest.approx(1.75 / 3)
    assert metrics["ece_model_corpus"].higher_is_better is False
    assert metrics["acc_model_corpus"].higher_is_better is True
    assert metrics["conf_model"].higher_is_better is None


def test_ece_split_metrics_are_recomputable_from_the_per_instance_flags() -> None:
    scorer = EceScorer(n_splits=4)
    rows, metrics = run(scorer)
    for who in ("model", "human", "oracle"):
        conf = np.array([r[f"conf_{who}"] for r in rows], dtype=float)
        if conf.ndim == 1:
            conf = np.repeat(conf[:, None], 4, axis=1)
        for gold in ("heldout",) if who != "oracle" else ("corpus", "majority", "heldout"):
            correct = np.array([r[f"correct_{who}_{gold}"] for r in rows], dtype=float)
            per_split = [expected_calibration_error(conf[:, s], correct[:, s]) for s in range(4)]
            m = metrics[f"ece_{who}_{gold}"]
            assert m.value == pytest.approx(np.mean(per_split))
            assert m.spread == pytest.approx(np.std(per_split, ddof=1))
            assert metrics[f"acc_{who}_{gold}"].value == pytest.approx(correct.mean())
    assert all(len(r["pred_oracle"]) == 4 for r in rows)


def test_unanimous_humans_make_split_metrics_deterministic() -> None:
    # Every split of {a:4} is {a:2} | {a:2}, of {b:6} is {b:3} | {b:3}.
    instances = [
        ClozeInstance(id="u1", target="a", human_counts={"a": 4}),
        ClozeInstance(id="u2", target="c", human_counts={"b": 6}),
    ]
    response = SampleWordsResponse(counts={"a": 1, "b": 1}, n_requested=2)
    control, ece = HumanControlScorer(n_splits=3), EceScorer(n_splits=3)
    c_rows = [control.score(i, response, np.random.default_rng(k)) for k, i in enumerate(instances)]
    e_rows = [ece.score(i, response, np.random.default_rng(k)) for k, i in enumerate(instances)]
    assert [r["half_sizes"] for r in c_rows] == [[2, 2], [3, 3]]
    c = control.aggregate(c_rows, np.random.default_rng(0))
    assert (c["tvd_human_halves"].value, c["tvd_human_halves"].spread) == (0.0, 0.0)
    # TVD({a:.5, b:.5}, {a:1}) = 0.5, and the same for {b:1}
    assert (c["tvd_model_half"].value, c["tvd_model_half"].spread) == (0.5, 0.0)
    # Subsamples of |B| = 2 (u1) or all 2 samples (u2, |B| = 3 > 2) of {a:1, b:1} are {a:1, b:1}: again 0.5
    assert (c["tvd_model_sub_half"].value, c["tvd_model_sub_half"].spread) == (0.5, 0.0)
    e = ece.aggregate(e_rows, np.random.default_rng(0))
    # Oracle: conf 1.0, corpus-correct [1, 0] -> bin 9 |1 - 2| / 2 = 0.5; held-out majority always right -> 0
    assert e["ece_oracle_corpus"].value == pytest.approx(0.5)
    assert e["ece_oracle_heldout"].value == 0.0
    assert e["acc_oracle_heldout"].value == 1.0
    # Model predicts "a" (tie) at 0.5: held-out correct [1, 0] -> bin 5 |1 - 1.0| = 0, acc 0.5 at conf 0.5
    assert e["ece_model_heldout"].value == 0.0
    assert e["acc_model_heldout"].value == 0.5
    assert e["conf_oracle"].value == 1.0


def test_human_control_aggregate_is_mean_over_splits_with_spread() -> None:
    scorer = HumanControlScorer(n_splits=5)
    instances = [
        ClozeInstance(id=f"h{k}", target="a", human_counts={"a": 5 + k, "b": 4, "c": 3, "d": 1}) for k in range(4)
    ]
    rows = [scorer.score(i, RESPONSES[0], np.random.default_rng(k)) for k, i in enumerate(instances)]
    metrics = scorer.aggregate(rows, np.random.default_rng(0))
    for key in ("tvd_human_halves", "tvd_model_half", "tvd_model_sub_half"):
        table = np.array([r[key] for r in rows])
        assert table.shape == (4, 5)
        assert [r[f"{key}_mean"] for r in rows] == pytest.approx(table.mean(axis=1))
        assert metrics[key].value == pytest.approx(table.mean(axis=0).mean())
        assert metrics[key].spread == pytest.approx(np.std(table.mean(axis=0), ddof=1))
        assert metrics[key].higher_is_better is False
        assert metrics[key].n == 4


HUMAN_KEYS = {
    "tvd": set(),
    "human_control": {"tvd_human_halves", "tvd_human_halves_mean", "half_sizes"},
    "ece": {
        "gold_majority",
        "gold_heldout",
        "pred_human",
        "conf_human",
        "correct_human_corpus",
        "correct_human_majority",
        "correct_human_heldout",
        "pred_oracle",
        "conf_oracle",
        "correct_oracle_corpus",
        "correct_oracle_majority",
        "correct_oracle_heldout",
    },
    "top1": {"human_top_word", "top1_human_guess", "top1_human_majority"},
    "entropy": {"entropy_human"},
}
HUMAN_METRICS = {
    "tvd": set(),
    "human_control": {"tvd_human_halves"},
    "ece": {
        f"{kind}_{who}_{gold}"
        for kind in ("ece", "acc")
        for who in ("human", "oracle")
        for gold in ("corpus", "majority", "heldout")
    }
    | {"conf_human", "conf_oracle"},
    "top1": {"top1_human_guess", "top1_human_majority"},
    "entropy": {"entropy_human"},
}


@pytest.mark.parametrize("cls", SCORERS)
def test_human_only_mode_returns_only_human_values(cls: type[Scorer]) -> None:
    human_rows, human_metrics = run(cls(), model=False)
    assert all(set(r) == HUMAN_KEYS[cls.name] for r in human_rows)
    assert set(human_metrics) == HUMAN_METRICS[cls.name]
    # The same human values and metrics (CIs included) come out of a model run.
    model_rows, model_metrics = run(cls(), model=True)
    for h, m in zip(human_rows, model_rows, strict=True):
        assert {k: m[k] for k in h} == h
    assert {k: model_metrics[k] for k in human_metrics} == human_metrics


def test_value_and_metric_names_do_not_clash_across_scorers() -> None:
    keys: list[str] = []
    names: list[str] = []
    for cls in SCORERS:
        rows, metrics = run(cls())
        keys += list(rows[0])
        names += list(metrics)
    assert len(keys) == len(set(keys))
    assert len(names) == len(set(names))


def test_stored_response_records_are_accepted() -> None:
    scorer = TvdScorer()
    record = RESPONSES[0].to_record()
    rng = np.random.default_rng(0)
    assert scorer.score(INSTANCES[0], record, rng) == scorer.score(INSTANCES[0], RESPONSES[0], rng)


def test_fewer_than_two_human_guesses_are_left_out_of_split_metrics() -> None:
    inst = ClozeInstance(id="one", target="a", human_counts={"a": 1})
    row = HumanControlScorer().score(inst, RESPONSES[0], np.random.default_rng(0))
    assert row["tvd_human_halves"] is None and row["tvd_model_half"] is None
    ece_row = EceScorer().score(inst, RESPONSES[0], np.random.default_rng(0))
    assert ece_row["conf_oracle"] is None and ece_row["correct_model_heldout"] is None
    assert ece_row["correct_model_corpus"] is True


def test_arguments_are_validated() -> None:
    assert EceScorer(n_bins="15", n_splits=3).n_bins == 15  # --task-args may hand over strings
    assert HumanControlScorer().n_splits == 10
    assert EceScorer().args == {
        "n_resamples": 1000,
        "confidence": 0.95,
        "n_bins": 10,
        "n_splits": 10,
        "variant": "default",
        "n_oracle_seeds": 20,
    }
    with pytest.raises(HarnessError, match="human_control.*n_splits"):
        HumanControlScorer(n_splits=0)
    with pytest.raises(HarnessError, match="ece.*n_bins"):
        EceScorer(n_bins=True)
    with pytest.raises(HarnessError, match="ece.*n_bins"):
        EceScorer(n_bins=2.5)
    with pytest.raises(HarnessError, match="tvd.*n_splits"):
        TvdScorer(n_splits=3)
    with pytest.raises(HarnessError, match="top1.*confidence"):
        Top1Scorer(confidence=1.5)
    accepted = "confidence, n_bins, n_oracle_seeds, n_resamples, n_splits, variant"
    with pytest.raises(HarnessError, match=rf"^scorer 'ece': unknown argument 'x' \(accepted: {accepted}\)$"):
        EceScorer(x=1)
    with pytest.raises(HarnessError, match=r"^scorer 'ece': argument 'n_bins': expected a positive integer, got 0$"):
        EceScorer(n_bins=0)
    # Each class lists everything it accepts: the bootstrap options, then its own.
    assert EceScorer.options.names() == ["n_resamples", "confidence", "n_bins", "n_splits", "variant", "n_oracle_seeds"]
    assert TvdScorer.options.names() == ["n_resamples", "confidence"]


def test_wrong_input_types_are_harness_errors() -> None:
    from harness.instances import Instance

    with pytest.raises(HarnessError, match="cloze"):
        TvdScorer().score(Instance(id="x"), None, np.random.default_rng(0))
    with pytest.raises(HarnessError, match="no human guesses"):
        TvdScorer().score(ClozeInstance(id="x", target="a"), None, np.random.default_rng(0))
    with pytest.raises(HarnessError, match="sample_words"):
        TvdScorer().score(INSTANCES[0], "not a response", np.random.default_rng(0))


def _provo_positions() -> Path:
    root = Path(os.environ.get("HARNESS_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
    return root / "provo" / "provo_positions.jsonl"


@pytest.mark.skipif(not _provo_positions().is_file(), reason="Provo data not available")
def test_sanity_on_real_provo_human_data() -> None:
    with _provo_positions().open(encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    instances = [
        ClozeInstance(
            id=f"{r['text_id']}-{r['word_num']}",
            context=r["context"],
            target=normalise_word(r["target_word"]),
            human_counts={str(w): int(c) for w, c in r["human_responses"].items()},
        )
        for r in records
    ]
    assert len(instances) > 2000
    results: dict[str, Metric] = {}
    for scorer in (Top1Scorer(n_resamples=50), HumanControlScorer(n_splits=2, n_resamples=50)):
        rows = [scorer.score(inst, None, np.random.default_rng(k)) for k, inst in enumerate(instances)]
        results.update(scorer.aggregate(rows, np.random.default_rng(0)))
    # About a fifth of individual guesses name the corpus word, the humans' top guess about a third of the time.
    assert 0.10 < results["top1_human_guess"].value < 0.35
    assert 0.20 < results["top1_human_majority"].value < 0.45
    assert results["top1_human_guess"].value < results["top1_human_majority"].value
    # Two halves of ~20 guesses disagree substantially but far from completely.
    assert 0.25 < results["tvd_human_halves"].value < 0.60
    ci_low, ci_high = results["tvd_human_halves"].ci_low, results["tvd_human_halves"].ci_high
    assert ci_low is not None and ci_high is not None and ci_high - ci_low < 0.05

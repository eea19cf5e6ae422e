"""``variant=paper`` of the ``ece`` and ``human_control`` scorers: the original study's conventions, hand-checked.

Each convention (``scorers/paper_provo.py``, docs/metrics.md "Paper-faithful variants") is checked on small
hand-made positions against values worked out in the comments, and against a line-for-line transcription of the
original code where one exists (``calculate_ECE``, ``sample_oracle_without_replacement_disjoint_groups``).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.instances import ClozeInstance
from harness.requests import SampleWordsResponse
from harness.scorers.ece import EceScorer
from harness.scorers.human_control import HumanControlScorer
from harness.scorers.paper_provo import (
    bin_edges,
    expand_responses,
    first_argmax,
    oracle_split,
    oracle_subsets,
    paper_confidence,
    paper_ece_columns,
    population_std,
)
from harness.scoring.base import Metric, Scorer

F32_07 = float(np.float32(0.7))  # 0.699999988079071
F32_065 = float(np.float32(0.65))  # 0.6499999761581421
RNG = np.random.default_rng(0)  # the paper variant draws nothing from it


def run(
    scorer: Scorer, instances: Sequence[ClozeInstance], responses: Sequence[SampleWordsResponse | None]
) -> tuple[list[dict[str, Any]], dict[str, Metric]]:
    rows = [
        scorer.score(inst, resp, np.random.default_rng(k))
        for k, (inst, resp) in enumerate(zip(instances, responses, strict=True))
    ]
    json.dumps(rows)  # per-instance values must be JSON-serialisable
    return rows, scorer.aggregate(rows, np.random.default_rng(99))


def original_calculate_ece(conf_acc: list[tuple[float, int]], bins: int = 10) -> float:
    """The original's ``calculate_ECE``, transcribed (``bins`` for its ``ece_bins``)."""
    conf_acc_array = np.array(conf_acc)
    n = conf_acc_array.shape[0]
    sum_bin = 0.0
    for i in np.arange(0, 1, 1 / bins):
        bin_contents = conf_acc_array[np.where((conf_acc_array[:, 0] >= i) & (conf_acc_array[:, 0] < (i + 1 / bins)))]
        n_bin = bin_contents[:, 0].shape[0]
        if n_bin > 0:
            avg_conf = np.sum(bin_contents[:, 0]) / n_bin
            acc = np.sum(bin_contents[:, 1]) / n_bin
            sum_bin = sum_bin + abs(avg_conf - acc) * n_bin / n
    return float(sum_bin)


def original_split(words: list[str], seed: int, n: int = 20) -> tuple[list[str], list[str]]:
    """The original's ``sample_oracle_without_replacement_disjoint_groups``, on the global generator."""
    random.seed(seed)
    if len(words) % 2 == 1:
        remove_word = random.sample(words, 1)
        words.remove(remove_word[0])
    subset1 = random.sample(words, n)
    subset2 = words.copy()
    for item in subset1:
        subset2.remove(item)
    return subset1, subset2


# --- (1) a confidence of exactly 1.0 is in no bin, but counts in N -------------------------------------------------


def test_confidence_one_is_in_no_bin_but_counts_in_n() -> None:
    # p1: the model says "a" with confidence 1.0 (5 of 5), the corpus word is "z": wrong.
    # p2: the model says "b" with confidence 0.75 (3 of 4), the corpus word is "c": wrong.
    instances = [
        ClozeInstance(id="p1", target="z", target_raw="z", human_counts={"a": 3, "z": 1}),
        ClozeInstance(id="p2", target="c", target_raw="c", human_counts={"c": 2, "b": 2}),
    ]
    responses = [
        SampleWordsResponse(counts={"a": 5}, n_requested=5),
        SampleWordsResponse(counts={"b": 3, "c": 1}, n_requested=4),
    ]
    rows, paper = run(EceScorer(variant="paper"), instances, responses)
    assert [(r["pred_model"], r["conf_model"]) for r in rows] == [("a", 1.0), ("b", 0.75)]
    # Paper: 1.0 is in no bin; bin [0.7, 0.8) holds p2: |0.75 - 0| * 1 / N, with N = 2 -> 0.375.
    assert paper["ece_model_corpus"].value == 0.375
    assert paper["ece_model_corpus"].n == 2
    # Default: the last bin is closed, [0.9, 1.0] holds p1: (|1.0 - 0| + |0.75 - 0|) / 2 = 0.875.
    _, default = run(EceScorer(), instances, responses)
    assert default["ece_model_corpus"].value == 0.875
    # The same through the pure function and the original's transcription.
    assert paper_ece_columns([1.0, 0.75], [False, False])[0] == 0.375
    assert original_calculate_ece([(1.0, 0), (0.75, 0)]) == 0.375
    # Only predictions at 1.0: every bin is empty and the ECE is 0, however wrong they are.
    assert paper_ece_columns([1.0, 1.0], [False, False])[0] == 0.0


# --- (2) float32 confidences: 28/40 = 0.7 falls in [0.6, 0.7) --------------------------------------------------------


def test_float32_confidence_of_0_7_falls_one_bin_lower() -> None:
    # p1: model "w" 28 of 40 = 0.7, correct; p2: model "y" 13 of 20 = 0.65, wrong.
    instances = [
        ClozeInstance(id="p1", target="w", target_raw="w", human_counts={"w": 1}),
        ClozeInstance(id="p2", target="q", target_raw="q", human_counts={"q": 1}),
    ]
    responses = [
        SampleWordsResponse(counts={"w": 28, "x": 12}, n_requested=40),
        SampleWordsResponse(counts={"y": 13, "z": 7}, n_requested=20),
    ]
    rows, paper = run(EceScorer(variant="paper"), instances, responses)
    assert [r["conf_model"] for r in rows] == [F32_07, F32_065]
    assert F32_07 < 0.7 and paper_confidence(28, 40) == F32_07
    edges = bin_edges(10)
    assert edges[6] == 0.6000000000000001 and edges[7] == 0.7000000000000001
    assert edges[6] <= F32_07 < edges[6] + 0.1  # the [0.6, 0.7) bin
    # Paper: one bin [0.6, 0.7) with both: avg conf (0.7f + 0.65f) / 2, acc 1/2 -> |0.675 - 0.5| * 2 / 2 = 0.175.
    assert paper["ece_model_corpus"].value == pytest.approx(0.175, abs=1e-7)
    assert paper["ece_model_corpus"].value == original_calculate_ece([(F32_07, 1), (F32_065, 0)])
    # Default: 0.7 in bin 7, 0.65 in bin 6: (|0.7 - 1| + |0.65 - 0|) / 2 = 0.475.
    _, default = run(EceScorer(), instances, responses)
    assert default["ece_model_corpus"].value == pytest.approx(0.475)


def test_paper_ece_equals_the_original_calculate_ece() -> None:
    rng = np.random.default_rng(0)
    for n_bins in (10, 15):
        totals = rng.choice([20, 40, 41, 1000], size=300)
        counts = np.minimum(rng.integers(1, 45, size=300), totals)
        conf = [paper_confidence(int(c), int(t)) for c, t in zip(counts, totals, strict=True)]
        conf[:7] = [1.0, F32_07, 0.9, float(np.float32(0.9)), 0.3, 0.0, 0.1]
        correct = rng.random(300) < 0.4
        expected = original_calculate_ece([(c, int(k)) for c, k in zip(conf, correct, strict=True)], n_bins)
        assert paper_ece_columns(conf, correct, n_bins)[0] == expected
        # Column by column in a 2-D call, as for the oracle seeds.
        two = paper_ece_columns(np.column_stack([conf, conf]), np.column_stack([correct, ~correct]), n_bins)
        assert two[0] == expected
        assert two[1] == original_calculate_ece([(c, int(not k)) for c, k in zip(conf, correct, strict=True)], n_bins)


# --- (3) the corpus gold is the raw passage token --------------------------------------------------------------------


def test_raw_token_gold_never_matches_a_punctuated_corpus_word() -> None:
    inst = ClozeInstance(id="p", target="space", target_raw="space,", human_counts={"space": 3, "room": 1})
    response = SampleWordsResponse(counts={"space": 3, "x": 1}, n_requested=4)
    paper = EceScorer(variant="paper").score(inst, response, np.random.default_rng(0))
    default = EceScorer().score(inst, response, np.random.default_rng(0))
    assert paper["gold_corpus"] == "space,"
    assert paper["pred_model"] == "space" and paper["correct_model_corpus"] is False
    assert paper["pred_human"] == "space" and paper["correct_human_corpus"] is False
    assert default["correct_model_corpus"] is True and default["correct_human_corpus"] is True
    # Capitalised: "The" never equals the normalised word "the" either.
    cap = ClozeInstance(id="c", target="the", target_raw="The", human_counts={"the": 2})
    row = EceScorer(variant="paper").score(cap, SampleWordsResponse(counts={"the": 1}, n_requested=1), RNG)
    assert row["correct_model_corpus"] is False
    # A loader that kept no raw token: the normalised word stands in.
    bare = ClozeInstance(id="b", target="the", human_counts={"the": 2})
    row = EceScorer(variant="paper").score(bare, SampleWordsResponse(counts={"the": 1}, n_requested=1), RNG)
    assert row["gold_corpus"] == "the" and row["correct_model_corpus"] is True


# --- (4) ties go to the first word in support order ------------------------------------------------------------------


def test_ties_follow_support_order() -> None:
    inst = ClozeInstance(id="p", target="a", target_raw="a", human_counts={"b": 2, "a": 2})
    ordered = SampleWordsResponse(counts={"b": 2, "a": 2}, n_requested=4, first_seen=["b", "a"])
    paper = EceScorer(variant="paper").score(inst, ordered, np.random.default_rng(0))
    default = EceScorer().score(inst, ordered, np.random.default_rng(0))
    assert (paper["pred_model"], paper["conf_model"]) == ("b", 0.5)
    assert default["pred_model"] == "a"
    # Humans: the order of human_counts (the release's); the default takes the alphabetically smallest.
    assert paper["pred_human"] == "b" and paper["gold_majority"] == ["b"]
    assert default["pred_human"] == "a" and default["gold_majority"] == ["a", "b"]
    # No first_seen: codepoint order, as np.unique sorted the original's samples (not the dict's order).
    unordered = SampleWordsResponse(counts={"b": 2, "a": 2}, n_requested=4)
    assert EceScorer(variant="paper").score(inst, unordered, np.random.default_rng(0))["pred_model"] == "a"
    # A stored record round-trips first_seen.
    record = ordered.to_record()
    assert EceScorer(variant="paper").score(inst, record, np.random.default_rng(0))["pred_model"] == "b"
    assert first_argmax({"z": 1, "é": 1}, sorted(["é", "z"])) == "z"  # codepoint order: z (0x7a) < é (0xe9)
    assert first_argmax({"a": 1, "b": 3, "c": 3}, ["c", "b", "a"]) == "c"


# --- (5) the seeded oracle split -------------------------------------------------------------------------------------


def test_oracle_split_matches_the_global_random_module() -> None:
    counts = {"a": 17, "b": 11, "c": 7, "d": 4, "e": 2}  # 41 responses: odd, so one is removed first
    words = expand_responses(counts)
    assert words[:18] == ["a"] * 17 + ["b"] and len(words) == 41
    mine = list(words)
    subset1, subset2 = oracle_split(mine, 1)
    random.seed(1)
    removed = random.sample(words, 1)[0]
    expected_list = list(words)
    expected_list.remove(removed)  # the first occurrence of the drawn value, not the drawn position
    assert mine == expected_list and len(mine) == 40  # removed in place from the caller's list
    random.seed(1)
    random.sample(words, 1)
    assert subset1 == random.sample(expected_list, 20)  # draw order kept
    assert Counter(subset1) + Counter(subset2) == Counter(expected_list) and len(subset2) == 20
    # The transcription of the original gives the same, and an even list draws no removal.
    again = list(words)
    assert original_split(again, 1) == (subset1, subset2) and again == mine
    assert oracle_split(list(mine), 5) == original_split(list(mine), 5)
    # CPython's algorithm, pinned for a known list: 30 "a" then 10 "b", seed 1.
    assert Counter(oracle_split(["a"] * 30 + ["b"] * 10, 1)[0]) == {"a": 16, "b": 4}


def test_oracle_subsets_remove_with_seed_1_then_draw_every_seed() -> None:
    counts = {"a": 17, "b": 11, "c": 7, "d": 4, "e": 2}
    subsets = oracle_subsets(counts, 20)
    assert subsets is not None and len(subsets) == 20
    words = expand_responses(counts)
    original_split(words, 1)  # the TVD oracle's call: removes the odd response in place
    assert len(words) == 40
    for k in range(20):
        assert subsets[k] == original_split(words, k)[0]
    # Fewer than 21 responses: no oracle.
    assert oracle_subsets({"a": 15, "b": 5}, 20) is None
    assert oracle_subsets({"a": 15, "b": 6}, 2) is not None


def test_oracle_gold_and_seed_spread_in_the_ece() -> None:
    # p1: 40 responses, a 30 / b 10: every 20-subset has at least 10 "a", and its top word is "a" unless it is an
    # exact 10/10 tie broken by draw order. p2: 20 responses, too few for an oracle.
    instances = [
        ClozeInstance(id="p1", target="a", target_raw="a", human_counts={"a": 30, "b": 10}),
        ClozeInstance(id="p2", target="a", target_raw="a", human_counts={"a": 15, "b": 5}),
    ]
    responses = [
        SampleWordsResponse(counts={"a": 3, "b": 1}, n_requested=4),
        SampleWordsResponse(counts={"a": 1}, n_requested=1),
    ]
    rows, metrics = run(EceScorer(variant="paper", n_oracle_seeds=4), instances, responses)
    subsets = oracle_subsets({"a": 30, "b": 10}, 4)
    assert subsets is not None
    assert rows[0]["gold_oracle"] == [first_argmax(Counter(s)) for s in subsets] == ["a"] * 4
    assert rows[0]["correct_model_oracle"] == [True] * 4
    assert rows[1]["gold_oracle"] is None and rows[1]["correct_model_oracle"] is None
    # One position: confidence 0.75, always right -> ECE 0.25 for every seed, spread 0; p2 is left out.
    oracle = metrics["ece_model_oracle"]
    assert (oracle.value, oracle.spread, oracle.n) == (0.25, 0.0, 1)
    assert metrics["ece_model_corpus"].n == 2
    assert set(metrics) == {
        f"{kind}_{who}_{gold}"
        for kind in ("ece", "acc")
        for who in ("model", "human")
        for gold in ("corpus", "majority", "oracle")
    } | {"conf_model", "conf_human"}


def test_ece_oracle_spread_is_the_ddof_0_std_over_seeds() -> None:
    instances = [
        ClozeInstance(id=f"p{k}", target="a", target_raw="a", human_counts={"a": 12 + k, "b": 10, "c": 9 - k})
        for k in range(6)
    ]
    responses = [SampleWordsResponse(counts={"a": 2, "b": 1}, n_requested=3)] * 6
    scorer = EceScorer(variant="paper", n_oracle_seeds=5)
    rows, metrics = run(scorer, instances, responses)
    correct = np.array([r["correct_model_oracle"] for r in rows], dtype=np.float64)
    conf = np.repeat(np.array([r["conf_model"] for r in rows])[:, None], 5, axis=1)
    per_seed = [original_calculate_ece(list(zip(conf[:, k], correct[:, k], strict=True))) for k in range(5)]
    assert metrics["ece_model_oracle"].value == pytest.approx(np.mean(per_seed), abs=1e-15)
    assert metrics["ece_model_oracle"].spread == pytest.approx(np.std(per_seed), abs=1e-15)
    assert metrics["acc_model_oracle"].spread == pytest.approx(np.std(correct.mean(axis=0)), abs=1e-15)
    assert population_std([1.0, 3.0]) == 1.0


# --- (6) human_control, variant=paper --------------------------------------------------------------------------------


def test_human_control_paper_on_a_hand_computed_case() -> None:
    # p1: a 30 / b 10. The seed-1 split (pinned above) gives subset 1 = {a:16, b:4}, subset 2 = {a:14, b:6}:
    #   TVD(s1, s2) = |16-14|/20 = 0.1; TVD(s1, all) = |0.8 - 0.75| = 0.05; TVD(s2, all) = |0.7 - 0.75| = 0.05;
    #   model {a:1, b:1}: TVD(model, s1) = |0.5 - 0.8| = 0.3.
    # Seeds 0, 1, 2 give 6, 4, 5 "b" in subset 1: TVD(s1, s2) = |2k - 10| / 20 = 0.1, 0.1, 0.0;
    #   std (ddof 0) of [0.1, 0.1, 0.0] = sqrt(2) / 30.
    # p2: 20 responses, left out.
    instances = [
        ClozeInstance(id="p1", target="a", human_counts={"a": 30, "b": 10}),
        ClozeInstance(id="p2", target="a", human_counts={"a": 15, "b": 5}),
    ]
    responses = [SampleWordsResponse(counts={"a": 1, "b": 1}, n_requested=2)] * 2
    scorer = HumanControlScorer(variant="paper", n_oracle_seeds=3)
    rows, metrics = run(scorer, instances, responses)
    assert rows[0]["subset_sizes"] == [20, 20]
    assert rows[0]["tvd_human_halves"] == pytest.approx(0.1)
    assert rows[0]["tvd_oracle1_human"] == pytest.approx(0.05)
    assert rows[0]["tvd_oracle2_human"] == pytest.approx(0.05)
    assert rows[0]["tvd_model_half"] == pytest.approx(0.3)
    assert rows[0]["tvd_human_halves_seeds"] == pytest.approx([0.1, 0.1, 0.0])
    assert all(rows[1][key] is None for key in rows[1])
    assert set(metrics) == {
        "tvd_human_halves",
        "tvd_model_half",
        "tvd_oracle1_human",
        "tvd_oracle2_human",
        "tvd_human_halves_seed_spread",
    }
    assert metrics["tvd_human_halves"].value == pytest.approx(0.1)
    assert metrics["tvd_human_halves"].spread is None and metrics["tvd_human_halves"].n == 1
    assert metrics["tvd_model_half"].value == pytest.approx(0.3)
    assert metrics["tvd_oracle1_human"].value == pytest.approx(0.05)
    assert metrics["tvd_oracle2_human"].value == pytest.approx(0.05)
    spread = metrics["tvd_human_halves_seed_spread"]
    assert spread.value == pytest.approx(2**0.5 / 30) and spread.higher_is_better is None
    assert "tvd_model_sub_half" not in metrics


def test_human_control_paper_splits_odd_lists_and_resets_the_seed_per_position() -> None:
    # 41 responses: seed 1 removes one, then 20 / 20. Two identical positions get the identical split.
    counts = {"a": 17, "b": 11, "c": 7, "d": 4, "e": 2}
    instances = [ClozeInstance(id=f"p{k}", target="a", human_counts=counts) for k in range(2)]
    rows, metrics = run(HumanControlScorer(variant="paper", n_oracle_seeds=2), instances, [None, None])
    subset1, subset2 = original_split(expand_responses(counts), 1)
    s1, s2, full = Counter(subset1), Counter(subset2), Counter(counts)
    expected = 0.5 * sum(abs(s1[w] / 20 - s2[w] / 20) for w in full)
    assert rows[0] == rows[1]
    assert rows[0]["subset_sizes"] == [20, 20]
    assert rows[0]["tvd_human_halves"] == pytest.approx(expected)
    assert rows[0]["tvd_oracle2_human"] == pytest.approx(0.5 * sum(abs(s2[w] / 20 - full[w] / 41) for w in full))
    # Human-only rows have no model key; the human metrics are the same as in a model run.
    assert "tvd_model_half" not in rows[0] and "tvd_model_half" not in metrics
    responses = [SampleWordsResponse(counts={"a": 1}, n_requested=1)] * 2
    _, with_model = run(HumanControlScorer(variant="paper", n_oracle_seeds=2), instances, responses)
    assert {k: with_model[k] for k in metrics} == metrics


def test_human_control_paper_with_21_responses_has_no_subset_2() -> None:
    inst = ClozeInstance(id="p", target="a", human_counts={"a": 14, "b": 7})
    row = HumanControlScorer(variant="paper").score(inst, None, np.random.default_rng(0))
    assert row["subset_sizes"] == [20, 0]
    assert row["tvd_human_halves"] is None and row["tvd_oracle2_human"] is None
    assert row["tvd_oracle1_human"] is not None and row["tvd_human_halves_seeds"] is None


# --- the default variant, arguments, headline, controls --------------------------------------------------------------


def test_default_variant_is_unchanged() -> None:
    instances = [
        ClozeInstance(id="i1", target="a", target_raw="A,", human_counts={"b": 2, "a": 2}),
        ClozeInstance(id="i2", target="x", target_raw="x", human_counts={"y": 3, "z": 1}),
    ]
    responses = [
        SampleWordsResponse(counts={"b": 2, "a": 2}, n_requested=4, first_seen=["b", "a"]),
        SampleWordsResponse(counts={"y": 1, "x": 1}, n_requested=2),
    ]
    for cls in (EceScorer, HumanControlScorer):
        implicit = run(cls(n_splits=3), instances, responses)
        explicit = run(cls(n_splits=3, variant="default", n_oracle_seeds=5), instances, responses)
        assert implicit == explicit
    rows, _ = run(EceScorer(n_splits=3), instances, responses)
    assert rows[0]["pred_model"] == "a" and rows[0]["correct_model_corpus"] is True  # normalised target, tie rule


def test_paper_human_metrics_do_not_depend_on_the_model() -> None:
    counts = {"a": 17, "b": 11, "c": 7, "d": 4, "e": 2}
    instances = [
        ClozeInstance(id="p1", target="a", target_raw="a", human_counts=counts),
        ClozeInstance(id="p2", target="b", target_raw="b.", human_counts={"b": 20, "a": 3}),
    ]
    responses = [SampleWordsResponse(counts={"a": 2, "c": 2}, n_requested=4)] * 2
    human_rows, human = run(EceScorer(variant="paper"), instances, [None, None])
    model_rows, model = run(EceScorer(variant="paper"), instances, list(responses))
    assert all("pred_model" not in r for r in human_rows)
    for h, m in zip(human_rows, model_rows, strict=True):
        assert {k: m[k] for k in h} == h
    assert set(human) == {f"{k}_human_{g}" for k in ("ece", "acc") for g in ("corpus", "majority", "oracle")} | {
        "conf_human"
    }
    assert {k: model[k] for k in human} == human


def test_arguments_headline_and_controls() -> None:
    assert EceScorer(variant="paper").n_oracle_seeds == 20
    assert HumanControlScorer(variant="paper", n_oracle_seeds="3").n_oracle_seeds == 3
    with pytest.raises(HarnessError, match=r"scorer 'ece': argument 'variant': expected one of 'default', 'paper'"):
        EceScorer(variant="original")
    with pytest.raises(HarnessError, match="human_control.*n_oracle_seeds"):
        HumanControlScorer(n_oracle_seeds=0)
    metrics = ["ece_model_corpus", "ece_human_corpus", "ece_model_majority", "ece_model_oracle", "conf_model"]
    paper = EceScorer(variant="paper")
    assert paper.headline_metrics(metrics, metrics) == ["ece_model_corpus", "ece_model_majority", "ece_model_oracle"]
    assert EceScorer().headline_metrics(metrics, metrics) == ["ece_model_corpus", "ece_human_corpus"]
    assert paper.controls(metrics) == {
        "ece_model_corpus": "ece_human_corpus",
        "acc_model_corpus": "acc_human_corpus",
        "conf_model": "conf_human",
    }

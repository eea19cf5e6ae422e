"""``variant: paper``: the follow-up study's binomial fit (Tsvilodub et al., 2024, ``analysis/testing-stats.R``).

Per phenomenon, the model's rate is the share of its argmax choices (over items and option orders) that are the
target, clipped to [1e-9, 1 - 1e-9] and otherwise unsmoothed; the fit is the sum over phenomena of
log Binomial(k_human | N_human, rate). Checked on hand-computed cases, through every kind of method, against the
default (which must not move), and on Hu et al.'s released distributions, where the rate is the files' own
``correct`` column."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binom

from harness.instances import ChoiceInstance
from harness.prompts.choice import option_order
from harness.requests import GenerateResponse, NextTokenResponse
from harness.run.importing import import_options
from harness.run.runner import run
from harness.scorers.choice.common import (
    PAPER_RATE_EPSILON,
    ItemHuman,
    argmax_is_target,
    clip_rate,
    fit_metrics,
    paper_binomial,
)
from harness.scorers.choice.free_generation import FreeGenerationScorer
from harness.scorers.choice.human import HumanChoiceScorer, _control_binomial
from harness.scorers.choice.label_scores import LabelScorer
from harness.scoring.classifiers import Classification
from harness.task_config import parse_task_args
from tests.helpers import shared_data_dir

PARAMS: dict[str, Any] = {
    "option_orders": 2,
    "order_seed": 0,
    "label_style": "numbers",
    "prompt_template": "{description}\n\n{scenario}\n\n{options}Answer:",
}
EPS = 1e-9


def _item(item_id: int, counts: tuple[int, ...], target: int, phenomenon: str) -> ChoiceInstance:
    return ChoiceInstance(
        id=f"{phenomenon}-{item_id}",
        phenomenon=phenomenon,
        item_id=item_id,
        description="Interpret the story.",
        scenario=f"Story {item_id}.",
        options=tuple(f"option {k}" for k in range(len(counts))),
        target=target,
        human_counts=counts,
    )


def test_argmax_ties_go_to_the_lowest_option_index() -> None:
    assert argmax_is_target([0.4, 0.4, 0.2], 0) is True
    assert argmax_is_target([0.4, 0.4, 0.2], 1) is False
    assert argmax_is_target([0.1, 0.7, 0.2], 1) is True
    assert clip_rate(0.0) == PAPER_RATE_EPSILON == EPS
    assert clip_rate(1.0) == 1.0 - EPS
    assert clip_rate(0.25) == 0.25


def test_paper_binomial_by_hand() -> None:
    # Phenomenon A: human target choices 3 + 1 = 4 of 4 + 2 = 6; the model's argmax is the target in 2 of 2 and
    # 1 of 2 orders: rate 3/4. B: 2 of 2 human choices are the target; the model never picks it: rate 0 -> 1e-9.
    humans = [ItemHuman("A", (3, 1), 0), ItemHuman("A", (1, 1), 1), ItemHuman("B", (0, 2), 1)]
    argmax = [[2, 2], [1, 2], [0, 2]]
    # By hand: A: log(C(6, 4) 0.75^4 0.25^2) = log(15 * 0.31640625 * 0.0625) = log(0.296630859375) = -1.2152668;
    # B: log(C(2, 2) (1e-9)^2) = 2 log(1e-9) = -41.4465317. Sum -42.6617985.
    expected = binom.logpmf(4, 6, 0.75) + binom.logpmf(2, 2, EPS)
    assert expected == pytest.approx(-1.2152668 - 41.4465317, abs=1e-6)
    assert paper_binomial(humans, argmax) == pytest.approx(expected)
    # The rate pools items and orders: items with more orders weigh more (3 of 4 orders, not the mean of 1 and 0.5).
    assert paper_binomial(humans[:2], [[3, 3], [0, 1]]) == pytest.approx(binom.logpmf(4, 6, 0.75))
    # fit_metrics swaps only ll_binomial; the other fits are the same as without the variant.
    dists = [[0.5, 0.5], [0.25, 0.75], [0.5, 0.5]]
    default = fit_metrics(humans, dists, epsilon=0.0)
    paper = fit_metrics(humans, dists, epsilon=0.0, argmax_target=argmax)
    assert paper["ll_binomial"] == pytest.approx(expected)
    assert default["ll_binomial"] == pytest.approx(math.log(math.comb(6, 4) * 0.625**4 * 0.375**2) + math.log(0.25))
    assert {k: v for k, v in paper.items() if k != "ll_binomial"} == {
        k: v for k, v in default.items() if k != "ll_binomial"
    }


def _label_answers(item: ChoiceInstance, logprobs_by_option: list[list[float]]) -> dict[str, Any]:
    """Label answers whose option k gets ``logprobs_by_option[o][k]`` in order o (mapped to shown positions)."""
    answers: dict[str, Any] = {}
    labels = [f" {j + 1}" for j in range(len(item.options))]
    for o, by_option in enumerate(logprobs_by_option):
        order = option_order(item, o, 0)
        answers[f"o{o}/I"] = NextTokenResponse([by_option[k] for k in order], labels, [1] * len(labels))
        answers[f"o{o}/I0"] = NextTokenResponse([-1.0] * len(labels), labels, [1] * len(labels))
    return answers


def test_a_method_scorer_under_both_variants() -> None:
    items = [
        _item(1, (1, 3, 1), 1, "Irony"),  # target first in both orders
        _item(2, (4, 1, 0), 0, "Irony"),  # target first in one order, a tie (to option 0, the target) in the other
        _item(3, (1, 1, 3), 2, "Humour"),  # never
    ]
    answers = [
        _label_answers(items[0], [[-2.0, -0.5, -3.0], [-1.0, -0.2, -2.0]]),
        _label_answers(items[1], [[-0.1, -2.0, -3.0], [-0.7, -0.7, -3.0]]),
        _label_answers(items[2], [[-0.1, -2.0, -3.0], [-0.1, -2.0, -3.0]]),
    ]
    results = {}
    for variant in ("default", "paper"):
        scorer = LabelScorer(variant=variant)
        scorer.task_params = dict(PARAMS)
        rows = [scorer.score(i, a, np.random.default_rng(0)) for i, a in zip(items, answers, strict=True)]
        results[variant] = (rows, scorer.aggregate(rows, np.random.default_rng(0)))
    default_rows, default = results["default"]
    paper_rows, paper = results["paper"]
    assert "argmax_target" not in default_rows[0]["label.prob"]
    assert [r["label.prob"]["argmax_target"] for r in paper_rows] == [[2, 2], [2, 2], [0, 2]]
    # acc splits the tie (0.75 for item 2); the paper's argmax gives it to the lowest index, the target here.
    assert default_rows[1]["label.prob"]["acc"] == 0.75
    # Irony: humans 3 + 4 = 7 target choices of 10, model rate 4/4 -> 1 - 1e-9; Humour: 3 of 5, rate 0 -> 1e-9.
    expected = binom.logpmf(7, 10, 1 - EPS) + binom.logpmf(3, 5, EPS)
    assert paper["label.prob/ll_binomial"].value == pytest.approx(expected)
    assert paper["label.prob/ll_binomial/Humour"].value == pytest.approx(binom.logpmf(3, 5, EPS))
    assert default["label.prob/ll_binomial"].value != pytest.approx(expected)
    changed = {name for name in default if default[name].value != paper[name].value}
    assert changed and all("/ll_binomial" in name for name in changed)


def test_free_generation_rate_is_the_share_of_answers_classified_as_the_target() -> None:
    item = _item(1, (1, 3, 1), 1, "Irony")
    scorer = FreeGenerationScorer(temperatures="0.1", variant="paper")
    scorer.task_params = dict(PARAMS)
    scorer._classified = {
        item.id: {
            "temp0.1": [Classification(1, "label"), Classification(None, "unclassified"), Classification(0, "text")]
        }
    }
    answers = {
        "temp0.1": GenerateResponse(texts=["2", "hmm", "option 0"], finish_reasons=["eos"] * 3, n_tokens=[1] * 3)
    }
    row = scorer.score(item, answers, np.random.default_rng(0))["free.temp0.1"]
    assert row["argmax_target"] == [1, 3]  # an unclassified answer is not the target
    metrics = scorer.aggregate([{"free.temp0.1": row}], np.random.default_rng(0))
    assert metrics["free.temp0.1/ll_binomial"].value == pytest.approx(binom.logpmf(3, 5, 1 / 3))


def test_human_control_under_the_paper_variant() -> None:
    humans = [ItemHuman("A", (6, 4), 0), ItemHuman("A", (2, 8), 1)]
    splits = [{"k_b": 3, "n_b": 5, "theta_a": 0.0}, {"k_b": 4, "n_b": 5, "theta_a": 0.0}]
    # A's halves: 6 - 3 = 3 of 5 and 8 - 4 = 4 of 5 target choices: rate 7/10; B's: 7 of 10.
    # By hand: log(C(10, 7) 0.7^7 0.3^3) = log(120 * 0.0823543 * 0.027) = log(0.266827932) = -1.3211513.
    assert _control_binomial(humans, splits, paper=True) == pytest.approx(-1.3211513, abs=1e-6)
    assert _control_binomial(humans, splits, paper=True) == pytest.approx(binom.logpmf(7, 10, 0.7))
    scorer = HumanChoiceScorer(variant="paper", n_splits=3)
    scorer.task_params = dict(PARAMS)
    items = [_item(1, (300, 74, 0), 0, "Irony"), _item(2, (10, 364, 0), 1, "Irony")]
    rows = [scorer.score(i, None, np.random.default_rng(k)) for k, i in enumerate(items)]
    assert scorer.aggregate(rows, np.random.default_rng(0))["human/control_ll_binomial"].value < 0


def test_paper_variant_on_hu2023_is_the_follow_up_studys_number(tmp_path: Path) -> None:
    """text-davinci-002's released distributions: rate = the files' own ``correct`` share per phenomenon, k and N
    from the human trials of the 169 items scored (Maxims item 13 has no model rows)."""
    folder = shared_data_dir() / "pragmatics-mcq" / "reference_outputs" / "hu2023" / "model_data"
    human_dir = shared_data_dir() / "pragmatics-mcq" / "hu2023" / "human_data" / "fj"
    if not folder.is_dir() or not human_dir.is_dir():
        pytest.skip("Hu et al.'s model_data or human data not found")
    correct: dict[str, list[bool]] = {}
    for path in sorted(folder.glob("*_text-davinci-002_seed*_examples0.csv")):
        if "no-story" in path.name:
            continue
        with path.open(newline="", encoding="utf-8") as f:
            correct.setdefault(path.name.split("_")[0], []).extend(r["correct"] == "True" for r in csv.DictReader(f))
    expected = 0.0
    for phenomenon, hits in correct.items():
        with (human_dir / f"Human_{phenomenon}.csv").open(newline="", encoding="utf-8") as f:
            trials = [r for r in csv.DictReader(f) if not (phenomenon == "Maxims" and r["itemNum"] == "13")]
        k, n = sum(int(r["Correct"]) for r in trials), len(trials)
        expected += binom.logpmf(k, n, clip_rate(float(np.mean(hits))))
    options = import_options(
        str(folder),
        task="pragmatics-mcq-reported",
        name="davinci",
        fmt="hu2023",
        setting="text-davinci-002",
        task_args=parse_task_args("mcq_reported.variant=paper"),
        output_dir=tmp_path,
        data_dir=str(shared_data_dir()),
    )
    results = run(options)
    metrics = results["metrics"]["pragmatics-mcq-reported"]
    assert metrics["reported.probs/ll_binomial"]["value"] == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(-6583.117989, abs=1e-5)

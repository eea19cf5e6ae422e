"""The multiple-choice methods and metrics on hand-computed numbers (no model: answers are written by hand)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.instances import ChoiceInstance
from harness.prompts.choice import option_labels, option_order, render_choice_prompt, render_rating_prompt
from harness.requests import LoglikelihoodResponse, NextTokenResponse, SimilarityResponse
from harness.scorers.choice.common import (
    ItemHuman,
    binomial_loglik,
    choice_distribution,
    fit_metrics,
    multinomial_loglik,
    top_is_target,
    tvd,
)
from harness.scorers.choice.embedding import EmbeddingScorer
from harness.scorers.choice.human import HumanChoiceScorer
from harness.scorers.choice.label_scores import LabelScorer
from harness.scorers.choice.rating import RatingScorer, expected_rating
from harness.scorers.choice.robustness import RobustnessScorer
from harness.scorers.choice.string_scores import StringScorer

PARAMS: dict[str, Any] = {
    "option_orders": 2,
    "order_seed": 0,
    "label_style": "numbers",
    "prompt_template": "{description}\n\n{scenario}\n\n{options}Answer:",
}


def _item(counts: tuple[int, ...] = (30, 60, 10), target: int = 1, phenomenon: str = "Irony") -> ChoiceInstance:
    return ChoiceInstance(
        id=f"{phenomenon}-1",
        phenomenon=phenomenon,
        item_id=1,
        description="Interpret the story.",
        scenario="Ann says: 'Lovely weather.' It pours. What does Ann mean?",
        options=("The weather is nice.", "The weather is bad.", "Ann likes rain.")[: len(counts)],
        option_types=("IncorrectLiteral", "CorrectNonLiteral", "IncorrectAssociate")[: len(counts)],
        target=target,
        human_counts=counts,
    )


def _scorer(cls: type, **args: Any) -> Any:
    scorer = cls(**args)
    scorer.task_params = dict(PARAMS)
    return scorer


# -- rules and metrics -------------------------------------------------------------------------------------------


def test_choice_rules_on_known_numbers() -> None:
    logs = [math.log(0.2), math.log(0.6), math.log(0.2)]
    assert np.allclose(choice_distribution(logs, "log_probability", "auto"), [0.2, 0.6, 0.2])
    assert np.allclose(choice_distribution([1.0, 3.0], "probability", "auto"), [0.25, 0.75])
    assert np.allclose(choice_distribution([0.0, math.log(2.0)], "log_scale", "auto"), [1 / 3, 2 / 3])
    # softmax with temperature 0.5 doubles the scores: weights 1 and 4.
    assert np.allclose(choice_distribution([0.0, math.log(2.0)], "rating", "softmax", 0.5), [0.2, 0.8])
    assert np.allclose(choice_distribution([1.0, 1.0, 0.0], "similarity", "argmax"), [0.5, 0.5, 0.0])
    # Tiny probabilities do not underflow: normalising exp(-1000) and exp(-1001) still gives 1 : e^-1.
    p = choice_distribution([-1000.0, -1001.0], "log_probability", "normalize")
    assert p[0] == pytest.approx(1 / (1 + math.exp(-1)))
    with pytest.raises(HarnessError, match="non-negative"):
        choice_distribution([-0.5, 0.2], "log_scale", "normalize")


def test_accuracy_ties_and_tvd() -> None:
    assert top_is_target([0.1, 0.7, 0.2], 1) == 1.0
    assert top_is_target([0.1, 0.7, 0.2], 0) == 0.0
    assert top_is_target([0.4, 0.4, 0.2], 0) == 0.5
    assert tvd([0.5, 0.5, 0.0], [0.3, 0.6, 0.1]) == pytest.approx(0.2)


def test_likelihoods_by_hand() -> None:
    # Multinomial(2, 1 | 3, (1/2, 1/2)) = 3 * (1/2)^3 = 0.375.
    assert multinomial_loglik([2, 1], [0.5, 0.5]) == pytest.approx(math.log(0.375))
    assert multinomial_loglik([2, 1], [1.0, 0.0]) == float("-inf")
    # Binomial(1 | 2, 1/2) = 1/2; Binomial(3 | 3, 0.9) = 0.729.
    assert binomial_loglik(1, 2, 0.5) == pytest.approx(math.log(0.5))
    assert binomial_loglik(3, 3, 0.9) == pytest.approx(math.log(0.729))
    assert binomial_loglik(0, 4, 0.0) == 0.0


def test_fit_metrics_by_hand() -> None:
    humans = [ItemHuman("A", (3, 1), 0), ItemHuman("A", (1, 1), 1), ItemHuman("B", (0, 2), 1)]
    dists = [[0.5, 0.5], [0.25, 0.75], [0.5, 0.5]]
    fit = fit_metrics(humans, dists, epsilon=0.0)
    multi = math.log(4 * 0.5**4) + math.log(2 * 0.25 * 0.75) + math.log(0.25)
    assert fit["ll_multinomial"] == pytest.approx(multi)
    per_choice = (4 * math.log(0.5) + math.log(0.25) + math.log(0.75) + 2 * math.log(0.5)) / 8
    assert fit["logprob_per_choice"] == pytest.approx(per_choice)
    # Phenomenon A: 4 target choices of 6, theta = mean(0.5, 0.75); B: 2 of 2, theta 0.5.
    binom = math.log(math.comb(6, 4) * 0.625**4 * 0.375**2) + math.log(0.25)
    assert fit["ll_binomial"] == pytest.approx(binom)
    # Smoothing keeps a zero-probability option finite: p' = 0.99 * p + 0.01 / 2.
    smoothed = fit_metrics([ItemHuman("A", (1, 1), 0)], [[1.0, 0.0]], epsilon=0.01)
    assert smoothed["logprob_per_choice"] == pytest.approx((math.log(0.995) + math.log(0.005)) / 2)


# -- prompts -----------------------------------------------------------------------------------------------------


def test_prompts_with_and_without_options_and_prior() -> None:
    item = _item()
    order = [2, 0, 1]
    assert render_choice_prompt(item, PARAMS, order) == (
        "Interpret the story.\n\nAnn says: 'Lovely weather.' It pours. What does Ann mean?\n\n"
        "Options:\n1) Ann likes rain.\n2) The weather is nice.\n3) The weather is bad.\nAnswer:"
    )
    assert render_choice_prompt(item, PARAMS, order, prior=True) == (
        "Interpret the story.\n\nOptions:\n1) Ann likes rain.\n2) The weather is nice.\n3) The weather is bad.\nAnswer:"
    )
    assert render_choice_prompt(item, PARAMS, None) == (
        "Interpret the story.\n\nAnn says: 'Lovely weather.' It pours. What does Ann mean?\n\nAnswer:"
    )
    rating = render_rating_prompt(item, {}, "Ann likes rain.", ["bad", "ok", "good"])
    assert rating.endswith(
        "answer: Ann likes rain.\nChoose one of the following response options: bad, ok, good\nAnswer:"
    )
    assert option_labels(3, "letters") == ["A", "B", "C"]


def test_option_orders_are_seeded_permutations() -> None:
    item = _item()
    orders = [option_order(item, o, 0) for o in range(5)]
    assert all(sorted(o) == [0, 1, 2] for o in orders)
    assert orders == [option_order(item, o, 0) for o in range(5)]
    assert len({tuple(o) for o in orders}) > 1
    assert orders != [option_order(item, o, 1) for o in range(5)]


# -- methods -----------------------------------------------------------------------------------------------------


def _ll(*logprobs: float) -> LoglikelihoodResponse:
    return LoglikelihoodResponse(list(logprobs), ["t"] * len(logprobs))


def test_string_scores_by_hand() -> None:
    item = _item(counts=(40, 60), target=1)
    scorer = _scorer(StringScorer)
    queries = scorer.requests(item, PARAMS, seed=1)
    assert len(queries) == 2 * 2 * 2  # orders x {I, I0} x options
    assert queries["o0/I/1"].continuation == " The weather is bad."
    assert "Ann says" not in queries["o0/I0/1"].context and "Options:" in queries["o0/I0/1"].context
    # Option 0: log P under I = [-1, -2], under I0 = [-1.5, -3]; option 1: [-0.5] and [-0.2]; both orders alike.
    answers = {}
    for o in range(2):
        answers |= {
            f"o{o}/I/0": _ll(-1, -2),
            f"o{o}/I0/0": _ll(-1.5, -3),
            f"o{o}/I/1": _ll(-0.5),
            f"o{o}/I0/1": _ll(-0.2),
        }
    scores = scorer.item_scores(item, answers)
    assert scores["prob"][0] == pytest.approx([-3.0, -0.5])
    assert scores["token_prob"][0] == pytest.approx([(math.exp(-1) + math.exp(-2)) / 2, math.exp(-0.5)])
    assert scores["logprob"][0] == pytest.approx([-1.5, -0.5])
    assert scores["prior_corrected"][0] == pytest.approx([1.5, -0.3])
    assert scores["surprisal_reduction"][0] == pytest.approx([0.75, -0.3])
    values = scorer.score(item, answers, np.random.default_rng(0))
    # prob: normalised P = e^-3 : e^-0.5; option 1 (the target) wins.
    p1 = math.exp(-0.5) / (math.exp(-3) + math.exp(-0.5))
    assert values["string.prob"]["p"] == pytest.approx([1 - p1, p1])
    assert values["string.prob"]["acc"] == 1.0
    assert values["string.prior_corrected"]["acc"] == 0.0
    assert values["string.prob"]["tvd"] == pytest.approx(abs(p1 - 0.6))


def test_label_scores_map_positions_back_to_options() -> None:
    item = _item()
    scorer = _scorer(LabelScorer)
    queries = scorer.requests(item, PARAMS, seed=1)
    assert queries["o0/I"].candidates == (" 1", " 2", " 3")
    answers: dict[str, Any] = {}
    for o in range(2):
        order = option_order(item, o, 0)
        # The label of the position showing option k gets log-probability -k-1 under I and -1 under I0.
        cond = [-(k + 1.0) for k in order]
        answers[f"o{o}/I"] = NextTokenResponse(cond, [" 1", " 2", " 3"], [1, 1, 1])
        answers[f"o{o}/I0"] = NextTokenResponse([-1.0, -1.0, -1.0], [" 1", " 2", " 3"], [1, 1, 1])
    scores = scorer.item_scores(item, answers)
    assert scores["prob"] == [[-1.0, -2.0, -3.0]] * 2
    assert scores["prior_corrected"] == [[0.0, -1.0, -2.0]] * 2
    values = scorer.score(item, answers, np.random.default_rng(0))
    assert values["label.prob"]["acc"] == 0.0  # option 0 always wins, the target is option 1
    z = math.exp(-1) + math.exp(-2) + math.exp(-3)
    assert values["label.prob"]["p"] == pytest.approx([math.exp(-k) / z for k in (1, 2, 3)])
    assert "multi_token_labels" not in scorer.notes


def test_rating_is_probability_weighted_mean() -> None:
    assert expected_rating([0.0] * 5) == pytest.approx(3.0)
    assert expected_rating([math.log(x) for x in (0.4, 0.3, 0.1, 0.1, 0.1)]) == pytest.approx(2.2)
    item = _item(counts=(1, 3), target=1)
    scorer = _scorer(RatingScorer, scales=["likely"])
    queries = scorer.requests(item, PARAMS, seed=1)
    assert len(queries) == 2 * 5  # options x rating phrases, not repeated per order
    assert queries["likely/1/5"].continuation == " very likely"
    answers = {f"likely/0/{r}": _ll(math.log(p)) for r, p in enumerate((0.4, 0.3, 0.1, 0.1, 0.1), start=1)}
    answers |= {f"likely/1/{r}": _ll(math.log(p)) for r, p in enumerate((0.1, 0.1, 0.1, 0.3, 0.4), start=1)}
    scores = scorer.item_scores(item, answers)
    assert scores["likely"] == [pytest.approx([2.2, 3.8])] * 2
    values = scorer.score(item, answers, np.random.default_rng(0))
    assert values["rating.likely"]["acc"] == 1.0
    e = math.exp(1.6)
    assert values["rating.likely"]["p"][1] == pytest.approx(e / (1 + e))


def test_embedding_scores_are_cosines() -> None:
    item = _item()
    scorer = _scorer(EmbeddingScorer)
    query = scorer.requests(item, PARAMS, seed=1)["cosine"]
    assert query.options == item.options and "Options:" not in query.prompt
    values = scorer.score(item, {"cosine": SimilarityResponse([0.2, 0.9, 0.1])}, np.random.default_rng(0))
    assert values["embedding.cosine"]["acc"] == 1.0
    assert values["embedding.cosine"]["scores"] == [[0.2, 0.9, 0.1]] * 2


def test_human_row_and_split_half_control() -> None:
    scorer = _scorer(HumanChoiceScorer, n_splits=4)
    items = [_item(counts=(30, 60, 10)), _item(counts=(50, 50, 0), target=0, phenomenon="Humour")]
    rows = [scorer.score(i, None, np.random.default_rng(k)) for k, i in enumerate(items)]
    assert rows[0]["human"]["acc"] == pytest.approx(0.6)
    assert rows[1]["human"]["majority_correct"] == 0.5
    for row, item in zip(rows, items, strict=True):
        for split in row["human"]["splits"]:
            assert split["n_b"] == sum(item.human_counts) - sum(item.human_counts) // 2
            assert 0.0 <= split["tvd"] <= 1.0
    metrics = scorer.aggregate(rows, np.random.default_rng(0))
    assert metrics["human/acc"].value == pytest.approx(0.55)
    assert metrics["human/acc/Humour"].value == pytest.approx(0.5)
    assert metrics["human/control_tvd"].spread is not None
    assert metrics["human/control_logprob_per_choice"].value < 0
    # Chance: three options each, so 1/3; TVD of uniform to (.3, .6, .1) is 0.2667 and to (.5, .5, 0) 0.3333.
    assert metrics["chance/acc"].value == pytest.approx(1 / 3)
    assert metrics["chance/tvd"].value == pytest.approx((0.8 / 3 + 1 / 3) / 2)
    assert metrics["chance/logprob_per_choice"].value == pytest.approx(math.log(1 / 3))


def test_robustness_report_spread_tau_and_winners() -> None:
    items = [_item(phenomenon="Irony"), _item(phenomenon="Humour")]
    values = [
        {
            "a.x": {"p": [0.2, 0.8, 0.0], "acc": 1.0, "tvd": 0.2, "p_target": 0.8, "scores": []},
            "b.y": {"p": [0.6, 0.4, 0.0], "acc": 0.0, "tvd": 0.3, "p_target": 0.4, "scores": []},
        },
        {
            "a.x": {"p": [0.5, 0.5, 0.0], "acc": 0.5, "tvd": 0.1, "p_target": 0.5, "scores": []},
            "b.y": {"p": [0.1, 0.9, 0.0], "acc": 1.0, "tvd": 0.4, "p_target": 0.9, "scores": []},
        },
    ]
    from harness.scoring.base import Metric

    metrics = {
        "a.x/acc": Metric(0.75, True),
        "b.y/acc": Metric(0.5, True),
        "a.x/tvd": Metric(0.15, False),
        "b.y/tvd": Metric(0.35, False),
        "a.x/acc/Irony": Metric(1.0, True),
        "b.y/acc/Irony": Metric(0.0, True),
        "a.x/acc/Humour": Metric(0.5, True),
        "b.y/acc/Humour": Metric(1.0, True),
        "human/acc/Irony": Metric(0.6, True),
    }
    report = RobustnessScorer().report(items, values, metrics)
    assert report is not None
    assert report["systems"] == ["a.x", "b.y"]
    assert report["spread"]["acc"]["range"] == pytest.approx(0.25)
    assert report["spread"]["acc"]["best"] == ["a.x"] and report["spread"]["tvd"]["best"] == ["a.x"]
    # Two items, opposite order of target probabilities: tau = -1.
    assert report["kendall_tau"]["a.x|b.y"] == {"tau": pytest.approx(-1.0), "n": 2}
    assert report["winners"]["Irony"]["acc"]["systems"] == ["a.x"]
    assert report["winners"]["Humour"]["acc"]["systems"] == ["b.y"]
    assert report["winners"]["Irony"]["human_acc"] == 0.6
    assert report["per_instance"][0] == {
        "p_target_range": pytest.approx(0.4),
        "n_systems_target_first": 1,
        "n_systems": 2,
    }
    assert "robustness" in report["text"] and "Irony" in report["text"]


def test_arguments_are_checked_and_listed() -> None:
    scorer = StringScorer(choice_rule="argmax", choice_temperature="0.5", show_options="no")
    assert (scorer.rule, scorer.temperature, scorer.args["show_options"]) == ("argmax", 0.5, False)
    assert RatingScorer(scales="likely;possible").scales == ("likely", "possible")
    with pytest.raises(HarnessError, match=r"^scorer 'mcq_string': argument 'choice_rule': expected one of 'auto'"):
        StringScorer(choice_rule="max")
    with pytest.raises(HarnessError, match=r"^scorer 'mcq_label': argument 'choice_temperature': expected a positive"):
        LabelScorer(choice_temperature="inf")
    with pytest.raises(HarnessError, match=r"^scorer 'mcq_human': unknown argument 'n_split' \(accepted: .*n_splits"):
        HumanChoiceScorer(n_split=3)
    # The robustness report takes no argument, so any is a typo.
    with pytest.raises(HarnessError, match=r"^scorer 'mcq_robustness': unknown argument 'x' \(accepted: none\)$"):
        RobustnessScorer(x=1)
    common = ["n_resamples", "confidence", "choice_rule", "choice_temperature", "fit_epsilon", "variant"]
    assert LabelScorer.options.names() == [*common, "label_prefix"]
    assert EmbeddingScorer.options.names() == common
    assert RobustnessScorer.options.names() == []

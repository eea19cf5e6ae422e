"""Human data given only as proportions (``counts_known`` False): the distribution metrics are computed from the
proportions (and equal those of the same data given as counts), every value that needs individual people is
unavailable or left out with the reason, and never made up; by hand, then end to end on the mock model."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import harness.registry.manager
from harness.data.loaders import LoadedData
from harness.hookspecs import hookimpl
from harness.instances import ChoiceInstance, ClozeInstance, Instance
from harness.registry.manager import _collect, get_plugin_manager
from harness.requests import LoglikelihoodResponse, SampleWordsResponse, Surface, WordDistributionResponse
from harness.scorers.biased_estimator import BiasedEstimatorScorer
from harness.scorers.choice.common import ItemHuman, fit_metrics
from harness.scorers.choice.human import HumanChoiceScorer
from harness.scorers.choice.string_scores import StringScorer
from harness.scorers.distributions import counts_by_group, expand, split_halves, subsample
from harness.scorers.ece import EceScorer
from harness.scorers.entropy import EntropyScorer
from harness.scorers.exact_tvd import ExactTvdScorer
from harness.scorers.gap_predictors import GapPredictorsScorer
from harness.scorers.human_control import HumanControlScorer
from harness.scorers.next_token_accuracy import NextTokenAccuracyScorer
from harness.scorers.paper_provo import expand_responses
from harness.scorers.pos_tvd import PosTvdScorer
from harness.scorers.replacement import ReplacementScorer
from harness.scorers.sample_size import SampleSizeScorer
from harness.scorers.semantic_tvd import SemanticTvdScorer
from harness.scorers.token_level import TokenLevelScorer
from harness.scorers.top1 import Top1Scorer
from harness.scorers.tvd import TvdScorer
from harness.scoring.base import (
    PROPORTIONS_NOTE,
    ScorerUnavailable,
    counted_people_reason,
    counts_known,
    require_counted_people,
)
from tests.conftest import CliResult
from tests.helpers import samples_of

SHARES = {"a": 0.5, "b": 0.25, "c": 0.25}
COUNTS: dict[str, float] = {"a": 2, "b": 1, "c": 1}  # the same distribution, as numbers of people
PROPORTIONS = ClozeInstance(id="p", context="Once upon a", target="a", human_counts=SHARES, counts_known=False)
COUNTED = ClozeInstance(id="p", context="Once upon a", target="a", human_counts=COUNTS)
MODEL = SampleWordsResponse(counts={"a": 2, "b": 2}, n_requested=4)
PEOPLE_REASON = "1 of 1 instances give only proportions of people (no number of people), so {} cannot be computed"


def _rng() -> np.random.Generator:
    return np.random.default_rng(7)


# -- the instance types and the one helper --------------------------------------------------------------------------


def test_the_field_is_written_to_the_samples_only_when_false() -> None:
    assert COUNTED.counts_known is True and counts_known(COUNTED) and not counts_known(PROPORTIONS)
    assert COUNTED.human() == {"counts": COUNTS, "total": 4}  # unchanged for every existing task
    assert PROPORTIONS.human() == {"counts": SHARES, "total": 1.0, "counts_known": False}
    item = ChoiceInstance(id="c", options=("x", "y"), human_counts=(0.25, 0.75), counts_known=False)
    assert item.human()["counts_known"] is False and "counts_known" not in _choice((3, 1)).human()


def test_one_helper_words_the_reason() -> None:
    instances: list[Instance] = [COUNTED, PROPORTIONS, PROPORTIONS]
    needs = "the split-half human control"
    assert counted_people_reason([COUNTED], needs) is None
    assert counted_people_reason(instances, needs) == (
        "2 of 3 instances give only proportions of people (no number of people), so the split-half human control "
        "cannot be computed"
    )
    require_counted_people([COUNTED], needs)  # every instance counts people: nothing to say
    with pytest.raises(ScorerUnavailable, match=r"^2 of 3 instances give only proportions"):
        require_counted_people(instances, needs)


def test_proportions_are_never_expanded_into_people() -> None:
    for draw in (expand, lambda c: split_halves(c, _rng()), lambda c: subsample(c, 1, _rng()), expand_responses):
        with pytest.raises(ValueError, match="not a whole number of people"):
            draw(SHARES)
    assert expand({"a": 2.0, "b": 1}) == ["a", "a", "b"]  # a whole number written as a float still counts people
    assert counts_by_group(SHARES, {"a": "X", "b": "X", "c": "Y"}) == {"X": 0.75, "Y": 0.25}
    assert counts_by_group(COUNTS, {"a": "X", "b": "X", "c": "Y"}) == {"X": 3, "Y": 1}


# -- next-word scorers: distribution metrics from the proportions, equal to the counts' -----------------------------


def test_tvd_entropy_and_top1_by_hand() -> None:
    """Humans a .5, b .25, c .25 against the model's a 2, b 2 (a .5, b .5): TVD = (0 + .25 + .25) / 2 = .25; the
    human entropy is -(.5 log2 .5 + 2 * .25 log2 .25) = .5 + 1 = 1.5 bits; both top words are ``a`` (the model's
    tie a/b goes to ``a``), the corpus word."""
    for instance in (PROPORTIONS, COUNTED):
        assert TvdScorer().score(instance, MODEL, _rng())["tvd"] == 0.25
        entropy = EntropyScorer().score(instance, MODEL, _rng())
        assert entropy == {"entropy_human": 1.5, "entropy_model": 1.0}
        top1 = Top1Scorer().score(instance, MODEL, _rng())
        assert top1 == {
            "human_top_word": "a",
            "top1_human_guess": 0.5,
            "top1_human_majority": True,
            "model_top_word": "a",
            "top1_model": True,
            "top1_model_samples": 0.5,
        }
        assert Top1Scorer().score(instance, None, _rng())["top1_human_guess"] == 0.5  # a human-only row too


def test_ece_keeps_the_model_and_human_predictors_and_notes_the_oracle() -> None:
    scorer = EceScorer(n_splits=3)
    scorer.prepare([PROPORTIONS], [MODEL])
    oracle = "the oracle predictor and the heldout gold (random halves of the people)"
    assert scorer.notes[PROPORTIONS_NOTE] == (
        PEOPLE_REASON.format(oracle) + "; left out for those instances (each metric's n shows it)"
    )
    row = scorer.score(PROPORTIONS, MODEL, _rng())
    counted = scorer.score(COUNTED, MODEL, _rng())
    for key in ("pred_model", "conf_model", "pred_human", "conf_human", "gold_majority"):
        assert row[key] == counted[key], key
    assert row["pred_human"] == "a" and row["conf_human"] == 0.5 and row["correct_human_corpus"] is True
    assert row["gold_heldout"] is None and row["pred_oracle"] is None and row["correct_model_heldout"] is None
    assert len(counted["pred_oracle"]) == 3  # the counted instance is split as before
    metrics = scorer.aggregate([row], _rng())
    assert metrics["ece_human_corpus"].value == 0.5 and metrics["acc_model_corpus"].value == 1.0
    assert not any("oracle" in name or "heldout" in name for name in metrics)
    scorer.prepare([COUNTED], [MODEL])
    assert PROPORTIONS_NOTE not in scorer.notes


def test_paper_ece_reads_the_proportions_not_their_integer_parts() -> None:
    """``variant=paper`` turned the counts into ints; a proportion's int is 0, which would have emptied the humans."""
    scorer = EceScorer(variant="paper")
    scorer.prepare([PROPORTIONS], [MODEL])
    oracle = "the oracle gold (20-guess subsets of the people)"
    assert scorer.notes[PROPORTIONS_NOTE].startswith(PEOPLE_REASON.format(oracle))
    row = scorer.score(PROPORTIONS, None, _rng())
    assert row["pred_human"] == "a" and row["conf_human"] == 0.5 and row["gold_majority"] == ["a"]
    assert row["gold_oracle"] is None and row["correct_human_oracle"] is None
    counted = scorer.score(COUNTED, None, _rng())
    assert (counted["pred_human"], counted["conf_human"]) == ("a", 0.5)


@pytest.mark.parametrize(
    ("scorer", "needs"),
    [
        (HumanControlScorer(), "the split-half human control (random halves of the people)"),
        (HumanControlScorer(variant="paper"), "the split-half human control (random halves of the people)"),
        (ReplacementScorer(), "the replacement experiment (two disjoint groups of people drawn per context)"),
        (
            GapPredictorsScorer(),
            "the regressed TVD and its tvd_oracle feature (the model and the people against random halves of the "
            "people)",
        ),
    ],
    ids=["human_control", "human_control-paper", "replacement", "gap_predictors"],
)
def test_scorers_that_need_people_are_unavailable_with_the_reason(scorer: Any, needs: str) -> None:
    with pytest.raises(ScorerUnavailable) as caught:
        scorer.prepare([PROPORTIONS], [MODEL])
    assert str(caught.value) == PEOPLE_REASON.format(needs)


def test_human_control_still_runs_on_counts() -> None:
    scorer = HumanControlScorer(n_splits=2)
    scorer.prepare([COUNTED], [MODEL])
    assert len(scorer.score(COUNTED, MODEL, _rng())["tvd_human_halves"]) == 2


def test_sample_size_resamples_only_the_model() -> None:
    model = SampleWordsResponse(counts={"a": 30, "b": 20, "d": 10}, n_requested=60)
    scorer = SampleSizeScorer(sizes=[10, 40], n_repeats=5)
    row = scorer.score(PROPORTIONS, model, np.random.default_rng(3))
    counted = scorer.score(COUNTED, model, np.random.default_rng(3))
    assert set(row) == set(counted)
    for key, value in counted.items():
        assert row[key] == pytest.approx(value, abs=1e-12), key


def _pos_scorer() -> PosTvdScorer:
    scorer = PosTvdScorer(n_splits=4)
    tags = {"mat": "NOUN", "floor": "NOUN", "big": "ADJ", "chair": "NOUN", "quickly": "ADV"}
    scorer.tags = {("The cat sat on the", word): tag for word, tag in tags.items()}
    return scorer


def test_pos_tvd_sums_the_proportions_per_tag() -> None:
    """Humans mat .6, floor .2 (NOUN), big .2 (ADJ); model chair 5 (NOUN), quickly 5 (ADV): over POS, NOUN .8 vs .5,
    ADJ .2 vs 0, ADV 0 vs .5, so TVD = (.3 + .2 + .5) / 2 = .5, as in tests/test_pos_tvd.py with counts 3, 1, 1."""
    shares = {"mat": 0.6, "floor": 0.2, "big": 0.2}
    instance = ClozeInstance(
        id="t", context="The cat sat on the", target="mat", human_counts=shares, counts_known=False
    )
    model = SampleWordsResponse(counts={"chair": 5, "quickly": 5}, n_requested=10)
    row = _pos_scorer().score(instance, model, _rng())
    assert row["pos_human"] == pytest.approx({"ADJ": 0.2, "NOUN": 0.8})
    assert row["pos_tvd"] == pytest.approx(0.5)
    assert row["pos_tvd_human_halves"] is None and row["pos_tvd_model_half"] is None
    metrics = _pos_scorer().aggregate([row], _rng())
    assert set(metrics) == {"pos_tvd"}


def test_pos_tvd_notes_its_control(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.scorers.probes import spacy_docs

    def no_tagger(pipelines: Any) -> Any:
        raise ScorerUnavailable("no tagger in this test")

    monkeypatch.setattr(spacy_docs, "require_tagger", no_tagger)
    scorer = PosTvdScorer()
    with pytest.raises(ScorerUnavailable, match="no tagger"):
        scorer.prepare([PROPORTIONS], [MODEL])
    needs = "pos_tvd_human_halves and pos_tvd_model_half (random halves of the people)"
    assert scorer.notes[PROPORTIONS_NOTE].startswith(PEOPLE_REASON.format(needs))


def test_semantic_tvd_on_proportions(tmp_path: Path) -> None:
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("a 1.0 0.0\nb 0.9 0.1\nc 0.0 1.0\nd 0.1 0.9\n")
    model = SampleWordsResponse(counts={"a": 1, "d": 3}, n_requested=4)
    scorer = SemanticTvdScorer(vectors=str(vectors), n_splits=3)
    scorer.prepare([PROPORTIONS, COUNTED], [model, model])
    needs = "semantic_tvd_human_halves and semantic_tvd_model_half (random halves of the people)"
    assert scorer.notes[PROPORTIONS_NOTE].startswith(
        "1 of 2 instances give only proportions of people (no number of people), so " + needs
    )
    row = scorer.score(PROPORTIONS, model, _rng())
    counted = scorer.score(COUNTED, model, _rng())
    assert row["semantic_tvd"] == pytest.approx(counted["semantic_tvd"], abs=1e-12)
    assert row["semantic_tvd_human_halves"] is None and row["semantic_tvd_model_half"] is None
    assert counted["semantic_tvd_human_halves"] is not None


# -- the exact-distribution scorers ---------------------------------------------------------------------------------

WORD_SHARES = {"cat": 0.5, "car": 0.25, "dog": 0.25}
WORD_COUNTS = {"cat": 2, "car": 1, "dog": 1}


def _exact() -> WordDistributionResponse:
    """As in tests/test_word_distribution.py: q cat .4, dog .3, residual .3."""
    return WordDistributionResponse(
        probs={"cat": 0.4, "dog": 0.3},
        residual=0.3,
        surface={
            "cat": Surface(math.log(0.2), math.log(0.5), " ca", 0.3),
            "car": Surface(math.log(0.05), 0.0, " ca", 0.3),
            "dog": Surface(math.log(0.1), 0.0, " dog", 0.2),
            "the": Surface(math.log(0.25), 0.0, " the", 0.4),
        },
        top_tokens=[(" the", 0.4), (" ca", 0.3)],
        greedy="the",
        sampled={"cat": 3, "the": 1},
    )


def _word_instance(counts: Mapping[str, float], known: bool) -> ClozeInstance:
    return ClozeInstance(id="w", context="The", target="cat", human_counts=dict(counts), counts_known=known)


def test_exact_distribution_scorers_on_proportions() -> None:
    shares, counted = _word_instance(WORD_SHARES, False), _word_instance(WORD_COUNTS, True)
    exact = ExactTvdScorer(sizes=[1, 2], n_repeats=50, n_splits=3)
    exact.prepare([shares], [_exact()])
    assert exact.notes[PROPORTIONS_NOTE].startswith(
        PEOPLE_REASON.format("tvd_human_halves and tvd_exact_vs_half (random halves of the people)")
    )
    row = exact.score(shares, _exact(), np.random.default_rng(0))
    # humans cat .5 car .25 dog .25; q cat .4 dog .3, r .3: gap .1 + .25 + .05 = .4, T = .35, lower .05.
    assert row["tvd_exact"] == pytest.approx(0.35) and row["tvd_exact_lower"] == pytest.approx(0.05)
    assert row["tvd_sampled"] == pytest.approx(0.5)
    assert "tvd_human_halves" not in row and "tvd_exact_vs_half" not in row
    assert "sampling_bias_at_n1" in row and "tvd_sampled_at_n2" in row
    assert "tvd_human_halves" in exact.score(counted, _exact(), np.random.default_rng(0))

    token = TokenLevelScorer(n_splits=3)
    token.prepare([shares], [_exact()])
    oracle = "tvd_token_oracle (random halves of the people)"
    assert token.notes[PROPORTIONS_NOTE].startswith(PEOPLE_REASON.format(oracle))
    row = token.score(shares, _exact(), np.random.default_rng(0))
    # human first tokens " ca" .75 (cat, car), " dog" .25; model .3, .2, rest .5: (.45 + .05 + .5) / 2 = .5
    assert row["tvd_token_model"] == pytest.approx(0.5) and row["tvd_token_oracle"] is None
    assert row["top_token_human"] == " ca" and row["conf_token_human"] == 0.75

    accuracy = NextTokenAccuracyScorer().score(shares, _exact(), np.random.default_rng(0))
    assert accuracy["human_word"] == 0.5 and accuracy["human_token"] == 0.75
    biased = BiasedEstimatorScorer()
    assert biased.score(shares, _exact(), _rng()) == biased.score(counted, _exact(), _rng())


# -- multiple choice ------------------------------------------------------------------------------------------------


def _choice(counts: tuple[float, ...], known: bool = True, phenomenon: str = "Irony") -> ChoiceInstance:
    return ChoiceInstance(
        id=f"{phenomenon}-{len(counts)}-{known}",
        phenomenon=phenomenon,
        item_id=1,
        description="Interpret the story.",
        scenario="Ann says: 'Lovely weather.' It pours. What does Ann mean?",
        options=("The weather is nice.", "The weather is bad.", "Ann likes rain.")[: len(counts)],
        target=1,
        human_counts=counts,
        counts_known=known,
    )


PARAMS: dict[str, Any] = {
    "option_orders": 2,
    "order_seed": 0,
    "label_style": "numbers",
    "prompt_template": "{description}\n\n{scenario}\n\n{options}Answer:",
}


def _answers() -> dict[str, Any]:
    """log P(option | prompt) -3 and -0.5 under I, -1.5 and -0.2 under I0, in both orders."""
    answers: dict[str, Any] = {}
    for o in range(2):
        answers |= {
            f"o{o}/I/0": LoglikelihoodResponse([-3.0], ["t"]),
            f"o{o}/I0/0": LoglikelihoodResponse([-1.5], ["t"]),
            f"o{o}/I/1": LoglikelihoodResponse([-0.5], ["t"]),
            f"o{o}/I0/1": LoglikelihoodResponse([-0.2], ["t"]),
        }
    return answers


def test_choice_distribution_metrics_equal_the_counts_and_the_likelihoods_are_left_out() -> None:
    shares, counted = _choice((0.4, 0.6), known=False), _choice((40, 60))
    scorer = StringScorer()
    scorer.task_params = dict(PARAMS)
    scorer.prepare([shares], [_answers()])
    needs = "ll_multinomial and ll_binomial (likelihoods of the numbers of people choosing each option)"
    assert scorer.notes[PROPORTIONS_NOTE].startswith(PEOPLE_REASON.format(needs))
    row = scorer.score(shares, _answers(), _rng())
    p1 = math.exp(-0.5) / (math.exp(-3) + math.exp(-0.5))
    assert row["string.prob"]["p"] == pytest.approx([1 - p1, p1])
    assert row["string.prob"]["tvd"] == pytest.approx(abs(p1 - 0.6)) and row["string.prob"]["acc"] == 1.0
    metrics = scorer.aggregate([row], _rng())
    counted_scorer = StringScorer()
    counted_scorer.task_params = dict(PARAMS)
    counted_metrics = counted_scorer.aggregate([counted_scorer.score(counted, _answers(), _rng())], _rng())
    for name in ("string.prob/acc", "string.prob/tvd", "string.prob/logprob_per_choice"):
        assert metrics[name].value == pytest.approx(counted_metrics[name].value, abs=1e-9), name
    assert "string.prob/ll_multinomial" in counted_metrics and "string.prob/ll_binomial" in counted_metrics
    assert not any(name.endswith(("ll_multinomial", "ll_binomial")) for name in metrics)


def test_fit_on_proportions_weighs_items_equally() -> None:
    """Two items, model p = (.5, .5) and (.9, .1) (epsilon 0): the mean log-probability of one person's choice is
    .25 log .5 + .75 log .5 = log .5 for the first (people .25/.75) and log .9 for the second (people 1/0); their
    mean over items, whatever the items' numbers of people."""
    humans = [ItemHuman("A", (0.25, 0.75), 1, counts_known=False), ItemHuman("A", (1.0, 0.0), 0, counts_known=False)]
    fit = fit_metrics(humans, [[0.5, 0.5], [0.9, 0.1]], epsilon=0.0)
    assert fit == {"logprob_per_choice": pytest.approx((math.log(0.5) + math.log(0.9)) / 2)}
    assert fit_metrics(humans[:1], [[0.0, 1.0]], epsilon=0.0) == {"logprob_per_choice": float("-inf")}


def test_human_choice_row_on_proportions() -> None:
    scorer = HumanChoiceScorer(n_splits=4)
    scorer.task_params = dict(PARAMS)
    items = [_choice((0.3, 0.6, 0.1), known=False), _choice((0.5, 0.5), known=False, phenomenon="Humour")]
    scorer.prepare(list(items), [None, None])
    assert scorer.notes[PROPORTIONS_NOTE].startswith(
        "2 of 2 instances give only proportions of people (no number of people), so the split-half human control "
        "(random halves of the people) cannot be computed"
    )
    rows = [scorer.score(item, None, _rng()) for item in items]
    assert rows[0]["human"]["acc"] == pytest.approx(0.6) and rows[0]["human"]["majority_correct"] == 1.0
    assert rows[1]["human"]["majority_correct"] == 0.5 and rows[1]["human"]["splits"] is None
    metrics = scorer.aggregate(rows, _rng())
    assert metrics["human/acc"].value == pytest.approx(0.55)
    assert metrics["chance/tvd"].value == pytest.approx((0.8 / 3 + 0.0) / 2)
    # every item weighs the same: (log 1/3 + log 1/2) / 2
    assert metrics["chance/logprob_per_choice"].value == pytest.approx((math.log(1 / 3) + math.log(1 / 2)) / 2)
    assert not any("control" in name for name in metrics)


# -- end to end on the mock model -----------------------------------------------------------------------------------


def _cloze_instances() -> list[Instance]:
    contexts = ["The cat sat on the", "Once upon a", "She opened the", "It was a dark and", "He drank a cup of"]
    shares = [
        {"mat": 0.6, "floor": 0.3, "sofa": 0.1},
        {"time": 0.9, "hill": 0.1},
        {"door": 0.5, "window": 0.25, "box": 0.25},
        {"stormy": 0.7, "cold": 0.2, "quiet": 0.1},
        {"tea": 0.55, "coffee": 0.45},
    ]
    return [
        ClozeInstance(id=f"c{k}", context=c, target=max(s, key=s.__getitem__), human_counts=s, counts_known=False)
        for k, (c, s) in enumerate(zip(contexts, shares, strict=True))
    ]


def _choice_instances() -> list[Instance]:
    shares = [(0.2, 0.7, 0.1), (0.5, 0.5), (0.1, 0.3, 0.6), (0.25, 0.75)]
    return [
        ChoiceInstance(
            id=f"Irony-{k}",
            phenomenon="Irony" if k % 2 else "Humour",
            item_id=k,
            description="Interpret the story.",
            scenario=f"Story {k}: Ann says it is lovely weather while it pours. What does Ann mean?",
            options=("The weather is nice.", "The weather is bad.", "Ann likes rain.")[: len(s)],
            target=1,
            human_counts=s,
            counts_known=False,
        )
        for k, s in enumerate(shares)
    ]


def load_proportions(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """A stand-in for a user's data set of proportions (no number of people)."""
    instances = _cloze_instances() if options.get("kind") == "cloze" else _choice_instances()
    return LoadedData(instances, "sha256:" + "0" * 64, {"path": "in-memory test data"})


class _ProportionsPlugin:
    @staticmethod
    @hookimpl
    def register_loaders(register: Callable[[str, Any], None]) -> None:
        register("proportions_test", load_proportions)


@pytest.fixture
def proportions_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    pm = get_plugin_manager(load_entry_points=False)
    pm.register(_ProportionsPlugin, name="proportions-test")
    monkeypatch.setattr(harness.registry.manager, "_REGISTRY", _collect(pm))


CLOZE_TASK = """\
task: proportions-cloze
version: 1
description: next words with human proportions only
loader: proportions_test
data: {kind: cloze}
request: sample_words
params: {n_samples: 50}
scorers: [tvd, human_control, ece, top1, entropy, replacement, gap_predictors, sample_size]
"""

CHOICE_TASK = """\
task: proportions-mcq
version: 1
description: multiple choice with human proportions only
loader: proportions_test
data: {kind: choice}
request: multiple_choice
params:
  option_orders: 2
  order_seed: 0
  label_style: numbers
  prompt_template: "{description}\\n\\n{scenario}\\n\\n{options}Answer:"
scorers: [mcq_human, mcq_string, mcq_label, mcq_robustness]
"""


def _run(cli: Callable[..., CliResult], tmp_path: Path, text: str, task: str) -> tuple[dict[str, Any], list[dict]]:
    path = tmp_path / f"{task}.yaml"
    path.write_text(text)
    out = tmp_path / "runs"
    cli("run", "--tasks", str(path), "--model", "mock:p", "--data-dir", str(tmp_path), "--output-dir", str(out))
    results = json.loads((out / "mock__p" / "results.json").read_text())
    return results, [json.loads(line) for line in samples_of(out / "mock__p", task).open()]


def test_a_cloze_run_on_proportions_end_to_end(
    cli: Callable[..., CliResult], tmp_path: Path, proportions_registry: None
) -> None:
    results, samples = _run(cli, tmp_path, CLOZE_TASK, "proportions-cloze")
    task = "proportions-cloze"
    reason = "5 of 5 instances give only proportions of people (no number of people), so {} cannot be computed"
    assert results["unavailable"][task] == {
        "human_control": reason.format("the split-half human control (random halves of the people)"),
        "replacement": reason.format("the replacement experiment (two disjoint groups of people drawn per context)"),
        "gap_predictors": reason.format(
            "the regressed TVD and its tvd_oracle feature (the model and the people against random halves of the "
            "people)"
        ),
    }
    assert results["notes"][task]["ece"][PROPORTIONS_NOTE].startswith(
        reason.format("the oracle predictor and the heldout gold (random halves of the people)")
    )
    metrics = results["metrics"][task]
    for name in ("tvd", "entropy_model", "entropy_human", "top1_model", "top1_human_majority", "ece_model_corpus",
                 "ece_human_corpus", "acc_human_majority", "tvd_at_n10"):  # fmt: skip
        assert name in metrics and metrics[name]["n"] == 5, name
    assert not any("oracle" in name or "heldout" in name or "halves" in name for name in metrics)
    assert all(sample["human"]["counts_known"] is False for sample in samples)
    # The per-instance TVD is the TVD against the proportions themselves.
    first = samples[0]
    model = first["response"]["counts"]
    total = sum(model.values())
    shares = first["human"]["counts"]
    by_hand = 0.5 * sum(abs(model.get(w, 0) / total - shares.get(w, 0.0)) for w in set(model) | set(shares))
    assert first["metrics"]["tvd"] == pytest.approx(by_hand, abs=1e-12)


def test_a_choice_run_on_proportions_end_to_end(
    cli: Callable[..., CliResult], tmp_path: Path, proportions_registry: None
) -> None:
    results, samples = _run(cli, tmp_path, CHOICE_TASK, "proportions-mcq")
    task = "proportions-mcq"
    assert task not in results["unavailable"]
    notes = results["notes"][task]
    assert notes["mcq_human"][PROPORTIONS_NOTE].startswith("4 of 4 instances give only proportions of people")
    assert "ll_multinomial" in notes["mcq_string"][PROPORTIONS_NOTE]
    metrics = results["metrics"][task]
    for name in ("human/acc", "human/majority_acc", "chance/tvd", "string.prob/acc", "string.prob/tvd",
                 "string.prob/logprob_per_choice", "label.prob/tvd", "human/acc/Irony"):  # fmt: skip
        assert name in metrics, name
    assert metrics["human/acc"]["value"] == pytest.approx((0.7 + 0.5 + 0.3 + 0.75) / 4)
    assert not any("control" in name or "ll_" in name for name in metrics)
    assert all(sample["human"]["counts_known"] is False for sample in samples)

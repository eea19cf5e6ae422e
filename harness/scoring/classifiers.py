"""Answer classifiers: what maps a free-generation answer to one of a multiple-choice item's options, or to none.

A plugin registers an :class:`AnswerClassifier` subclass through the ``register_answer_classifiers`` hook; the
free-generation scorer (``mcq_free``) takes its ``name`` as its ``classifier`` argument and passes its
``classifier_args`` to the constructor. The built-in ``match_similarity`` lives in ``harness.scorers.choice.classify``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.options import Options


@dataclass(frozen=True)
class ClassifyItem:
    """One answer to classify and the item it answers.

    ``options`` are in the item's ORIGINAL order, whatever order the prompt showed them in, so that a
    classification means the same option across shuffled presentations. ``labels[k]`` is the label option ``k``
    was shown with (``"3"``, ``"C"``), or ``labels`` is None when the prompt did not show the options, in which
    case a leading ``3`` in the answer means nothing.
    """

    #: The answer to classify (the free-generation scorer passes the first non-blank line of a sample, stripped).
    text: str
    #: The item's option texts in their ORIGINAL order (``ChoiceInstance.options``), whatever order the prompt used.
    options: tuple[str, ...]
    #: ``labels[k]``: the label option ``k`` was shown with (``"3"``, ``"C"``), one per option; None when the
    #: prompt did not show the options, so a leading ``3`` in the answer means nothing.
    labels: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.labels is not None and len(self.labels) != len(self.options):
            raise ValueError(f"{len(self.labels)} labels for {len(self.options)} options")


@dataclass(frozen=True)
class Classification:
    """Which option an answer was mapped to and on what evidence, so results can say how much was guessed.

    ``option`` indexes the item's options in original order (None: unclassified); ``how`` names the evidence
    (the built-in classifier's are ``harness.scorers.choice.classify.HOWS``: ``label``, ``alias``, ``text``,
    ``similarity``, ``unclassified``); ``similarity`` is the best cosine whenever similarity was computed,
    including for answers it left unclassified, so a threshold can be re-examined after the fact.
    """

    #: Index of the chosen option in the item's ``options`` (original order); None: unclassified (counts as no
    #: choice, and in the ``unclassified`` rate).
    option: int | None
    #: The evidence, recorded per answer in the samples file: the built-in classifier's are ``label``, ``alias``,
    #: ``text``, ``similarity`` and ``unclassified``.
    how: str
    #: The best cosine whenever similarity was computed, also for an answer it left unclassified (so a threshold can
    #: be re-examined later); None when it was not.
    similarity: float | None = None


class AnswerClassifier(ABC):
    """Base class for classifiers registered through the ``register_answer_classifiers`` hook.

    Arguments come from the free-generation scorer's ``classifier_args`` (task YAML or ``--task-args``), so a typo
    must fail loudly before any model runs. A subclass declares what it accepts in ``options`` and passes its
    keyword arguments on to this constructor, which checks them and keeps their values (converted, defaults filled
    in) in ``self.settings``; an argument ``options`` does not declare is an error naming it. (A subclass that
    consumes its own keyword arguments passes on only the rest, which, with no ``options``, must be none.)
    """

    #: Registry name: what the free-generation scorer's ``classifier`` argument takes.
    name: ClassVar[str] = ""
    #: The arguments the constructor accepts (``classifier_args``), listed in the error for an unknown one.
    options: ClassVar[Options] = Options()
    #: The extras of the harness this classifier needs (``harness.extras.EXTRAS``), checked with its scorer's.
    extras: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **args: Any) -> None:
        self.settings: dict[str, Any] = self.options.parse_arguments(args, f"answer classifier '{self.name}'")

    @abstractmethod
    def classify(self, items: list[ClassifyItem]) -> list[Classification]:
        """One classification per item, in order.

        Batched so that a classifier that embeds texts can embed all of a task's answers and options at once.
        """

    def describe(self) -> dict[str, Any]:
        """Provenance for ``results.json`` (model, threshold, ...): a mapping is part of the measurement."""
        return {"classifier": self.name}

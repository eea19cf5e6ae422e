"""Request kinds: what a task asks a model, one module per kind (``base.py`` says what a kind owns).

Built-in kinds are registered through the same ``register_request_kinds`` hook a plugin uses
(``plugins/builtin.py``); look one up with ``harness.registry.manager.get_registry().kind(name)``.
"""

from harness.kinds.base import Need, RequestKind
from harness.kinds.generate import GenerateKind
from harness.kinds.multiple_choice import MultipleChoiceKind
from harness.kinds.option_probs import OptionProbsKind
from harness.kinds.sample_words import SampleWordsKind
from harness.kinds.scores import LoglikelihoodKind, NextTokenKind, SimilarityKind
from harness.kinds.word_distribution import WordDistributionKind

#: The kinds the harness itself provides, in the order ``harness ls kinds`` shows them.
BUILTIN_KINDS: tuple[type[RequestKind], ...] = (
    SampleWordsKind,
    WordDistributionKind,
    GenerateKind,
    MultipleChoiceKind,
    LoglikelihoodKind,
    NextTokenKind,
    SimilarityKind,
    OptionProbsKind,
)

__all__ = ["BUILTIN_KINDS", "Need", "RequestKind"]

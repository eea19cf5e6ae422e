"""Built-in scorers, registered through the ``register_scorers`` hook like any plugin's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.hookspecs import hookimpl
from scorers.ece import EceScorer
from scorers.entropy import EntropyScorer
from scorers.human_control import HumanControlScorer
from scorers.top1 import Top1Scorer
from scorers.tvd import TvdScorer
from scorers.variability import LexicalScorer, SemanticScorer, SyntacticScorer


@hookimpl
def register_scorers(register: Callable[[Any], None]) -> None:
    for scorer in (
        TvdScorer,
        HumanControlScorer,
        EceScorer,
        Top1Scorer,
        EntropyScorer,
        LexicalScorer,
        SyntacticScorer,
        SemanticScorer,
    ):
        register(scorer)

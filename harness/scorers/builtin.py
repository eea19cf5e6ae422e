"""Built-in scorers, registered through the ``register_scorers`` hook like any plugin's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.api import hookimpl
from harness.scorers.biased_estimator import BiasedEstimatorScorer
from harness.scorers.choice.embedding import EmbeddingScorer
from harness.scorers.choice.free_generation import FreeGenerationScorer
from harness.scorers.choice.human import HumanChoiceScorer
from harness.scorers.choice.label_scores import LabelScorer
from harness.scorers.choice.rating import RatingScorer
from harness.scorers.choice.reported import ReportedScorer
from harness.scorers.choice.robustness import RobustnessScorer
from harness.scorers.choice.string_scores import StringScorer
from harness.scorers.ece import EceScorer
from harness.scorers.entropy import EntropyScorer
from harness.scorers.exact_tvd import ExactTvdScorer
from harness.scorers.gap_predictors import GapPredictorsScorer
from harness.scorers.human_control import HumanControlScorer
from harness.scorers.next_token_accuracy import NextTokenAccuracyScorer
from harness.scorers.pos_tvd import PosTvdScorer
from harness.scorers.replacement import ReplacementScorer
from harness.scorers.sample_size import SampleSizeScorer
from harness.scorers.semantic_tvd import SemanticTvdScorer
from harness.scorers.token_level import TokenLevelScorer
from harness.scorers.top1 import Top1Scorer
from harness.scorers.tvd import TvdScorer
from harness.scorers.variability import LexicalScorer, SemanticScorer, SyntacticScorer


@hookimpl
def register_scorers(register: Callable[[Any], None]) -> None:
    for scorer in (
        TvdScorer,
        HumanControlScorer,
        EceScorer,
        Top1Scorer,
        EntropyScorer,
        SampleSizeScorer,
        PosTvdScorer,
        SemanticTvdScorer,
        ReplacementScorer,
        GapPredictorsScorer,
        ExactTvdScorer,
        BiasedEstimatorScorer,
        TokenLevelScorer,
        NextTokenAccuracyScorer,
        LexicalScorer,
        SyntacticScorer,
        SemanticScorer,
        HumanChoiceScorer,
        FreeGenerationScorer,
        StringScorer,
        LabelScorer,
        RatingScorer,
        EmbeddingScorer,
        ReportedScorer,
        RobustnessScorer,
    ):
        register(scorer)


@hookimpl
def register_answer_classifiers(register: Callable[[Any], None]) -> None:
    # Imported when the hook runs, not with this module, so importing the built-ins stays as light as it was.
    from harness.scorers.choice.classify import MatchThenSimilarityClassifier

    register(MatchThenSimilarityClassifier)

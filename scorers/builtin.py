"""Built-in scorers, registered through the ``register_scorers`` hook like any plugin's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.hookspecs import hookimpl
from scorers.biased_estimator import BiasedEstimatorScorer
from scorers.choice.embedding import EmbeddingScorer
from scorers.choice.free_generation import FreeGenerationScorer
from scorers.choice.human import HumanChoiceScorer
from scorers.choice.label_scores import LabelScorer
from scorers.choice.rating import RatingScorer
from scorers.choice.reported import ReportedScorer
from scorers.choice.robustness import RobustnessScorer
from scorers.choice.string_scores import StringScorer
from scorers.ece import EceScorer
from scorers.entropy import EntropyScorer
from scorers.exact_tvd import ExactTvdScorer
from scorers.gap_predictors import GapPredictorsScorer
from scorers.human_control import HumanControlScorer
from scorers.next_token_accuracy import NextTokenAccuracyScorer
from scorers.pos_tvd import PosTvdScorer
from scorers.replacement import ReplacementScorer
from scorers.sample_size import SampleSizeScorer
from scorers.semantic_tvd import SemanticTvdScorer
from scorers.token_level import TokenLevelScorer
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
    from scorers.choice.classify import MatchThenSimilarityClassifier

    register(MatchThenSimilarityClassifier)

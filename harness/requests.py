"""The request and response types of every built-in request kind, in one place for adapters and scorers.

Each type is defined with its kind (``harness/kinds/``); this module is the vocabulary an adapter author imports.
Every request and response is a plain dataclass that round-trips through JSON, because responses are stored as
they arrive (see ``harness.store``) and a resumed or re-scored run reads them back without the model.
"""

from __future__ import annotations

from harness.decoding import DECODING_KEYS, DecodingConfig
from harness.kinds.generate import FINISH_REASONS, GenerateRequest, GenerateResponse
from harness.kinds.multiple_choice import MultipleChoiceRequest, MultipleChoiceResponse
from harness.kinds.sample_words import SampleWordsRequest, SampleWordsResponse, WordMode
from harness.kinds.scores import (
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
    SimilarityRequest,
    SimilarityResponse,
)
from harness.kinds.word_distribution import Surface, WordDistributionRequest, WordDistributionResponse
from harness.usage import add_usage

#: The requests a multiple-choice scorer may put in its bundle, and their responses.
ScoringRequest = LoglikelihoodRequest | NextTokenRequest | SimilarityRequest | GenerateRequest
ScoringResponse = LoglikelihoodResponse | NextTokenResponse | SimilarityResponse | GenerateResponse

__all__ = [
    "DECODING_KEYS",
    "FINISH_REASONS",
    "DecodingConfig",
    "GenerateRequest",
    "GenerateResponse",
    "LoglikelihoodRequest",
    "LoglikelihoodResponse",
    "MultipleChoiceRequest",
    "MultipleChoiceResponse",
    "NextTokenRequest",
    "NextTokenResponse",
    "SampleWordsRequest",
    "SampleWordsResponse",
    "ScoringRequest",
    "ScoringResponse",
    "SimilarityRequest",
    "SimilarityResponse",
    "Surface",
    "WordDistributionRequest",
    "WordDistributionResponse",
    "WordMode",
    "add_usage",
]

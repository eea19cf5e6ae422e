"""The request and response types of every built-in request kind: the vocabulary an adapter author imports.

Each kind's types live in a module of their own here, below the kinds that use them (``harness/kinds/``), so that
adapters, scorers and the model interface can import them without importing the kinds' machinery. Every request
and response is a plain dataclass that round-trips through JSON, because responses are stored as they arrive (see
``harness.outputs.store``) and a resumed or re-scored run reads them back without the model.
"""

from __future__ import annotations

from harness.decoding import DECODING_KEYS, DecodingConfig
from harness.requests.generate import FINISH_REASONS, GenerateRequest, GenerateResponse
from harness.requests.multiple_choice import MultipleChoiceRequest, MultipleChoiceResponse
from harness.requests.option_probs import OptionProbsRequest, OptionProbsResponse
from harness.requests.sample_words import SampleWordsRequest, SampleWordsResponse, WordMode
from harness.requests.scores import (
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
    SimilarityRequest,
    SimilarityResponse,
)
from harness.requests.word_distribution import Surface, WordDistributionRequest, WordDistributionResponse
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
    "OptionProbsRequest",
    "OptionProbsResponse",
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

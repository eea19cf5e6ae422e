"""The scoring kinds a multiple-choice scorer asks for: ``loglikelihood``, ``next_token`` and ``similarity``.

None of them is a task kind: they are only asked inside a ``multiple_choice`` bundle, each distinct request once
per block of items. Their stored records carry a ``kind`` field, which is how a bundle's record is read back.
"""

from __future__ import annotations

from harness.kinds.base import RequestKind
from harness.requests.scores import (
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
    SimilarityRequest,
    SimilarityResponse,
)


class LoglikelihoodKind(RequestKind):
    """log P(continuation | context), token by token."""

    name = "loglikelihood"
    request_type = LoglikelihoodRequest
    response_type = LoglikelihoodResponse


class NextTokenKind(RequestKind):
    """Label probabilities of a multiple-choice prompt."""

    name = "next_token"
    request_type = NextTokenRequest
    response_type = NextTokenResponse


class SimilarityKind(RequestKind):
    """Cosines between the model's representations of a prompt and of each option."""

    name = "similarity"
    request_type = SimilarityRequest
    response_type = SimilarityResponse

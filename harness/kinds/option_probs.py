"""``option_probs``: the probability a system gave each option of a multiple-choice item, as it reported it.

Why a kind of its own: a study that released its models' per-option probabilities (Hu et al., 2023) or a user who
scored options with their own pipeline has a distribution per item, not token log-probabilities the harness could
turn into one. This kind asks for that distribution as it is, so that it is scored by the same multiple-choice code
as every way of asking (``mcq_reported``, ``scorers/choice/reported.py``): accuracy, TVD to people, the fits.

It is not a task kind: it is asked inside a ``multiple_choice`` bundle. No language model computes it; adapters that
hold recorded outputs (``replay``) answer it, looking the item up by ``instance_id``, which is why the request
carries it. The response holds one distribution per option order the source asked in (Hu et al. asked each item in
5 shuffled orders, their seeds), each already mapped back to the instance's own option order; a source with one
distribution per item gives one order.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.kinds.base import RequestKind
from harness.requests.option_probs import OptionProbsRequest, OptionProbsResponse

if TYPE_CHECKING:
    from harness.models import ModelAdapter


class OptionProbsKind(RequestKind):
    """A reported distribution over a multiple-choice item's options (answered from recorded outputs)."""

    name = "option_probs"
    request_type = OptionProbsRequest
    response_type = OptionProbsResponse

    def check_response(self, adapter: ModelAdapter, request: Any, response: Any) -> None:
        """At least one order; each a probability (finite, >= 0, not all 0) for every option of the item."""
        where = f"model {adapter.spec.label}: item {request.instance_id}"
        if not response.orders:
            raise HarnessError(f"{where}: no option distribution")
        k = len(request.options)
        for order in response.orders:
            if len(order) != k:
                raise HarnessError(f"{where}: {len(order)} option probabilities for {k} options")
            if not all(math.isfinite(p) and p >= 0 for p in order) or sum(order) <= 0:
                raise HarnessError(f"{where}: option probabilities must be non-negative and not all 0, got {order}")

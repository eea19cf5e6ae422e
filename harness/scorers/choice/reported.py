"""``mcq_reported``: the option distribution a system reported, scored like every way of asking.

Some systems come with their choice distributions already made: a study's released per-option probabilities (Hu
et al., 2023, read by ``--model replay:NAME --model-args format=hu2023``), or a user's own pipeline written as
``{"id": ..., "option_probs": [...]}`` lines. This scorer asks for that distribution (an ``option_probs`` request,
``harness/kinds/option_probs.py``; only adapters with recorded outputs answer it) and scores it with the shared
code of ``scorers/choice/common.py``, so its accuracy, TVD to people and fits mean exactly what the other methods'
do. One system, ``reported.probs``.

Each option order the source asked in (Hu et al.'s 5 seeds, already mapped back to the instance's option order)
is one order here: ``acc`` is the mean over orders of "the most probable option is the target", ``p`` the mean
of the orders' distributions (renormalised, under the default ``auto`` rule: the probabilities are used as they
are). ``scores`` in the samples file holds one row per order, so its length is the item's number of orders; the
task's ``option_orders`` is not used.
"""

from __future__ import annotations

from typing import Any, ClassVar

from harness.api import ChoiceInstance, Instance, OptionProbsRequest, OptionProbsResponse
from harness.scorers.choice.common import ChoiceScorer


class ReportedScorer(ChoiceScorer):
    name: ClassVar[str] = "mcq_reported"
    method: ClassVar[str] = "reported"
    requested_kinds: ClassVar[frozenset[str]] = frozenset({"option_probs"})
    systems: dict[str, str] = {"probs": "probability"}

    def requests(self, instance: Instance, params: dict[str, Any], seed: int) -> dict[str, Any]:
        item = self.item(instance)
        return {"probs": OptionProbsRequest(item.id, item.options)}

    def item_scores(self, instance: ChoiceInstance, answers: dict[str, Any]) -> dict[str, list[list[float]]]:
        return {"probs": [list(order) for order in _answer(instance, answers["probs"]).orders]}


def _answer(instance: ChoiceInstance, answer: Any) -> OptionProbsResponse:
    if not isinstance(answer, OptionProbsResponse):
        raise ValueError(f"item {instance.id}: expected an option_probs answer, got {answer!r}")
    k = len(instance.options)
    if not answer.orders or any(len(order) != k for order in answer.orders):
        raise ValueError(f"item {instance.id}: expected {k} option probabilities per order, got {answer.orders!r}")
    return answer

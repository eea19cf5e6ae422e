"""``mcq_embedding``: cosine similarity between the model's representation of the prompt and of each option.

The prompt is shown without the options (description, scenario, answer cue); the model's own hidden states give
the representations (``harness.requests.SimilarityRequest``: the last layer's state at the last token for causal
LMs; encoder and input-conditioned decoder states for encoder-decoder models). The score of an option is its
cosine with the prompt. The prompt does not show the options, so option order does not enter it and every order
gives the same scores.
"""

from __future__ import annotations

from typing import Any, ClassVar

from harness.api import ChoiceInstance, Instance, SimilarityRequest, SimilarityResponse, render_choice_prompt
from harness.scorers.choice.common import ChoiceScorer, order_count


class EmbeddingScorer(ChoiceScorer):
    name: ClassVar[str] = "mcq_embedding"
    method: ClassVar[str] = "embedding"
    requested_kinds: ClassVar[frozenset[str]] = frozenset({"similarity"})
    systems: dict[str, str] = {"cosine": "similarity"}

    def requests(self, instance: Instance, params: dict[str, Any], seed: int) -> dict[str, Any]:
        item = self.item(instance)
        return {"cosine": SimilarityRequest(render_choice_prompt(item, params, None), item.options)}

    def item_scores(self, instance: ChoiceInstance, answers: dict[str, Any]) -> dict[str, list[list[float]]]:
        answer = answers["cosine"]
        if not isinstance(answer, SimilarityResponse) or len(answer.cosines) != len(instance.options):
            raise ValueError(f"item {instance.id}: expected one cosine per option, got {answer!r}")
        return {"cosine": [list(answer.cosines)] * order_count(self.task_params)}

"""``mcq_label``: all options shown with labels; the model's probability of each label as the next token.

Per option order, the prompt lists the options labelled by position (``1) ...``, or ``A) ...`` with
``label_style: letters``) and ends with the answer cue; the candidates are the labels as continuations
(``" 1"``, ``label_prefix`` + label). Scores of the option shown at position j, from l = log P(label_j | I) and
l0 = log P(label_j | I0), I0 being the same prompt without the scenario:

- ``prob``: P(l|I);
- ``prior_corrected``: P(l|I) / P(l|I0);
- ``surprisal_reduction``: surprisal under I0 minus surprisal under I, l - l0.

``surprisal_reduction`` is the log of ``prior_corrected``: the two pick the same option and, under the ``auto``
choice rule, give the same choice distribution; they differ under other rules. A label the tokenizer splits
(SmolLM2: ``" 1"`` is ``" "`` then ``"1"``) is scored by the probability of all its tokens; ``notes`` says so.
"""

from __future__ import annotations

from typing import Any, ClassVar

from harness.api import (
    ChoiceInstance,
    Instance,
    NextTokenRequest,
    NextTokenResponse,
    Option,
    Options,
    option_labels,
    option_order,
    render_choice_prompt,
)
from harness.api import text as text_value
from harness.scorers.choice.common import ChoiceScorer, order_count


class LabelScorer(ChoiceScorer):
    name: ClassVar[str] = "mcq_label"
    method: ClassVar[str] = "label"
    requested_kinds: ClassVar[frozenset[str]] = frozenset({"next_token"})
    systems: dict[str, str] = {
        "prob": "log_probability",
        "prior_corrected": "log_probability",
        "surprisal_reduction": "log_scale",
    }
    options: ClassVar[Options] = Options(
        Option("label_prefix", text_value, " ", "what precedes a label as a continuation"),
    )

    def requests(self, instance: Instance, params: dict[str, Any], seed: int) -> dict[str, Any]:
        item = self.item(instance)
        labels = option_labels(len(item.options), str(params.get("label_style", "numbers")))
        candidates = tuple(self.args["label_prefix"] + label for label in labels)
        out: dict[str, Any] = {}
        for o in range(order_count(params)):
            order = option_order(item, o, int(params.get("order_seed", 0)))
            out[f"o{o}/I"] = NextTokenRequest(render_choice_prompt(item, params, order), candidates)
            out[f"o{o}/I0"] = NextTokenRequest(render_choice_prompt(item, params, order, prior=True), candidates)
        return out

    def item_scores(self, instance: ChoiceInstance, answers: dict[str, Any]) -> dict[str, list[list[float]]]:
        params = self.task_params
        scores: dict[str, list[list[float]]] = {name: [] for name in self.systems}
        for o in range(order_count(params)):
            order = option_order(instance, o, int(params.get("order_seed", 0)))
            cond, prior = _answer(answers[f"o{o}/I"]), _answer(answers[f"o{o}/I0"])
            if max(cond.n_tokens) > 1:
                self.notes["multi_token_labels"] = (
                    f"the model's tokenizer splits labels into up to {max(cond.n_tokens)} tokens (first tokens "
                    f"{cond.tokens!r}); each label is scored by the probability of all its tokens"
                )
            rows: dict[str, list[float]] = {name: [0.0] * len(order) for name in self.systems}
            for position, k in enumerate(order):
                lp, lp0 = cond.logprobs[position], prior.logprobs[position]
                rows["prob"][k] = lp
                rows["prior_corrected"][k] = lp - lp0
                rows["surprisal_reduction"][k] = lp - lp0
            for name in self.systems:
                scores[name].append(rows[name])
        return scores


def _answer(answer: Any) -> NextTokenResponse:
    if not isinstance(answer, NextTokenResponse):
        raise ValueError(f"expected a next_token answer, got {answer!r}")
    return answer

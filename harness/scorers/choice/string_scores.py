"""``mcq_string``: each option scored on its own as a continuation of the prompt.

For option o after prompt I (and after the prior prompt I0, the same prompt without the scenario), with token
log-probabilities l_t = log P(o_t | I, o_<t), over the option's T tokens:

- ``prob``: P(o|I) = exp(sum_t l_t);
- ``token_prob``: the average per-token probability, mean_t exp(l_t);
- ``logprob``: the average log-probability (negative mean surprisal), mean_t l_t;
- ``prior_corrected``: P(o|I) / P(o|I0), the option's probability relative to its prior;
- ``surprisal_reduction``: mean surprisal under I0 minus mean surprisal under I, mean_t l_t - mean_t l0_t: the
  same correction on the per-token scale, so unlike ``prior_corrected`` it does not favour short options.

The option is the continuation ``" " + text`` (``continuation_prefix``); ``show_options`` (default true) lists
the labelled options in the prompt, in each order's shuffle, as the label method does.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from harness.api import (
    ChoiceInstance,
    Instance,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    Option,
    Options,
    boolean,
    option_order,
    render_choice_prompt,
)
from harness.api import text as text_value
from harness.scorers.choice.common import ChoiceScorer, order_count


class StringScorer(ChoiceScorer):
    name: ClassVar[str] = "mcq_string"
    method: ClassVar[str] = "string"
    requested_kinds: ClassVar[frozenset[str]] = frozenset({"loglikelihood"})
    systems: dict[str, str] = {
        "prob": "log_probability",
        "token_prob": "probability",
        "logprob": "log_scale",
        "prior_corrected": "log_probability",
        "surprisal_reduction": "log_scale",
    }
    options: ClassVar[Options] = Options(
        Option("show_options", boolean, True, "show the labelled options in the prompt"),
        Option("continuation_prefix", text_value, " ", "what precedes an option's text as a continuation"),
    )

    def requests(self, instance: Instance, params: dict[str, Any], seed: int) -> dict[str, Any]:
        item = self.item(instance)
        out: dict[str, Any] = {}
        for o in range(order_count(params)):
            order = option_order(item, o, int(params.get("order_seed", 0)))
            shown = order if self.args["show_options"] else None
            prompt = render_choice_prompt(item, params, shown)
            prior = render_choice_prompt(item, params, shown, prior=True)
            for k, text in enumerate(item.options):
                continuation = self.args["continuation_prefix"] + text
                out[f"o{o}/I/{k}"] = LoglikelihoodRequest(prompt, continuation)
                out[f"o{o}/I0/{k}"] = LoglikelihoodRequest(prior, continuation)
        return out

    def item_scores(self, instance: ChoiceInstance, answers: dict[str, Any]) -> dict[str, list[list[float]]]:
        n_orders = len({key.split("/")[0] for key in answers})
        scores: dict[str, list[list[float]]] = {name: [] for name in self.systems}
        for o in range(n_orders):
            rows: dict[str, list[float]] = {name: [] for name in self.systems}
            for k in range(len(instance.options)):
                cond = _answer(answers[f"o{o}/I/{k}"])
                prior = _answer(answers[f"o{o}/I0/{k}"])
                lp = np.asarray(cond.token_logprobs, dtype=np.float64)
                lp0 = np.asarray(prior.token_logprobs, dtype=np.float64)
                rows["prob"].append(float(lp.sum()))
                rows["token_prob"].append(float(np.exp(lp).mean()))
                rows["logprob"].append(float(lp.mean()))
                rows["prior_corrected"].append(float(lp.sum() - lp0.sum()))
                rows["surprisal_reduction"].append(float(lp.mean() - lp0.mean()))
            for name in self.systems:
                scores[name].append(rows[name])
        return scores


def _answer(answer: Any) -> LoglikelihoodResponse:
    if not isinstance(answer, LoglikelihoodResponse) or not answer.token_logprobs:
        raise ValueError(f"expected a non-empty loglikelihood answer, got {answer!r}")
    return answer

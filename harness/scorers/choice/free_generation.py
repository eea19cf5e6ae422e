"""``mcq_free``: the model answers in its own words; each answer is mapped to an option, or to none.

For each temperature (default 0.1 and 0.9) the model writes ``samples_per_order`` answers per option order (so
5 answers per item and temperature by default, one per order, as the follow-up study's 5 seeds), at most
``max_new_tokens`` (50) tokens each; the answer is the first non-empty line of the generation (models often
open with a newline after the cue, so stopping at the first newline would leave them no answer; ``stop`` adds
stop strings). By default the prompt does not show the options
(``show_options: false``, as in the study): it is the description and the scenario followed by the answer cue,
so the same for every order, and all of an item's answers at one temperature are drawn in one request. With
``show_options: true`` each order's labelled options are shown and an answer may also name a label.

Each answer is classified by an answer classifier (argument ``classifier``, default ``match_similarity``;
any classifier registered through the ``register_answer_classifiers`` hook, configured by ``classifier_args``):
label or text match first, then similarity with a threshold, else unclassified. Per item and temperature:

- ``p``: the frequencies of the options among the classified answers (uniform when none was classified: the
  model then says nothing about the item);
- ``acc``: the share of answers classified as the target (an unclassified answer is not correct);
- ``unclassified``: the share of answers no option could be given to (metric ``<system>/unclassified``);
- with ``variant: paper``, ``argmax_target``: [answers classified as the target, answers], the follow-up study's
  binary per answer, from which ``ll_binomial`` takes the target rate;
- ``answers``: each answer's text, option (or null) and how it was matched, for inspection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from harness.api import (
    AnswerClassifier,
    ChoiceInstance,
    Classification,
    ClassifyItem,
    DecodingConfig,
    GenerateRequest,
    GenerateResponse,
    HarnessError,
    Instance,
    Metric,
    Option,
    Options,
    boolean,
    derive_seed,
    find_classifier,
    option_labels,
    option_order,
    positive_int,
    render_choice_prompt,
)
from harness.api import text as text_value
from harness.scorers.choice.common import ChoiceScorer, ItemHuman, order_count, positive_float, tvd

DEFAULT_CLASSIFIER = "match_similarity"


def temperature_list(value: Any) -> tuple[float, ...]:
    items = value.split(";") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items:
        raise ValueError(f"expected a list of positive temperatures, got {value!r}")
    temps = tuple(positive_float(t) for t in items)
    if len(set(temps)) != len(temps):
        raise ValueError(f"each temperature once, got {value!r}")
    return temps


def stop_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(s, str) and s for s in value):
        raise ValueError(f"expected a list of non-empty strings, got {value!r}")
    return tuple(value)


def mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping, got {value!r}")
    return dict(value)


def first_line(text: str) -> str:
    """The first line of a generation with any text on it, stripped ("" if there is none)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def temperature_label(t: float) -> str:
    return f"temp{t:g}"


class FreeGenerationScorer(ChoiceScorer):
    name: ClassVar[str] = "mcq_free"
    method: ClassVar[str] = "free"
    requested_kinds: ClassVar[frozenset[str]] = frozenset({"generate"})
    options: ClassVar[Options] = Options(
        Option("temperatures", temperature_list, (0.1, 0.9), "sampling temperatures, one system each", "list of float"),
        Option("samples_per_order", positive_int, 1, "answers drawn per option order and temperature"),
        Option("max_new_tokens", positive_int, 50, "tokens per answer at most"),
        Option("stop", stop_list, (), "stop strings besides the model's end of text", "list of str"),
        Option("show_options", boolean, False, "show the labelled options in the prompt"),
        Option("classifier", text_value, DEFAULT_CLASSIFIER, "answer classifier (harness ls classifiers)"),
        Option("classifier_args", mapping, {}, "arguments of the classifier", "mapping"),
    )

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.temperatures: tuple[float, ...] = self.args["temperatures"]
        self.systems = {temperature_label(t): "frequency" for t in self.temperatures}
        cls = find_classifier(self.args["classifier"])
        self.classifier: AnswerClassifier = cls(**self.args["classifier_args"])
        self._classified: dict[str, dict[str, list[Classification]]] = {}

    def required_extras(self) -> tuple[str, ...]:
        return (*self.extras, *self.classifier.extras)

    def describe(self) -> dict[str, Any]:
        return {"classifier": {"name": self.args["classifier"], **self.classifier.describe()}}

    # -- queries -------------------------------------------------------------------------------------------------

    def _request(self, prompt: str, n: int, seed: int, t: float) -> GenerateRequest:
        return GenerateRequest(
            prompt=prompt,
            n=n,
            seed=seed,
            decoding=DecodingConfig(temperature=t),
            max_new_tokens=self.args["max_new_tokens"],
            stop=self.args["stop"],
            messages=(("user", prompt),),
            source=prompt,
        )

    def requests(self, instance: Instance, params: dict[str, Any], seed: int) -> dict[str, Any]:
        item = self.item(instance)
        n_orders, per_order = order_count(params), self.args["samples_per_order"]
        out: dict[str, Any] = {}
        for t in self.temperatures:
            label = temperature_label(t)
            if not self.args["show_options"]:
                prompt = render_choice_prompt(item, params, None)
                out[label] = self._request(prompt, n_orders * per_order, derive_seed(seed, self.name, label), t)
                continue
            for o in range(n_orders):
                order = option_order(item, o, int(params.get("order_seed", 0)))
                prompt = render_choice_prompt(item, params, order)
                out[f"{label}/o{o}"] = self._request(prompt, per_order, derive_seed(seed, self.name, label, o), t)
        return out

    # -- classification ------------------------------------------------------------------------------------------

    def _answers(self, item: ChoiceInstance, answers: dict[str, Any], t: float) -> list[tuple[str, int]]:
        """Every answer at temperature ``t`` with the option order it was drawn under."""
        label = temperature_label(t)
        per_order = self.args["samples_per_order"]
        out: list[tuple[str, int]] = []
        if label in answers:
            texts = _texts(answers[label])
            out = [(text, j // per_order) for j, text in enumerate(texts)]
        else:
            for o in range(order_count(self.task_params)):
                out += [(text, o) for text in _texts(answers[f"{label}/o{o}"])]
        return [(first_line(text), o) for text, o in out]

    def prepare(self, instances: list[Instance], responses: list[Any | None]) -> None:
        """Classify every answer of the task in one call, so the classifier embeds all texts in batches."""
        super().prepare(instances, responses)
        params = self.task_params
        style = str(params.get("label_style", "numbers"))
        jobs: list[tuple[str, str, ClassifyItem]] = []
        for instance, response in zip(instances, responses, strict=True):
            if response is None:
                continue
            item = self.item(instance)
            answers = response.scoped(self.name)
            for t in self.temperatures:
                for text, o in self._answers(item, answers, t):
                    labels = None
                    if self.args["show_options"]:
                        order = option_order(item, o, int(params.get("order_seed", 0)))
                        shown = option_labels(len(order), style)
                        labels = tuple(shown[order.index(k)] for k in range(len(item.options)))
                    jobs.append((item.id, temperature_label(t), ClassifyItem(text, item.options, labels)))
        results = self.classifier.classify([job for _, _, job in jobs]) if jobs else []
        if len(results) != len(jobs):
            raise HarnessError(f"classifier '{self.args['classifier']}' gave {len(results)} of {len(jobs)} answers")
        self._classified = {}
        for (item_id, label, _), result in zip(jobs, results, strict=True):
            self._classified.setdefault(item_id, {}).setdefault(label, []).append(result)

    # -- scoring -------------------------------------------------------------------------------------------------

    def score(self, instance: Instance, response: Any | None, rng: np.random.Generator) -> dict[str, Any]:
        item = self.item(instance)
        if response is None:
            self._humans.append(None)
            return {}
        self._humans.append(ItemHuman.of(item))
        human = np.asarray(item.human_counts, dtype=np.float64)
        human /= human.sum()
        values: dict[str, Any] = {}
        for t in self.temperatures:
            label = temperature_label(t)
            texts = self._answers(item, response, t)
            classified = self._classified.get(item.id, {}).get(label)
            if classified is None or len(classified) != len(texts):
                raise HarnessError(f"scorer '{self.name}': item {item.id} was not classified (prepare not called)")
            counts = np.zeros(len(item.options))
            for c in classified:
                if c.option is not None:
                    counts[c.option] += 1
            k = len(item.options)
            p = counts / counts.sum() if counts.sum() else np.full(k, 1.0 / k)
            values[self.system_name(label)] = {
                "scores": [[float(x) for x in counts]],
                "p": [float(f"{x:.10g}") for x in p],
                # No target in the data: no accuracy and no target probability (``p[None]`` would be numpy's newaxis).
                "acc": None if item.target is None else float(np.mean([c.option == item.target for c in classified])),
                "p_target": None if item.target is None else float(f"{p[item.target]:.10g}"),
                "tvd": float(f"{tvd(p, human):.10g}"),
                "unclassified": float(np.mean([c.option is None for c in classified])),
                "answers": [
                    {"text": text, "order": o, "option": c.option, "how": c.how}
                    for (text, o), c in zip(texts, classified, strict=True)
                ],
            }
            if self.paper and item.target is not None:
                # The follow-up study's binary per answer: classified as the target (an unclassified one is not).
                hits = sum(c.option == item.target for c in classified)
                values[self.system_name(label)]["argmax_target"] = [hits, len(classified)]
        return values

    def extra_metrics(
        self,
        system: str,
        score: str,
        rows: list[tuple[ItemHuman, dict[str, Any]]],
        groups: dict[str, list[int]],
        rngs: Callable[[str], np.random.Generator],
    ) -> dict[str, Metric]:
        metrics: dict[str, Metric] = {}
        for group, idx in groups.items():
            name = f"{system}/unclassified" + (f"/{group}" if group else "")
            metrics[name] = self.mean_metric([rows[i][1][system]["unclassified"] for i in idx], False, rngs(name))
        return metrics


def _texts(answer: Any) -> list[str]:
    if not isinstance(answer, GenerateResponse):
        raise ValueError(f"expected a generate answer, got {answer!r}")
    return list(answer.texts)

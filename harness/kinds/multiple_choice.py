"""``multiple_choice``: a bundle of scoring requests per item, built by the task's scorers (the ways of asking).

Each scorer of a multiple-choice task is one way of asking a model (label probabilities, string probabilities,
free generation, ratings, embeddings) and builds its own requests for an item (``Scorer.requests``), of the kinds
it declares in ``requested_kinds``. The bundle keys them ``"<scorer>:<key>"``. A block of items is answered with
each distinct request asked once, one batched adapter call per kind; the answers are stored under the same keys,
so a re-score reads exactly what each scorer asked for, and each scorer sees only its own (``scoped``).

On disk a bundle's record is ``{"answers": {key: record}, "usage": ...}``: the field name predates the
request/response vocabulary and is kept so that stored runs stay readable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from harness.errors import HarnessError
from harness.instances import ChoiceInstance, Instance
from harness.kinds.base import Need, RequestKind, add_usage_of
from harness.kinds.generate import prompt_template
from harness.options import Option, Options, int_range, integer, one_of
from harness.prompts.choice import (
    CHOICE_FIELDS,
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_RATING_TEMPLATE,
    LABEL_STYLES,
    RATING_FIELDS,
)
from harness.requests.multiple_choice import MultipleChoiceRequest, MultipleChoiceResponse
from harness.usage import add_usage

if TYPE_CHECKING:
    from harness.models import ModelAdapter
    from harness.scoring.base import Scorer
    from harness.task_config import TaskConfig


#: Shuffled option orders per item at most (5 options have 120 orders; every order multiplies the requests).
MAX_OPTION_ORDERS = 1000


class MultipleChoiceKind(RequestKind):
    name = "multiple_choice"
    request_type = MultipleChoiceRequest
    response_type = MultipleChoiceResponse
    instance_type = ChoiceInstance
    view = "choice"
    # Shared by every method of a multiple-choice task (see harness.prompts.choice); methods are scorers.
    params: ClassVar[Options] = Options(
        Option("option_orders", int_range(1, MAX_OPTION_ORDERS), 5, "shuffled option orders per item"),
        Option("order_seed", integer, 0, "seed of the option orders"),
        Option("label_style", one_of(*LABEL_STYLES), "numbers", f"option labels: {', '.join(LABEL_STYLES)}"),
        Option(
            "prompt_template", prompt_template(CHOICE_FIELDS), DEFAULT_PROMPT_TEMPLATE, "item prompt", type="template"
        ),
        Option(
            "rating_template", prompt_template(RATING_FIELDS), DEFAULT_RATING_TEMPLATE, "rating prompt", type="template"
        ),
    )

    def build(
        self, config: TaskConfig, instance: Instance, seed: int, scorers: Sequence[Scorer]
    ) -> MultipleChoiceRequest:
        self.check_instance(config, instance)
        requests: dict[str, Any] = {}
        for scorer in scorers:
            for key, request in scorer.requests(instance, config.params, seed).items():
                requests[f"{scorer.name}:{key}"] = request
        return MultipleChoiceRequest(requests, instance_id=instance.id)

    def needs(self, config: TaskConfig, scorers: Sequence[Scorer]) -> list[Need]:
        hint = "; drop the scorer with another task file or use another model"
        return [
            Need(kind, f"scorer '{scorer.name}' of task {config.task}", hint)
            for scorer in scorers
            for kind in sorted(scorer.requested_kinds)
        ]

    def answer(self, adapter: ModelAdapter, requests: list[Any]) -> list[dict[str, Any]]:
        """Answer a block of items: each distinct request once, grouped by kind, one adapter call per kind."""
        unique: dict[str, list[Any]] = {}
        index: dict[Any, int] = {}
        for bundle in requests:
            for request in bundle.requests.values():
                if request not in index:
                    bucket = unique.setdefault(request.kind, [])
                    index[request] = len(bucket)
                    bucket.append(request)
        responses = {kind: self.other_kind(kind).ask(adapter, bucket) for kind, bucket in unique.items()}
        records = []
        billed: set[Any] = set()
        for bundle in requests:
            found = {key: responses[r.kind][index[r]] for key, r in bundle.requests.items()}
            record = MultipleChoiceResponse(found).to_record()
            # API usage is billed once per distinct request: to the first item of the block that asked it.
            usage: dict[str, int] = {}
            for request in bundle.requests.values():
                response = responses[request.kind][index[request]]
                if response.usage is not None and request not in billed:
                    billed.add(request)
                    add_usage(usage, response.usage)
            for response_record in record["answers"].values():
                response_record.pop("usage", None)
            if usage:
                record["usage"] = usage
            records.append(record)
        return records

    def _record_kind(self, record: dict[str, Any]) -> RequestKind:
        """The kind of a stored answer: its ``kind`` field (a ``generate`` answer has ``texts`` instead)."""
        name = record.get("kind", "generate" if "texts" in record else None)
        if not isinstance(name, str):
            raise HarnessError(f"stored answer of unknown kind {name!r}")
        return self.other_kind(name)

    def response_from_record(self, record: dict[str, Any]) -> MultipleChoiceResponse:
        return MultipleChoiceResponse.from_record(
            record, lambda answer: self._record_kind(answer).response_from_record(answer)
        )

    def for_scorer(self, response: Any, scorer: str) -> Any:
        """A scorer sees the responses to its own requests only, under its own keys."""
        return response.scoped(scorer)

    def summarize(self, summary: dict[str, Any], record: dict[str, Any]) -> None:
        """API usage, requests asked per kind, and what each inner kind adds (a free generation's samples)."""
        add_usage_of(summary, record)
        for inner in record.get("answers", {}).values():
            kind = self._record_kind(inner)
            counted = summary.setdefault("queries", {})
            counted[kind.name] = counted.get(kind.name, 0) + 1
            if kind.name == "generate":
                kind.summarize(summary, inner)

    def check_saved(
        self, config: TaskConfig, scorers: Sequence[Scorer], instance: Instance, record: dict[str, Any]
    ) -> None:
        """A scorer added at re-scoring time can only use requests the run asked."""
        have = self.response_from_record(record["response"])
        for scorer in scorers:
            needed = scorer.requests(instance, config.params, record["seed"])
            absent = sorted(set(needed) - set(have.scoped(scorer.name)))
            if absent:
                raise HarnessError(
                    f"scorer '{scorer.name}' of task {config.task} needs answers the run did not ask for "
                    f"(item {instance.id}: {absent[0]}); run the model again with this scorer in the task"
                )

    def human_view(self, sample: dict[str, Any]) -> Any:
        counts = list(sample.get("human", {}).get("counts", []))
        total = sum(counts) or 1
        return [round(c / total, 5) for c in counts]

    def model_view(self, sample: dict[str, Any], method: str | None) -> Any:
        if method is None:
            return None
        row = sample.get("metrics", {}).get(method)
        if isinstance(row, dict) and isinstance(row.get("p"), list):
            return [round(float(p), 5) for p in row["p"]]
        return None

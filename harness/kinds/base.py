"""The request-kind interface: everything the harness knows about one kind of request lives in one object.

Why: the runner, the task schema, re-scoring and the leaderboard used to branch on the kind's name in about nine
places. Now each of them asks the kind. A kind declares the task parameters it takes, the instance type it reads,
how it builds a request from an instance, the adapter method that answers it (always batched), how a stored
response is read back, what it adds to a run's summary, and how the leaderboard shows one item. A plugin adds a
kind with the ``register_request_kinds`` hook (see ``docs/plugins.md``).

Kinds come in two roles. A *task kind* (``instance_type`` set) is what a task YAML names in ``request:``. A kind
without an instance type is only asked inside another kind: ``multiple_choice`` is a bundle of ``loglikelihood``,
``next_token``, ``similarity`` and ``generate`` requests built by the task's scorers. ``generate`` plays both roles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from harness.data.loaders import LoadedData
from harness.errors import HarnessError, shorten
from harness.instances import Instance
from harness.options import Options
from harness.usage import add_usage

if TYPE_CHECKING:
    from harness.models import ModelAdapter
    from harness.scoring.base import Scorer
    from harness.task_config import TaskConfig


@dataclass(frozen=True)
class Need:
    """A request kind a task needs the model to answer, and who needs it (for the refusal message)."""

    #: The request kind's name (``loglikelihood``), checked against the adapter's ``supported_requests``.
    kind: str
    #: Who needs it, for the refusal message (``scorer 'mcq_string' of task pragmatics-mcq``).
    needed_by: str
    #: What the user can do about a refusal, appended to the message.
    hint: str = ""


#: How a kind finds another registered kind by name (``Registry.kind``).
KindLookup = Callable[[str], "RequestKind"]


class RequestKind:
    """Base class of request kinds registered through the ``register_request_kinds`` hook.

    Kinds are stateless: the registry makes one instance per class and every run shares it. The registry binds
    that instance to its lookup of other kinds (``other_kind``), which a kind that bundles requests of other kinds
    (``multiple_choice``) asks; the kinds never import the registry themselves.
    """

    _kinds: KindLookup | None = None

    #: The name task YAML files use in ``request:`` and adapters list in ``supported_requests``.
    name: ClassVar[str] = ""
    #: The request and response types; the response type has ``to_record()`` and ``from_record(record)``.
    request_type: ClassVar[type[Any]] = object
    response_type: ClassVar[type[Any]] = object
    #: The instance type a task of this kind reads; None for kinds only asked inside another kind.
    instance_type: ClassVar[type[Instance] | None] = None
    #: Task parameters (the task YAML's ``params:``), checked and defaulted before anything loads.
    params: ClassVar[Options] = Options()
    #: How the leaderboard's instance view shows an item: ``cloze``, ``generation``, ``choice`` or ``other``.
    view: ClassVar[str] = "other"

    @property
    def adapter_method(self) -> str:
        """The batched adapter method that answers this kind: ``<name>_many(requests) -> responses``."""
        return f"{self.name}_many"

    @property
    def is_task_kind(self) -> bool:
        return self.instance_type is not None

    def bind(self, kinds: KindLookup) -> RequestKind:
        """Give this kind the registry's lookup of the other kinds (the registry calls it once)."""
        self._kinds = kinds
        return self

    def other_kind(self, name: str) -> RequestKind:
        """The registered kind called ``name``, for a kind that asks requests of other kinds."""
        if self._kinds is None:
            raise HarnessError(
                f"request kind '{self.name}' was not made by a registry, so it cannot find kind '{name}'"
            )
        return self._kinds(name)

    #: Task parameters that change the instances ``prepare_data`` gives (the word rule): tasks that differ in these
    #: read their data apart, where decoding variants of one task share it.
    instance_params: ClassVar[tuple[str, ...]] = ()

    # ----------------------------------------------------------------------------------------- building requests
    def prepare_data(self, config: TaskConfig, data: LoadedData) -> LoadedData:
        """The instances as this kind compares them, from the loader's (every run, re-scoring and study reads
        them through here): the loader's own, unless the kind puts the human side through the rule its model side
        follows (``sample_words``: the word rule)."""
        return data

    def check_instance(self, config: TaskConfig, instance: Instance) -> None:
        if self.instance_type is None or not isinstance(instance, self.instance_type):
            wanted = self.instance_type.__name__ if self.instance_type else "no"
            raise HarnessError(
                f"task {config.task}: loader '{config.loader}' gave {type(instance).__name__}, "
                f"but {self.name} requests need {wanted} instances"
            )

    def build(self, config: TaskConfig, instance: Instance, seed: int, scorers: Sequence[Scorer]) -> Any:
        """The request for one instance. ``seed`` is the instance's own seed (``harness.seeding``)."""
        raise HarnessError(f"request kind '{self.name}' is not a task kind: it is only asked inside another kind")

    def needs(self, config: TaskConfig, scorers: Sequence[Scorer]) -> list[Need]:
        """The kinds the model must answer for a task of this kind (checked before the model loads)."""
        return [Need(self.name, f"task {config.task}")]

    def variants(self, config: TaskConfig) -> list[tuple[str, TaskConfig]]:
        """Model runs of one task that each get their own store and results row (a decoding sweep); none here."""
        return []

    # ---------------------------------------------------------------------------------------- answering requests
    def ask(self, adapter: ModelAdapter, requests: list[Any]) -> list[Any]:
        """Send a group of requests to the adapter's batched method and check what comes back."""
        method = getattr(adapter, self.adapter_method, None)
        if method is None:
            raise HarnessError(f"model {adapter.spec.label} has no {self.adapter_method} method for '{self.name}'")
        responses = list(method(requests))
        if len(responses) != len(requests):
            raise HarnessError(
                f"model {adapter.spec.label} answered {len(responses)} of {len(requests)} {self.name} requests"
            )
        for request, response in zip(requests, responses, strict=True):
            self.check_response(adapter, request, response)
        return responses

    def answer(self, adapter: ModelAdapter, requests: list[Any]) -> list[dict[str, Any]]:
        """The stored records of the responses to a block of requests (what the response store keeps)."""
        return [response.to_record() for response in self.ask(adapter, requests)]

    def request_record(self, request: Any) -> dict[str, Any] | None:
        """A request as JSON (the store's ``request``, the samples' ``arguments``): its ``to_record()``, or its
        fields if it is a dataclass; None if it is neither (a third-party kind may not say)."""
        to_record = getattr(request, "to_record", None)
        if callable(to_record):
            return dict(to_record())
        if dataclasses.is_dataclass(request) and not isinstance(request, type):
            return dataclasses.asdict(request)
        return None

    def prompt_text(self, request: dict[str, Any]) -> str | None:
        """The text a request puts before the model (a stored request record), hashed into the samples'
        ``prompt_hash`` as lm-eval hashes its first argument; a request that bundles several gives its first."""
        for key in ("prompt", "context"):
            if isinstance(request.get(key), str):
                return str(request[key])
        bundled = request.get("requests")
        if isinstance(bundled, dict) and bundled:
            first = bundled[sorted(bundled)[0]]
            return self.prompt_text(first) if isinstance(first, dict) else None
        return None

    def check_response(self, adapter: ModelAdapter, request: Any, response: Any) -> None:  # noqa: B027 - optional
        """Raise HarnessError if ``response`` cannot be an answer to ``request`` (e.g. too few samples)."""

    def response_from_record(self, record: dict[str, Any]) -> Any:
        return self.response_type.from_record(record)

    def read_response(self, record: Any, where: str) -> Any:
        """``response_from_record`` of a record read from a file: a record of the wrong shape is a one-line error
        naming ``where`` (file and instance), not a traceback from deep inside scoring."""
        if not isinstance(record, dict):
            raise HarnessError(f"{where}: 'response' is not an object but {type(record).__name__}")
        try:
            return self.response_from_record(record)
        except HarnessError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise HarnessError(f"{where}: 'response' is not a {self.name} response ({shorten(repr(exc))})") from exc

    def for_scorer(self, response: Any, scorer: str) -> Any:
        """The part of a response that scorer ``scorer`` scores: all of it, unless the kind bundles requests of
        several scorers (``multiple_choice``)."""
        return response

    # ------------------------------------------------------------------------------------------ results and views
    def summarize(self, summary: dict[str, Any], record: dict[str, Any]) -> None:
        """Add one stored response to the run's totals (``results.json``, ``responses``)."""
        add_counts(summary, record, ("tokens_evaluated",))
        add_usage_of(summary, record)

    def check_saved(
        self, config: TaskConfig, scorers: Sequence[Scorer], instance: Instance, record: dict[str, Any]
    ) -> None:  # noqa: B027 - optional
        """When ``harness score`` re-scores saved outputs: raise HarnessError if they cannot serve ``scorers``."""

    def decoding_label(self, params: dict[str, Any], variant: str | None) -> str | None:
        """How the outputs were drawn, as the leaderboard labels it (``ancestral``, ``top_p=0.9``); None if n/a."""
        return None

    def human_view(self, sample: dict[str, Any]) -> Any:
        """What the leaderboard's instance view shows of the people's side of one samples-file record."""
        return None

    def model_view(self, sample: dict[str, Any], method: str | None) -> Any:
        """What the leaderboard's instance view shows of a model's side (``method``: a multiple-choice scorer)."""
        return None


def add_counts(summary: dict[str, Any], record: dict[str, Any], keys: Sequence[str]) -> None:
    """Add the integer fields ``keys`` of a record into the summary, in that order (results keep key order)."""
    for key in keys:
        if key in record:
            summary[key] = summary.get(key, 0) + int(record[key])


def add_usage_of(summary: dict[str, Any], record: dict[str, Any]) -> None:
    if "usage" in record:
        add_usage(summary.setdefault("usage", {}), record["usage"])

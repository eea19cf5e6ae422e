"""``multiple_choice`` bundles: every request one item needs (each scorer builds its own), and their answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class MultipleChoiceRequest:
    """Every request one item needs, keyed ``"<scorer>:<key>"`` (each scorer builds its own)."""

    #: ``"<scorer>:<key>"`` -> a request of another kind (``loglikelihood``, ``next_token``, ``similarity``,
    #: ``generate``, ``option_probs``) that the scorer's ``requests`` built. The kind asks each distinct request once,
    #: through the adapter's method for its kind: no adapter is handed the bundle itself.
    requests: dict[str, Any]
    #: The item asked about (``ChoiceInstance.id``), stored with the bundle; a request that needs it carries its own
    #: (``OptionProbsRequest.instance_id``).
    instance_id: str = ""

    kind: ClassVar[str] = "multiple_choice"

    def to_record(self) -> dict[str, Any]:
        return {"requests": {k: q.to_record() for k, q in self.requests.items()}, "instance_id": self.instance_id}


@dataclass
class MultipleChoiceResponse:
    """The answers to a bundle, under the bundle's keys (``"<scorer>:<key>"``)."""

    #: ``"<scorer>:<key>"`` -> the response to the bundle's request under that key, filled in by the kind; a scorer
    #: reads its own through ``scoped(name)``, under the keys it used.
    responses: dict[str, Any]

    def scoped(self, scorer: str) -> dict[str, Any]:
        """The responses to one scorer's requests, under the keys that scorer used."""
        prefix = f"{scorer}:"
        return {k[len(prefix) :]: a for k, a in self.responses.items() if k.startswith(prefix)}

    def to_record(self) -> dict[str, Any]:
        return {"answers": {k: a.to_record() for k, a in self.responses.items()}}

    @classmethod
    def from_record(
        cls, record: dict[str, Any], read_answer: Callable[[dict[str, Any]], Any]
    ) -> MultipleChoiceResponse:
        """``read_answer`` reads one stored answer back (its kind says how: ``MultipleChoiceKind`` passes the
        registry's kinds, which is why a bundle cannot read itself alone)."""
        return cls({str(k): read_answer(v) for k, v in record["answers"].items()})

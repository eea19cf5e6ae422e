"""``option_probs`` requests and responses: the distribution a system reported over an item's options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class OptionProbsRequest:
    """The distribution a system reported over ``options`` (the instance's options, in its order)."""

    #: The item (``ChoiceInstance.id``): the only key to its recorded distribution, as no model computes one.
    instance_id: str
    #: The item's option texts in its own order, for the adapter to check that the recording is of this item.
    options: tuple[str, ...]

    kind: ClassVar[str] = "option_probs"

    def to_record(self) -> dict[str, Any]:
        return {"kind": self.kind, "instance_id": self.instance_id, "options": list(self.options)}


@dataclass
class OptionProbsResponse:
    """One probability per option for each option order the source asked in, in the instance's option order."""

    #: At least one distribution, one per option order the source asked in, each mapped back to the instance's
    #: option order (one probability per option): non-negative, not all 0; the scorer renormalises them.
    orders: list[list[float]]
    #: API requests and tokens billed (API adapters); the multiple-choice record keeps it per item, not per answer.
    usage: dict[str, int] | None = field(default=None, compare=False)

    @property
    def probs(self) -> list[float]:
        """The mean over orders: the item's reported distribution."""
        return [sum(column) / len(self.orders) for column in zip(*self.orders, strict=True)]

    def to_record(self) -> dict[str, Any]:
        return {"kind": "option_probs", "orders": [list(order) for order in self.orders]}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> OptionProbsResponse:
        return cls([[float(p) for p in order] for order in record["orders"]])

"""Normalised instance types, one per task family.

Loaders turn each data set's release format into these, so that requests, scorers and the results writer never
see a data set's own quirks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Instance:
    """One evaluation item. ``id`` is stable across runs: it keys the response store used for resuming."""

    id: str

    def inputs(self) -> dict[str, Any]:
        """What the model is shown, as written to ``samples_<task>.jsonl``."""
        return {}

    def human(self) -> dict[str, Any]:
        """The human data the model is compared against, as written to ``samples_<task>.jsonl``."""
        return {}

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ClozeInstance(Instance):
    """A next-word position: the context before it, the corpus word, and the human guesses with counts.

    ``target`` and the keys of ``human_counts`` are normalised with the task's word normaliser;
    ``target_raw`` keeps the corpus token as printed (with case and punctuation).
    """

    context: str = ""
    target: str = ""
    target_raw: str = ""
    human_counts: dict[str, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def inputs(self) -> dict[str, Any]:
        return {"context": self.context}

    def human(self) -> dict[str, Any]:
        return {"counts": dict(self.human_counts), "total": sum(self.human_counts.values())}

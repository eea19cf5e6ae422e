"""Requests a task sends to a model adapter, and the responses it gets back.

Every request and response is a plain dataclass that round-trips through JSON, because responses are stored as
they arrive (see ``harness.store``) and a resumed or re-scored run reads them back without the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

#: Kinds of request a task can send. An adapter lists the kinds it answers in ``ModelAdapter.supported_requests``.
RequestKind = Literal["sample_words"]
REQUEST_KINDS: tuple[str, ...] = ("sample_words",)

#: ``exact``: the first complete word of an unbounded ancestral sample (a word is complete once whitespace or
#: end-of-sequence follows it); ``paper``: the original study's procedure (5 new tokens, punctuation stripped,
#: first non-empty space-separated word, even if cut off).
WordMode = Literal["exact", "paper"]


@dataclass(frozen=True)
class SampleWordsRequest:
    """Ask for ``n`` next words after ``context``, each the first word of an independent ancestral sample."""

    context: str
    n: int
    seed: int
    temperature: float = 1.0
    mode: WordMode = "exact"
    #: Tokens a sample may use before it is rejected as truncated (``exact``) or cut off (``paper``: 5).
    max_new_tokens: int = 32

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SampleWordsResponse:
    """Word counts from ``n_requested`` samples; rejected samples are counted by reason, never dropped silently.

    Reasons: ``"empty"`` (the sample ended before any word), ``"truncated"`` (no complete word within
    ``max_new_tokens``). ``sum(counts.values()) + sum(rejected.values()) == n_requested``.
    """

    counts: dict[str, int]
    n_requested: int
    rejected: dict[str, int] = field(default_factory=dict)
    #: Token positions the model evaluated to answer (context included): the cost the benchmark compares.
    tokens_evaluated: int = 0

    @property
    def n_words(self) -> int:
        return sum(self.counts.values())

    def to_record(self) -> dict[str, Any]:
        return {
            "counts": dict(sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            "n_requested": self.n_requested,
            "rejected": dict(sorted(self.rejected.items())),
            "tokens_evaluated": self.tokens_evaluated,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SampleWordsResponse:
        return cls(
            counts={str(k): int(v) for k, v in record["counts"].items()},
            n_requested=int(record["n_requested"]),
            rejected={str(k): int(v) for k, v in record.get("rejected", {}).items()},
            tokens_evaluated=int(record.get("tokens_evaluated", 0)),
        )

"""``sample_words`` requests and responses: many next words after one context (the cloze task's request)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

from harness.decoding import DecodingConfig

#: ``exact``: the first complete word of an unbounded ancestral sample (a word is complete once whitespace or
#: end-of-sequence follows it); ``paper``: the original study's procedure (5 new tokens, punctuation stripped,
#: first non-empty space-separated word, even if cut off).
#: ``whole``: the whole first line of the sample (a phrase), for studies where people answered with phrases.
WordMode = Literal["exact", "paper", "whole"]

#: The most tokens one sampled word may take (``max_new_tokens``): a word is a few tokens, never thousands.
MAX_WORD_TOKENS = 1024


@dataclass(frozen=True)
class SampleWordsRequest:
    """Ask for ``n`` next words after ``context``, each the first word of an independent ancestral sample.

    ``temperature`` must be > 0 (``harness.decoding``): the word samplers draw from the model's distribution,
    sharpened or flattened, never greedily.
    """

    #: The text the model continues (``ClozeInstance.context`` as it is: no template, no added whitespace).
    context: str
    #: How many independent samples to draw; the response accounts for every one (a word or a rejection).
    n: int
    #: The instance's own seed (from the run seed, the task and the instance id): draw every random number of the
    #: answer from it, so a resumed run, or other requests in the same batch, change nothing.
    seed: int
    #: Softmax temperature, from 0.01 to 100 (1: the model's own distribution); words have no top-k or top-p.
    temperature: float = 1.0
    #: The word rule, ``exact`` (a sample's first complete word: whitespace or end-of-sequence follows it),
    #: ``whole`` (the sample's first line, whole) or ``paper`` (the study's: the first word of the sample, even if
    #: cut off); see ``WordMode``. Every counted word must be ``harness.api.rule_word(word, mode, segmenter)``.
    mode: WordMode = "exact"
    #: Where a word ends (``harness.words.segmenters``): ``spaces``, ``characters``, ``jieba`` or ``fugashi``; the
    #: words an adapter returns are ``harness.api.rule_word(word, mode, segmenter)``.
    segmenter: str = "spaces"
    #: Tokens a sample may use: an ``exact`` sample with no complete word by then is rejected as truncated; a
    #: ``paper`` sample is cut off there (the study used 5).
    max_new_tokens: int = 32
    #: The instance asked about: contexts repeat ("There", "The"), so an adapter that answers from recorded
    #: outputs (``replay``) looks answers up by id, never by context.
    instance_id: str = ""

    def __post_init__(self) -> None:
        DecodingConfig(temperature=self.temperature)

    @property
    def decoding(self) -> DecodingConfig:
        return DecodingConfig(temperature=self.temperature)

    kind: ClassVar[str] = "sample_words"

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SampleWordsResponse:
    """Word counts from ``n_requested`` samples; rejected samples are counted by reason, never dropped silently."""

    #: Word (written by the request's word rule, never empty) -> how many samples gave it; any order.
    counts: dict[str, int]
    #: The samples this answer accounts for, the request's ``n`` (a replayed file: as many as it recorded):
    #: ``sum(counts.values()) + sum(rejected.values()) == n_requested``.
    n_requested: int
    #: Reason -> how many samples gave no word: ``empty`` (the sample ended before any word), ``truncated`` (no
    #: complete word within ``max_new_tokens``), ``missing`` (a word list came up short), ``failed`` (a recorded
    #: source's own marker of a sample without a word). Empty: every sample gave a word.
    rejected: dict[str, int] = field(default_factory=dict)
    #: Token positions the model evaluated to answer (context included): the cost the benchmark compares.
    tokens_evaluated: int = 0
    #: API usage billed for this answer, ``{"requests", "prompt_tokens", "completion_tokens"}``; None for models
    #: that are not an API. Summed into results.json's ``responses``.
    usage: dict[str, int] | None = None
    #: Words the model listed when asked for all ``n`` in one reply (``cloze=list``): more than ``n`` are cut,
    #: fewer show up as ``rejected["missing"]``.
    listed: int | None = None
    #: The words in the order their source first listed them, where that order is known and means something (a
    #: replayed file): the paper-faithful ECE breaks ties between top words by it, as the original code did.
    first_seen: list[str] | None = None

    @property
    def n_words(self) -> int:
        return sum(self.counts.values())

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "counts": dict(sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            "n_requested": self.n_requested,
            "rejected": dict(sorted(self.rejected.items())),
            "tokens_evaluated": self.tokens_evaluated,
        }
        if self.usage is not None:
            record["usage"] = dict(self.usage)
        if self.listed is not None:
            record["listed"] = self.listed
        if self.first_seen is not None:
            record["first_seen"] = list(self.first_seen)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SampleWordsResponse:
        return cls(
            counts={str(k): int(v) for k, v in record["counts"].items()},
            n_requested=int(record["n_requested"]),
            rejected={str(k): int(v) for k, v in record.get("rejected", {}).items()},
            tokens_evaluated=int(record.get("tokens_evaluated", 0)),
            usage={str(k): int(v) for k, v in record["usage"].items()} if "usage" in record else None,
            listed=int(record["listed"]) if "listed" in record else None,
            first_seen=[str(w) for w in record["first_seen"]] if "first_seen" in record else None,
        )

"""Requests a task sends to a model adapter, and the responses it gets back.

Every request and response is a plain dataclass that round-trips through JSON, because responses are stored as
they arrive (see ``harness.store``) and a resumed or re-scored run reads them back without the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

#: Kinds of request a task can send. An adapter lists the kinds it answers in ``ModelAdapter.supported_requests``.
#: ``multiple_choice`` is a bundle of the primitive queries below (``loglikelihood``, ``next_token``,
#: ``similarity``, ``generate``), built by the task's scorers; an adapter answers the primitives, never the bundle.
RequestKind = Literal["sample_words", "generate", "multiple_choice"]
REQUEST_KINDS: tuple[str, ...] = ("sample_words", "generate", "multiple_choice")
#: Primitive query kinds a ``multiple_choice`` bundle is made of.
QUERY_KINDS: tuple[str, ...] = ("loglikelihood", "next_token", "similarity", "generate")

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
    #: API requests and tokens billed for this answer (API adapters only; see ``harness.results.usage_summary``).
    usage: dict[str, int] | None = None
    #: Words the model listed when asked for all ``n`` in one reply (``cloze=list``): more than ``n`` are cut,
    #: fewer show up as ``rejected["missing"]``.
    listed: int | None = None

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
        )


def add_usage(total: dict[str, int], usage: dict[str, Any]) -> None:
    """Add one API usage record (``requests``, ``prompt_tokens``, ``completion_tokens``) into a running total.

    >>> total = {"requests": 1}; add_usage(total, {"requests": 2, "prompt_tokens": 5}); total
    {'requests': 3, 'prompt_tokens': 5}
    """
    for key, value in usage.items():
        total[key] = total.get(key, 0) + int(value)


#: Decoding parameters in the order their labels are written (``temperature=0.7+top_p=0.9``).
DECODING_KEYS: tuple[str, ...] = ("temperature", "top_k", "top_p", "typical_p")


@dataclass(frozen=True)
class DecodingConfig:
    """How each next token is drawn. All defaults is ancestral (unbiased) sampling from the model's distribution.

    The transformations apply in the order ``generate`` applies them: temperature, then top-k, then nucleus
    (top-p), then locally typical sampling; a value at its default is off (``top_k=0``, ``top_p=1``,
    ``typical_p=1``, ``temperature=1``).
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    typical_p: float = 1.0

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        for key in ("top_p", "typical_p"):
            value = getattr(self, key)
            if not 0 < value <= 1:
                raise ValueError(f"{key} must be in (0, 1], got {value}")

    @property
    def is_ancestral(self) -> bool:
        return self == DecodingConfig()

    @property
    def label(self) -> str:
        """``ancestral``, or the parameters that differ from ancestral sampling: ``temperature=0.7+top_p=0.9``."""
        default = DecodingConfig()
        parts = [
            f"{k}={_format_number(getattr(self, k))}" for k in DECODING_KEYS if getattr(self, k) != getattr(default, k)
        ]
        return "+".join(parts) if parts else "ancestral"

    @classmethod
    def parse(cls, text: str) -> DecodingConfig:
        """Read a label back: ``ancestral``, ``top_p=0.9``, ``temperature=0.7+top_k=50``. ValueError names the part."""
        text = str(text).strip()
        if text in ("ancestral", ""):
            return cls()
        values: dict[str, Any] = {}
        for part in text.split("+"):
            key, sep, value = part.strip().partition("=")
            key = key.strip()
            if not sep or key not in DECODING_KEYS:
                raise ValueError(f"{part!r}: expected one of {', '.join(DECODING_KEYS)} as key=value, or 'ancestral'")
            if key in values:
                raise ValueError(f"{part!r}: {key} given twice")
            try:
                values[key] = int(value) if key == "top_k" else float(value)
            except ValueError:
                raise ValueError(f"{part!r}: {value!r} is not a number") from None
        return cls(**values)

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


def _format_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and not isinstance(value, float) else repr(float(value))


@dataclass(frozen=True)
class GenerateRequest:
    """Ask for ``n`` independent samples for one input, with one decoding configuration.

    The task renders the input three ways and the adapter picks the one its model takes: ``prompt`` (the text a
    causal LM continues), ``messages`` (the same as chat turns, used when ``chat`` is true and the model has a chat
    template) and ``source`` (the encoder input of a sequence-to-sequence model, prefix included). A sample ends at
    end-of-sequence, at the first ``stop`` string (which is cut off, with what follows it) or after
    ``max_new_tokens`` tokens.
    """

    prompt: str
    n: int
    seed: int
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    max_new_tokens: int = 100
    stop: tuple[str, ...] = ()
    messages: tuple[tuple[str, str], ...] = ()
    source: str = ""
    chat: bool = False

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


#: Why a sample ended: end-of-sequence token, a stop string, or the token cap.
FINISH_REASONS: tuple[str, ...] = ("eos", "stop", "length")


@dataclass
class GenerateResponse:
    """The ``n`` samples, in the order drawn, with why each ended and how many tokens it took (stop string and
    end-of-sequence token included)."""

    texts: list[str]
    finish_reasons: list[str]
    n_tokens: list[int]
    #: Token positions the model evaluated to answer (prompt once, plus each sample's tokens): the cost measure.
    tokens_evaluated: int = 0
    #: API requests and tokens billed for this answer (API adapters only).
    usage: dict[str, int] | None = None

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "texts": list(self.texts),
            "finish_reasons": list(self.finish_reasons),
            "n_tokens": list(self.n_tokens),
            "tokens_evaluated": self.tokens_evaluated,
        }
        if self.usage is not None:
            record["usage"] = dict(self.usage)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> GenerateResponse:
        return cls(
            texts=[str(t) for t in record["texts"]],
            finish_reasons=[str(r) for r in record["finish_reasons"]],
            n_tokens=[int(k) for k in record["n_tokens"]],
            tokens_evaluated=int(record.get("tokens_evaluated", 0)),
            usage={str(k): int(v) for k, v in record["usage"].items()} if "usage" in record else None,
        )


@dataclass(frozen=True)
class LoglikelihoodQuery:
    """log P(continuation | context), token by token.

    Adapters tokenise as lm-evaluation-harness does: whitespace at the end of ``context`` moves to the start of
    ``continuation``, and the two are encoded separately and concatenated, so a continuation's tokens never depend
    on which context it follows and a context shared by several queries is encoded (and run) once.
    """

    context: str
    continuation: str

    kind: ClassVar[str] = "loglikelihood"

    def to_record(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}


@dataclass
class LoglikelihoodAnswer:
    """Natural-log probabilities of the continuation's tokens, in order, with the tokens as decoded strings."""

    token_logprobs: list[float]
    tokens: list[str]
    #: API requests and tokens billed (API adapters); the multiple-choice record keeps it per item, not per answer.
    usage: dict[str, int] | None = field(default=None, compare=False)

    @property
    def total(self) -> float:
        return float(sum(self.token_logprobs))

    def to_record(self) -> dict[str, Any]:
        return {"kind": "loglikelihood", "token_logprobs": list(self.token_logprobs), "tokens": list(self.tokens)}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> LoglikelihoodAnswer:
        return cls([float(x) for x in record["token_logprobs"]], [str(t) for t in record["tokens"]])


@dataclass(frozen=True)
class NextTokenQuery:
    """log P(candidate | context) for each candidate: the label probabilities of a multiple-choice prompt.

    Candidates are tokenised like a ``LoglikelihoodQuery`` continuation (so ``" 1"`` after ``"Answer:"``). A
    one-token candidate is scored by its next-token probability; a candidate the tokenizer splits is scored over
    all its tokens (SmolLM2 encodes ``" 1"`` as ``" "`` then ``"1"``: the first token alone would give every numeric
    label the same score). ``tokens`` holds each candidate's first token and ``n_tokens`` its length, so a
    scorer can say when labels are not single tokens; an adapter that only sees next-token log-probabilities
    (``top_logprobs`` of an API) must refuse candidates longer than one token rather than score their first token.
    """

    context: str
    candidates: tuple[str, ...]

    kind: ClassVar[str] = "next_token"

    def to_record(self) -> dict[str, Any]:
        return {"kind": self.kind, "context": self.context, "candidates": list(self.candidates)}


@dataclass
class NextTokenAnswer:
    logprobs: list[float]
    tokens: list[str]
    n_tokens: list[int]
    usage: dict[str, int] | None = field(default=None, compare=False)

    def to_record(self) -> dict[str, Any]:
        return {
            "kind": "next_token",
            "logprobs": list(self.logprobs),
            "tokens": list(self.tokens),
            "n_tokens": list(self.n_tokens),
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> NextTokenAnswer:
        return cls(
            [float(x) for x in record["logprobs"]],
            [str(t) for t in record["tokens"]],
            [int(n) for n in record["n_tokens"]],
        )


@dataclass(frozen=True)
class SimilarityQuery:
    """Cosine similarity between the model's own representation of ``prompt`` and of each option.

    Causal LMs: the last layer's hidden state at the last token of each text, run on its own. Encoder-decoder
    models: the encoder's last-token state for the prompt, and for an option the decoder's last state when it
    reads the option conditioned on the prompt.
    """

    prompt: str
    options: tuple[str, ...]

    kind: ClassVar[str] = "similarity"

    def to_record(self) -> dict[str, Any]:
        return {"kind": self.kind, "prompt": self.prompt, "options": list(self.options)}


@dataclass
class SimilarityAnswer:
    cosines: list[float]
    usage: dict[str, int] | None = field(default=None, compare=False)

    def to_record(self) -> dict[str, Any]:
        return {"kind": "similarity", "cosines": list(self.cosines)}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SimilarityAnswer:
        return cls([float(x) for x in record["cosines"]])


Query = LoglikelihoodQuery | NextTokenQuery | SimilarityQuery | GenerateRequest
Answer = LoglikelihoodAnswer | NextTokenAnswer | SimilarityAnswer | GenerateResponse


def query_kind(query: Query) -> str:
    return "generate" if isinstance(query, GenerateRequest) else query.kind


def answer_from_record(record: dict[str, Any]) -> Answer:
    """Read a stored answer back; its ``kind`` says which type (a generate answer has ``texts``)."""
    kind = record.get("kind", "generate" if "texts" in record else None)
    if kind == "loglikelihood":
        return LoglikelihoodAnswer.from_record(record)
    if kind == "next_token":
        return NextTokenAnswer.from_record(record)
    if kind == "similarity":
        return SimilarityAnswer.from_record(record)
    if kind == "generate":
        return GenerateResponse.from_record(record)
    raise ValueError(f"stored answer of unknown kind {kind!r}")


@dataclass(frozen=True)
class MultipleChoiceRequest:
    """Every query one multiple-choice item needs, keyed ``"<scorer>:<key>"`` (each scorer builds its own).

    The runner answers the primitives through the adapter, asking each distinct query once per block of items,
    and stores the answers under the same keys, so a re-score reads exactly what each scorer asked for.
    """

    queries: dict[str, Query]

    def to_record(self) -> dict[str, Any]:
        return {"queries": {k: q.to_record() for k, q in self.queries.items()}}


@dataclass
class MultipleChoiceResponse:
    answers: dict[str, Answer]

    def scoped(self, scorer: str) -> dict[str, Answer]:
        """The answers to one scorer's queries, under the keys that scorer used."""
        prefix = f"{scorer}:"
        return {k[len(prefix) :]: a for k, a in self.answers.items() if k.startswith(prefix)}

    def to_record(self) -> dict[str, Any]:
        return {"answers": {k: a.to_record() for k, a in self.answers.items()}}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> MultipleChoiceResponse:
        return cls({str(k): answer_from_record(v) for k, v in record["answers"].items()})

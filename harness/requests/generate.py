"""``generate`` requests and responses: ``n`` independent samples for one input with one decoding setting."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from harness.decoding import DecodingConfig

#: Why a sample ended: end-of-sequence token, a stop string, or the token cap.
FINISH_REASONS: tuple[str, ...] = ("eos", "stop", "length")


@dataclass(frozen=True)
class GenerateRequest:
    """Ask for ``n`` independent samples for one input, with one decoding configuration.

    The task renders the input three ways and the adapter picks the one its model takes: ``prompt`` (the text a
    causal LM continues), ``messages`` (the same as chat turns, used when ``chat`` is true and the model has a chat
    template) and ``source`` (the encoder input of a sequence-to-sequence model, prefix included). A sample ends at
    end-of-sequence, at the first ``stop`` string (which is cut off, with what follows it) or after
    ``max_new_tokens`` tokens.
    """

    #: The text a causal LM continues: the task's prompt template filled in with the input.
    prompt: str
    #: How many independent samples to draw; the response must hold exactly ``n`` texts.
    n: int
    #: The instance's own seed (from the run seed, the task and the instance id): draw every random number of the
    #: answer from it, so a resumed run, or other requests in the same batch, change nothing.
    seed: int
    #: How each next token is drawn (temperature, top-k, top-p, typical-p); the default is ancestral sampling.
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    #: The most tokens one sample may take; a sample cut here ends with reason ``length``.
    max_new_tokens: int = 100
    #: Strings that end a sample: the first one found is cut off with what follows it (reason ``stop``).
    stop: tuple[str, ...] = ()
    #: The input as chat turns, ``(role, text)`` with role ``system``, ``user`` or ``assistant``, the last one the
    #: user's: what a chat model reads when ``chat`` is true.
    messages: tuple[tuple[str, str], ...] = ()
    #: The encoder input of a sequence-to-sequence model (``seq2seq_prefix`` included); empty: use ``prompt``.
    source: str = ""
    #: The task's ``chat`` setting: render ``messages`` with the model's chat template instead of continuing
    #: ``prompt`` (a chat-only API reads ``messages`` either way).
    chat: bool = False
    #: The instance asked about, so an adapter answering from recorded outputs (``replay``) finds its texts by id;
    #: empty in a multiple-choice bundle.
    instance_id: str = ""
    #: The input as the data gave it, before any template or ``seq2seq_prefix``: the instance's source text, or its
    #: dialogue turns joined by the task's ``turn_separator``; empty for a request not built from a generation
    #: instance (a multiple-choice free generation). Not stored: the samples file's ``doc`` holds the input, so
    #: stored requests stay as they were.
    input: str = field(default="", compare=False)

    kind: ClassVar[str] = "generate"

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        del record["input"]
        return record


@dataclass
class GenerateResponse:
    """The ``n`` samples, in the order drawn, with why each ended and how many tokens it took (stop string and
    end-of-sequence token included)."""

    #: The samples, ``n`` of them in the order drawn: the generated text only (not the prompt), as decoded, a
    #: stop string cut off with what follows it.
    texts: list[str]
    #: Why each sample ended, one per text: ``eos`` (end-of-sequence), ``stop`` (a stop string) or ``length``
    #: (``max_new_tokens`` reached).
    finish_reasons: list[str]
    #: Tokens each sample took, one per text (stop string and end-of-sequence token included); 0 where unknown
    #: (replayed texts).
    n_tokens: list[int]
    #: Token positions the model evaluated to answer (prompt once, plus each sample's tokens): the cost measure.
    tokens_evaluated: int = 0
    #: API usage billed for this answer, ``{"requests", "prompt_tokens", "completion_tokens"}``; None for models
    #: that are not an API.
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

"""The scoring requests a multiple-choice scorer asks for (``loglikelihood``, ``next_token``, ``similarity``) and
their responses. Their stored records carry a ``kind`` field, which is how a bundle's record is read back."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class LoglikelihoodRequest:
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
class LoglikelihoodResponse:
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
    def from_record(cls, record: dict[str, Any]) -> LoglikelihoodResponse:
        return cls([float(x) for x in record["token_logprobs"]], [str(t) for t in record["tokens"]])


@dataclass(frozen=True)
class NextTokenRequest:
    """log P(candidate | context) for each candidate: the label probabilities of a multiple-choice prompt.

    Candidates are tokenised like a ``LoglikelihoodRequest`` continuation (so ``" 1"`` after ``"Answer:"``). A
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
class NextTokenResponse:
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
    def from_record(cls, record: dict[str, Any]) -> NextTokenResponse:
        return cls(
            [float(x) for x in record["logprobs"]],
            [str(t) for t in record["tokens"]],
            [int(n) for n in record["n_tokens"]],
        )


@dataclass(frozen=True)
class SimilarityRequest:
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
class SimilarityResponse:
    cosines: list[float]
    usage: dict[str, int] | None = field(default=None, compare=False)

    def to_record(self) -> dict[str, Any]:
        return {"kind": "similarity", "cosines": list(self.cosines)}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SimilarityResponse:
        return cls([float(x) for x in record["cosines"]])

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

    #: The text conditioned on (a prompt). Whitespace at its end moves to the start of the continuation; the two are
    #: encoded separately and their token ids concatenated (lm-evaluation-harness's rule).
    context: str
    #: The text scored, token by token (an option as ``" " + text``, a rating phrase).
    continuation: str

    kind: ClassVar[str] = "loglikelihood"

    def to_record(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}


@dataclass
class LoglikelihoodResponse:
    """Natural-log probabilities of the continuation's tokens, in order, with the tokens as decoded strings."""

    #: Natural log of P(token | context, earlier continuation tokens) for each continuation token, in order; at
    #: least one. ``total`` is their sum.
    token_logprobs: list[float]
    #: The continuation's tokens as decoded strings, one per log-probability.
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

    #: The prompt, ending in the answer cue (``...Answer:``).
    context: str
    #: The labels as continuations (``" 1"``, ``" 2"``), tokenised like a ``LoglikelihoodRequest`` continuation.
    candidates: tuple[str, ...]

    kind: ClassVar[str] = "next_token"

    def to_record(self) -> dict[str, Any]:
        return {"kind": self.kind, "context": self.context, "candidates": list(self.candidates)}


@dataclass
class NextTokenResponse:
    """One log-probability per candidate, in the request's order, with how the candidate was tokenised."""

    #: Natural log of P(candidate | context), over all of the candidate's tokens.
    logprobs: list[float]
    #: Each candidate's first token, as decoded text.
    tokens: list[str]
    #: How many tokens each candidate took; above 1, the ``mcq_label`` scorer notes that labels are split. An adapter
    #: that only sees next-token log-probabilities must refuse such a candidate instead of scoring its first token.
    n_tokens: list[int]
    #: API requests and tokens billed (API adapters); the multiple-choice record keeps it per item, not per answer.
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

    #: The text the options are compared with (the built-in scorer: the item's prompt, options not shown). A causal
    #: LM represents each text by its last layer's state at its last token, the text run on its own.
    prompt: str
    #: The option texts, in the instance's order. An encoder-decoder model represents the prompt by the encoder's
    #: last-token state and an option by the decoder's last state when it reads the option after the prompt.
    options: tuple[str, ...]

    kind: ClassVar[str] = "similarity"

    def to_record(self) -> dict[str, Any]:
        return {"kind": self.kind, "prompt": self.prompt, "options": list(self.options)}


@dataclass
class SimilarityResponse:
    """The cosine similarity of the prompt's representation with each option's."""

    #: One cosine (from -1 to 1) per option, in the request's order.
    cosines: list[float]
    #: API requests and tokens billed (API adapters); the multiple-choice record keeps it per item, not per answer.
    usage: dict[str, int] | None = field(default=None, compare=False)

    def to_record(self) -> dict[str, Any]:
        return {"kind": "similarity", "cosines": list(self.cosines)}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SimilarityResponse:
        return cls([float(x) for x in record["cosines"]])

"""``word_distribution`` requests and responses: a next-word distribution computed exactly, up to a residual.

The kind (``harness.kinds.word_distribution``) says why and how; these are the types an adapter reads and returns.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from harness.decoding import DecodingConfig
from harness.requests.sample_words import SampleWordsRequest

#: Next tokens kept in ``top_tokens``.
TOP_TOKENS = 10


@dataclass(frozen=True)
class WordDistributionRequest:
    """The exact next-word distribution after ``context`` up to ``epsilon`` unresolved mass (or ``max_expansions``
    trie nodes run through the model, whichever comes first), plus the surface probabilities of ``words``."""

    #: The text the model continues (``ClozeInstance.context`` as it is).
    context: str
    #: Words (``exact`` rule, sorted) whose ``Surface`` the response must give; the kind asks for the human guesses
    #: and the corpus word.
    words: tuple[str, ...] = ()
    #: Stop once the unresolved mass (the response's ``residual``) is at most this; from 0 (inclusive) to 1.
    epsilon: float = 0.05
    #: The most trie nodes (token prefixes) run through the model for this context; the search may stop here with a
    #: residual above ``epsilon``.
    max_expansions: int = 20000
    #: Words also drawn by the ordinary sampler (``sample_request()``), reported in ``sampled``; 0: none.
    n_samples: int = 0
    #: The instance's own seed, for those samples (the same as a ``sample_words`` request of the instance gets).
    seed: int = 0
    #: Softmax temperature (> 0) of every next-token distribution the answer uses: search, greedy word, surface
    #: probabilities, top tokens and samples.
    temperature: float = 1.0
    #: Tokens a word may take: mass still without a complete word after this many counts as ``truncated``.
    max_new_tokens: int = 32
    #: The instance asked about (``ClozeInstance.id``), for an adapter answering from recorded outputs.
    instance_id: str = ""

    kind: ClassVar[str] = "word_distribution"

    def __post_init__(self) -> None:
        DecodingConfig(temperature=self.temperature)
        if not 0.0 <= self.epsilon < 1.0:
            raise ValueError(f"epsilon must be in [0, 1), got {self.epsilon}")
        if self.max_expansions < 1:
            raise ValueError(f"max_expansions must be at least 1, got {self.max_expansions}")
        if self.n_samples < 0:
            raise ValueError(f"n_samples must be non-negative, got {self.n_samples}")

    def sample_request(self) -> SampleWordsRequest:
        """The ordinary ``sample_words`` request for the ``n_samples`` words drawn beside the search."""
        return SampleWordsRequest(
            context=self.context,
            n=self.n_samples,
            seed=self.seed,
            temperature=self.temperature,
            max_new_tokens=self.max_new_tokens,
            instance_id=self.instance_id,
        )

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        record["words"] = list(self.words)
        return record


@dataclass(frozen=True)
class Surface:
    """One word's canonical spelling: log P(its tokens), log P(a word ends after them), its first token and that
    token's probability as the context's next token."""

    #: Natural log of P(the spelling's tokens | context); the spelling is ``" " + word`` after a context that does
    #: not end in whitespace, else ``word``. ``-inf`` if a token has probability 0.
    logprob: float
    #: Natural log of P(a word ends after those tokens): the mass of next tokens that start with whitespace or end
    #: the sequence.
    end_logprob: float
    #: The spelling's first token, as decoded text (``" The"``); comparable with ``top_tokens``' tokens.
    first_token: str
    #: That token's probability (not its log) as the context's next token.
    first_token_prob: float

    @property
    def word_logprob(self) -> float:
        """Pimentel & Meister's word probability of this spelling: the tokens, then the end of the word."""
        return self.logprob + self.end_logprob

    def to_record(self) -> dict[str, Any]:
        return {
            "logprob": self.logprob,
            "end_logprob": self.end_logprob,
            "first_token": self.first_token,
            "first_token_prob": self.first_token_prob,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Surface:
        return cls(
            float(record["logprob"]),
            float(record["end_logprob"]),
            str(record["first_token"]),
            float(record["first_token_prob"]),
        )


@dataclass
class WordDistributionResponse:
    """Word masses found by the search (unconditional: ``sum(probs) + sum(rejected) + residual == 1``).

    A word's true probability lies in ``[probs[w], probs[w] + residual]``.
    """

    #: Word (``exact`` rule) -> the unconditional probability mass the search found for it: a lower bound.
    probs: dict[str, float]
    #: The mass the search left unresolved (at most ``epsilon`` unless ``max_expansions`` stopped it), so each word's
    #: true probability is at most this much above ``probs[w]``. ``sum(probs) + sum(rejected) + residual == 1``.
    residual: float
    #: Reason -> mass of sequences without a word: ``empty`` (the sequence ends first), ``truncated`` (no complete
    #: word within ``max_new_tokens``).
    rejected: dict[str, float] = field(default_factory=dict)
    #: Word -> its canonical spelling scored: every word of the request's ``words`` (checked), and, in the built-in
    #: adapters, every sampled word and the greedy word (the biased estimator reads them).
    surface: dict[str, Surface] = field(default_factory=dict)
    #: The ``TOP_TOKENS`` (10) most probable next tokens after the context, most probable first, as
    #: ``(token text, probability)``.
    top_tokens: list[tuple[str, float]] = field(default_factory=list)
    #: The word greedy token-by-token decoding gives; None if it ends without one.
    greedy: str | None = None
    #: Word -> count of the request's ``n_samples`` sampled words (rejected samples are not counted, so the sum may
    #: be less); empty when none were asked for.
    sampled: dict[str, int] = field(default_factory=dict)
    #: Trie nodes run through the model.
    expansions: int = 0
    #: Token positions the model evaluated to answer (context included): the cost the benchmark compares.
    tokens_evaluated: int = 0

    @property
    def word_mass(self) -> float:
        """The mass that ends in a word or is still unresolved (what a word distribution is conditioned on)."""
        return max(0.0, 1.0 - math.fsum(self.rejected.values()))

    def conditional(self) -> tuple[dict[str, float], float]:
        """``(word probabilities, residual)`` conditioned on the sample giving a word, as the sampler's counts are;
        the same bound holds: each true conditional probability lies in ``[p, p + residual]``."""
        mass = self.word_mass
        if mass <= 0:
            return {}, 1.0
        return {w: p / mass for w, p in self.probs.items()}, min(1.0, self.residual / mass)

    def word_probability(self, word: str) -> tuple[float, float]:
        """``(low, high)`` bounds of ``word``'s unconditional probability: what the search found for it, or the
        probability of its canonical spelling if that is larger (one of the sequences that spell it, so also a lower
        bound; it covers words the search never reached), and at most the residual more than the search found."""
        found = self.probs.get(word, 0.0)
        surface = self.surface.get(word)
        spelled = math.exp(surface.word_logprob) if surface is not None else 0.0
        return max(found, spelled), min(1.0, found + self.residual)

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "probs": dict(sorted(self.probs.items(), key=lambda kv: (-kv[1], kv[0]))),
            "residual": self.residual,
            "rejected": dict(sorted(self.rejected.items())),
            "surface": {w: s.to_record() for w, s in sorted(self.surface.items())},
            "top_tokens": [[t, p] for t, p in self.top_tokens],
            "greedy": self.greedy,
            "sampled": dict(sorted(self.sampled.items(), key=lambda kv: (-kv[1], kv[0]))),
            "expansions": self.expansions,
            "tokens_evaluated": self.tokens_evaluated,
        }
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> WordDistributionResponse:
        return cls(
            probs={str(w): float(p) for w, p in record["probs"].items()},
            residual=float(record["residual"]),
            rejected={str(k): float(v) for k, v in record.get("rejected", {}).items()},
            surface={str(w): Surface.from_record(s) for w, s in record.get("surface", {}).items()},
            top_tokens=[(str(t), float(p)) for t, p in record.get("top_tokens", [])],
            greedy=None if record.get("greedy") is None else str(record["greedy"]),
            sampled={str(w): int(c) for w, c in record.get("sampled", {}).items()},
            expansions=int(record.get("expansions", 0)),
            tokens_evaluated=int(record.get("tokens_evaluated", 0)),
        )

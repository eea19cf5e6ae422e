"""``word_distribution``: the model's next-word distribution computed exactly, up to a stated residual mass.

Why: ``sample_words`` estimates the distribution from ``n`` samples, and the TVD of an estimate is biased upward
(a word seen once in 40 samples gets 2.5% however rare it is). Here a local model expands its token trie best-first
by probability, with the word rule of ``mode=exact`` (``harness.text.decide_word``), until the mass it has not
resolved into a word or a rejection is at most ``epsilon``. Every reported probability is then a lower bound off by
at most ``residual`` in total, so a TVD computed from it is exact within a stated interval (``scorers.exact``).

The same request also gives what the further analyses of the next-word study need from the model, so one run
serves them all:

- ``surface``: for each word asked about (the human guesses and the corpus word) and each sampled or greedy word,
  the log-probability of its canonical token sequence (``" " + word`` after a context that ends without
  whitespace), the log-probability that a word ends there (the next token starts with whitespace or ends the
  sequence: Pimentel & Meister 2024's end-of-word correction for tokenizers that mark the *beginning* of words),
  and its first token with that token's probability (the token-level analysis);
- ``top_tokens``: the most probable next tokens (top-1 next-token accuracy);
- ``greedy``: the word greedy token-by-token decoding gives (the study's biased estimator includes it);
- ``sampled``: ``n_samples`` words drawn by the ordinary sampler with the request's seed, so exact and sampled
  TVD are compared on the same contexts, and the biased estimator has the study's sample support.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from harness.decoding import DecodingConfig, sampling_temperature
from harness.errors import HarnessError
from harness.instances import ClozeInstance, Instance
from harness.kinds.base import RequestKind, add_counts
from harness.kinds.sample_words import MAX_WORD_TOKENS, SampleWordsRequest, top_shares
from harness.options import Option, Options, int_range, number_range, positive_int

if TYPE_CHECKING:
    from harness.models import ModelAdapter
    from harness.scoring import Scorer
    from harness.task_config import TaskConfig

#: Next tokens kept in ``top_tokens``.
TOP_TOKENS = 10


@dataclass(frozen=True)
class WordDistributionRequest:
    """The exact next-word distribution after ``context`` up to ``epsilon`` unresolved mass (or ``max_expansions``
    trie nodes run through the model, whichever comes first), plus the surface probabilities of ``words``."""

    context: str
    words: tuple[str, ...] = ()
    epsilon: float = 0.05
    max_expansions: int = 20000
    n_samples: int = 0
    seed: int = 0
    temperature: float = 1.0
    max_new_tokens: int = 32
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

    logprob: float
    end_logprob: float
    first_token: str
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

    ``rejected`` holds the mass of sequences that end without a word (``empty``) or run past ``max_new_tokens``
    (``truncated``); ``residual`` the mass the search left unresolved. A word's true probability lies in
    ``[probs[w], probs[w] + residual]``.
    """

    probs: dict[str, float]
    residual: float
    rejected: dict[str, float] = field(default_factory=dict)
    surface: dict[str, Surface] = field(default_factory=dict)
    top_tokens: list[tuple[str, float]] = field(default_factory=list)
    greedy: str | None = None
    sampled: dict[str, int] = field(default_factory=dict)
    #: Trie nodes run through the model, and token positions evaluated (context included).
    expansions: int = 0
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


def asked_words(instance: ClozeInstance) -> tuple[str, ...]:
    """The words whose surface probability a request asks for: every human guess and the corpus word, sorted."""
    words = set(instance.human_counts)
    if instance.target:
        words.add(instance.target)
    return tuple(sorted(w for w in words if w))


class WordDistributionKind(RequestKind):
    name = "word_distribution"
    request_type = WordDistributionRequest
    response_type = WordDistributionResponse
    instance_type = ClozeInstance
    view = "cloze"
    params: ClassVar[Options] = Options(
        Option(
            "epsilon",
            number_range(0.0, 0.999, as_float=True),
            0.05,
            "stop when the unresolved probability mass is at most this (the TVD bound's width)",
        ),
        Option("max_expansions", positive_int, 20000, "trie nodes run through the model per context, at most"),
        Option("n_samples", int_range(0, 1_000_000), 1000, "words also sampled per context (0: none)"),
        Option("temperature", sampling_temperature, 1.0, "softmax temperature (> 0)"),
        Option(
            "max_new_tokens",
            int_range(1, MAX_WORD_TOKENS),
            32,
            "tokens a word may take before its sequence counts as truncated",
        ),
    )

    def build(
        self, config: TaskConfig, instance: Instance, seed: int, scorers: Sequence[Scorer]
    ) -> WordDistributionRequest:
        self.check_instance(config, instance)
        assert isinstance(instance, ClozeInstance)
        p = config.params
        return WordDistributionRequest(
            context=instance.context,
            words=asked_words(instance),
            epsilon=float(p["epsilon"]),
            max_expansions=int(p["max_expansions"]),
            n_samples=int(p["n_samples"]),
            seed=seed,
            temperature=float(p["temperature"]),
            max_new_tokens=int(p["max_new_tokens"]),
            instance_id=instance.id,
        )

    def check_response(self, adapter: ModelAdapter, request: Any, response: Any) -> None:
        total = math.fsum(response.probs.values()) + math.fsum(response.rejected.values()) + response.residual
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise HarnessError(
                f"model {adapter.spec.label}: word_distribution masses sum to {total:.6f}, not 1 "
                f"(instance {request.instance_id or request.context[-40:]!r})"
            )
        missing = [w for w in request.words if w not in response.surface]
        if missing:
            raise HarnessError(
                f"model {adapter.spec.label}: word_distribution gave no surface probability for {missing[:3]}"
            )
        if sum(response.sampled.values()) > request.n_samples:
            raise HarnessError(f"model {adapter.spec.label}: more sampled words than the {request.n_samples} asked")

    def summarize(self, summary: dict[str, Any], record: dict[str, Any]) -> None:
        """Trie nodes expanded, token positions evaluated, and the largest residual left (how exact the run is)."""
        add_counts(summary, record, ("expansions", "tokens_evaluated"))
        residual = float(record.get("residual", 0.0))
        summary["max_residual"] = max(float(summary.get("max_residual", 0.0)), residual)

    def decoding_label(self, params: dict[str, Any], variant: str | None) -> str | None:
        label = DecodingConfig(temperature=float(params.get("temperature", 1.0))).label
        return f"{label}, exact to {params.get('epsilon', 0.05)}"

    def human_view(self, sample: dict[str, Any]) -> Any:
        return top_shares(sample.get("human", {}).get("counts", {}))

    def model_view(self, sample: dict[str, Any], method: str | None) -> Any:
        probs = (sample.get("response") or {}).get("probs", {})
        ranked = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0]))[:15]
        return {word: round(float(p), 5) for word, p in ranked}

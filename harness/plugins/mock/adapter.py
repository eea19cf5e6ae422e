"""``--model mock:NAME``: a fake model that answers every request kind deterministically from its seed.

Why it exists: the runner, the response store, resuming, re-scoring, every scorer and the leaderboard can be
tested in seconds instead of minutes of a real model (and the next-token games of ``harness collect``, through its
token level: words as tokens, see ``_TokenTable``). Its answers are NOT a language model's: words and texts are
drawn from a Zipf distribution over the input's own words and a fixed list of common English words, and
log-probabilities and representation vectors are hashes of the text. They are a function of the request alone
(its seed, its texts, its decoding settings) and of the ``--model-args``, so a run, a resumed run and a run with
other block sizes give identical results, on every platform. Never report a number computed with it.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from harness.api import (
    DecodingConfig,
    GenerateRequest,
    GenerateResponse,
    HarnessError,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    ModelAdapter,
    ModelSpec,
    NextTokenRequest,
    NextTokenResponse,
    Option,
    Options,
    SampleWordsRequest,
    SampleWordsResponse,
    SimilarityRequest,
    SimilarityResponse,
    Surface,
    WordDistributionRequest,
    WordDistributionResponse,
    number_range,
    one_of,
    open_unit_float,
    positive_float,
    positive_int,
    rule_word,
)

#: Words every mock answer can use besides the input's own words (most frequent first).
COMMON_WORDS: tuple[str, ...] = (
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "that",
    "it",
    "for",
    "on",
    "with",
    "as",
    "he",
    "she",
    "they",
    "be",
    "at",
    "by",
    "this",
    "had",
    "not",
    "are",
    "but",
    "from",
    "or",
    "have",
    "an",
    "which",
    "one",
    "you",
    "were",
    "her",
    "all",
    "their",
    "there",
    "been",
    "has",
    "when",
    "who",
    "will",
    "more",
    "no",
    "if",
    "out",
    "so",
    "said",
    "what",
    "up",
    "its",
    "about",
    "into",
    "than",
    "them",
    "can",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
)

MOCK_OPTIONS = Options(
    Option("block_size", positive_int, 4, "instances the runner hands over at once (exercises fixed blocks)"),
    Option("zipf", positive_float, 1.1, "Zipf exponent of the word distribution at temperature 1"),
    Option("input_words", positive_int, 8, "how many of the input's last distinct words lead the vocabulary"),
    Option("reject_rate", open_unit_float, 0.01, "share of sample_words samples rejected as truncated"),
    Option("dim", positive_int, 16, "size of the hashed representation vectors (similarity)"),
    Option("max_words", positive_int, 12, "longest generated text, in words"),
    Option("label_tokens", one_of("words", "chars"), "words", "how next_token candidates count tokens"),
    Option(
        "latency",
        number_range(0, 3600, as_float=True),
        0.0,
        "seconds each block of requests takes (a slow model, for lock tests)",
        type="float >= 0",
    ),
)

_WORD = re.compile(r"[a-z]+")
_TOKEN = re.compile(r"\s*\S+")


def _unit(*parts: object) -> float:
    """A float in [0, 1) that is a stable function of ``parts`` (sha256, not Python's salted ``hash``)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _rng(*parts: object) -> np.random.Generator:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


#: Ids of the mock's tokens (``TokenLevelModel``): its distributions are arrays of this length.
MOCK_VOCAB_SIZE = 4096
#: A mock token: a word with the whitespace before it, or whitespace that ends the text (so pieces join to the text).
_PIECE = re.compile(r"\s*\S+|\s+")
#: Share of every next-token distribution spread evenly over the whole vocabulary, so any token has a probability.
_FLOOR = 0.01


class _TokenTable:
    """The mock's tokens: pieces of text (:data:`_PIECE`) and their ids, both ways.

    A piece's id is its SHA-256 modulo :data:`MOCK_VOCAB_SIZE`, so ids are the same in every process; a piece whose
    id another piece already holds takes the next free id (linear probing), so two pieces never share an id, at the
    price that such a piece's id depends on which pieces came before it. The common words (``" " + word``, in
    :data:`COMMON_WORDS` order) are registered first, so the tokens the mock samples most decode to real words; an id
    no piece holds decodes to ``" tok<id>"``."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.pieces: dict[int, str] = {}
        for word in COMMON_WORDS:
            self.id(" " + word)

    def id(self, piece: str) -> int:
        found = self.ids.get(piece)
        if found is not None:
            return found
        if len(self.pieces) >= MOCK_VOCAB_SIZE:
            raise HarnessError(f"the mock model's {MOCK_VOCAB_SIZE} token ids are all taken; use fewer distinct words")
        slot = int(_unit("token", piece) * MOCK_VOCAB_SIZE)
        while slot in self.pieces:
            slot = (slot + 1) % MOCK_VOCAB_SIZE
        self.ids[piece], self.pieces[slot] = slot, piece
        return slot

    def piece(self, token: int) -> str:
        return self.pieces.get(int(token), f" tok{int(token)}")


#: The common words' ids, the same in every table (they are registered first, in a fixed order).
_COMMON_IDS: tuple[int, ...] = tuple(_TokenTable().ids[" " + word] for word in COMMON_WORDS)


class MockAdapter(ModelAdapter):
    """Deterministic answers to ``sample_words``, ``generate``, ``loglikelihood``, ``next_token`` and
    ``similarity`` (the module docstring says how)."""

    supported_requests: ClassVar[frozenset[str]] = frozenset(
        {"sample_words", "word_distribution", "generate", "loglikelihood", "next_token", "similarity"}
    )
    options: ClassVar[Options] = MOCK_OPTIONS

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self.settings = MOCK_OPTIONS.parse(spec.args, f"--model-args for {spec.label}")
        self.group_size = int(self.settings["block_size"])

    def _wait(self) -> None:
        if self.settings["latency"]:
            time.sleep(self.settings["latency"])

    # ------------------------------------------------------------------ words and texts
    def _vocabulary(self, text: str) -> list[str]:
        """The input's last distinct words (most recent first), then the common words not among them."""
        own: list[str] = []
        for word in reversed(_WORD.findall(text.lower())):
            if word not in own:
                own.append(word)
            if len(own) == self.settings["input_words"]:
                break
        return own + [w for w in COMMON_WORDS if w not in own]

    def _weights(self, n_words: int, decoding: DecodingConfig) -> np.ndarray:
        """Zipf weights sharpened by temperature, then cut by top-k and top-p as a sampler would cut them."""
        ranks = np.arange(1, n_words + 1, dtype=np.float64)
        weights = ranks ** (-self.settings["zipf"] / decoding.temperature)
        weights /= weights.sum()
        if decoding.top_k:
            weights[decoding.top_k :] = 0.0
        if decoding.top_p < 1:
            keep = int(np.searchsorted(np.cumsum(weights), decoding.top_p) + 1)
            weights[keep:] = 0.0
        return weights / weights.sum()

    def sample_words_many(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        self._wait()
        return [self._sample_words(r) for r in requests]

    def _sample_words(self, request: SampleWordsRequest) -> SampleWordsResponse:
        rng = _rng("sample_words", request.seed)
        vocabulary = self._vocabulary(request.context)
        weights = self._weights(len(vocabulary), DecodingConfig(temperature=request.temperature))
        rejected = int(rng.binomial(request.n, self.settings["reject_rate"]))
        drawn = rng.choice(len(vocabulary), size=request.n - rejected, p=weights)
        counts: dict[str, int] = {}
        for index in drawn.tolist():
            # The mock's words are whole words: the task's word rule cuts them as it cuts any sample.
            word = rule_word(vocabulary[index], request.mode, request.segmenter) or vocabulary[index]
            counts[word] = counts.get(word, 0) + 1
        return SampleWordsResponse(
            counts=counts,
            n_requested=request.n,
            rejected={"truncated": rejected} if rejected else {},
            tokens_evaluated=len(request.context.split()) + 2 * request.n,
        )

    def word_distribution_many(self, requests: list[WordDistributionRequest]) -> list[WordDistributionResponse]:
        self._wait()
        return [self._word_distribution(r) for r in requests]

    def _word_distribution(self, request: WordDistributionRequest) -> WordDistributionResponse:
        """The mock's own word distribution (its Zipf weights, less the reject rate), listed most probable first
        until at most ``epsilon`` is left unlisted; every word is one token (``" " + word``)."""
        vocabulary = self._vocabulary(request.context)
        weights = self._weights(len(vocabulary), DecodingConfig(temperature=request.temperature))
        rate = float(self.settings["reject_rate"])
        probs: dict[str, float] = {}
        listed = 0.0
        for word, weight in zip(vocabulary, weights.tolist(), strict=True):
            if 1.0 - rate - listed <= request.epsilon:
                break
            probs[word] = weight * (1.0 - rate)
            listed += probs[word]
        weight_of = dict(zip(vocabulary, weights.tolist(), strict=True))
        sampled = self._sample_words(request.sample_request()).counts
        surface = {}
        for word in sorted(set(request.words) | set(sampled) | {vocabulary[0]}):
            p = weight_of.get(word, 0.0) * (1.0 - rate)
            lp = math.log(p) if p > 0 else -math.inf
            surface[word] = Surface(logprob=lp, end_logprob=0.0, first_token=" " + word, first_token_prob=p)
        return WordDistributionResponse(
            probs=probs,
            residual=max(0.0, 1.0 - rate - listed),
            rejected={"truncated": rate} if rate else {},
            surface=surface,
            top_tokens=[(" " + w, p * (1.0 - rate)) for w, p in zip(vocabulary[:10], weights.tolist(), strict=False)],
            greedy=vocabulary[0],
            sampled=sampled,
            expansions=len(probs),
            tokens_evaluated=len(request.context.split()) + len(probs),
        )

    def generate_many(self, requests: list[GenerateRequest]) -> list[GenerateResponse]:
        self._wait()
        return [self._generate(r) for r in requests]

    def _generate(self, request: GenerateRequest) -> GenerateResponse:
        shown = request.source or (
            " ".join(text for _, text in request.messages) if request.chat and request.messages else request.prompt
        )
        vocabulary = self._vocabulary(shown)
        weights = self._weights(len(vocabulary), request.decoding)
        rng = _rng("generate", request.seed, request.decoding.label)
        cap = min(request.max_new_tokens, self.settings["max_words"])
        texts: list[str] = []
        reasons: list[str] = []
        n_tokens: list[int] = []
        for _ in range(request.n):
            length = int(rng.integers(1, cap + 1))
            words = [vocabulary[i] for i in rng.choice(len(vocabulary), size=length, p=weights).tolist()]
            text = " " + " ".join(words) + "."
            reason = "length" if length == request.max_new_tokens else "eos"
            for stop in request.stop:
                if stop in text:
                    text, reason = text[: text.index(stop)], "stop"
            texts.append(text)
            reasons.append(reason)
            n_tokens.append(length + (reason != "length"))
        return GenerateResponse(
            texts=texts,
            finish_reasons=reasons,
            n_tokens=n_tokens,
            tokens_evaluated=len(shown.split()) + sum(n_tokens),
        )

    # ------------------------------------------------------------------ scores and vectors
    def loglikelihood_many(self, queries: list[LoglikelihoodRequest]) -> list[LoglikelihoodResponse]:
        answers = []
        for query in queries:
            context = query.context.rstrip()
            continuation = query.context[len(context) :] + query.continuation
            tokens = _TOKEN.findall(continuation) or [continuation]
            logprobs = [-(0.1 + 6.0 * _unit("ll", context, tokens[:i], tok)) for i, tok in enumerate(tokens)]
            answers.append(LoglikelihoodResponse(logprobs, tokens))
        return answers

    def next_token_many(self, queries: list[NextTokenRequest]) -> list[NextTokenResponse]:
        answers = []
        for query in queries:
            scores = [-(0.1 + 6.0 * _unit("next", query.context, c)) for c in query.candidates]
            # Normalised over the candidates, so the label probabilities of one prompt sum to at most 1.
            top = max(scores)
            norm = top + math.log(sum(math.exp(s - top) for s in scores) + math.exp(-0.5))
            split = (lambda c: len(c.split()) or 1) if self.settings["label_tokens"] == "words" else len
            answers.append(
                NextTokenResponse(
                    [s - norm for s in scores],
                    [c.split()[0] if c.split() else c for c in query.candidates],
                    [split(c) for c in query.candidates],
                )
            )
        return answers

    def _vector(self, text: str) -> np.ndarray:
        return _rng("vector", text).standard_normal(self.settings["dim"])

    def similarity_many(self, queries: list[SimilarityRequest]) -> list[SimilarityResponse]:
        answers = []
        for query in queries:
            prompt = self._vector(query.prompt)
            cosines = []
            for option in query.options:
                vec = self._vector(option)
                cosines.append(float(prompt @ vec / (np.linalg.norm(prompt) * np.linalg.norm(vec))))
            answers.append(SimilarityResponse(cosines))
        return answers

    # ------------------------------------------------------------------ token level (harness.models.TokenLevelModel)
    _table: _TokenTable | None = None

    def _tokens(self) -> _TokenTable:
        if self._table is None:
            self._table = _TokenTable()
        return self._table

    def token_ids(self, text: str) -> list[int]:
        """``text`` cut into :data:`_PIECE` pieces (a word with the whitespace before it), as their ids
        (:class:`_TokenTable`)."""
        table = self._tokens()
        return [table.id(piece) for piece in _PIECE.findall(text)]

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """Each id's piece: they join back to the text exactly."""
        table = self._tokens()
        return [table.piece(t) for t in ids]

    def next_token_logprobs(self, contexts: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """A function of the context ids alone: the context's last distinct tokens (most recent first, at most
        ``input_words``), then the common words, ranked by Zipf weights jittered by a stream seeded from the ids,
        and :data:`_FLOOR` of the mass spread evenly over all :data:`MOCK_VOCAB_SIZE` ids."""
        self._wait()
        answers = []
        for context in contexts:
            ids = [int(t) for t in context]
            own: list[int] = []
            for token in reversed(ids):
                if token not in own:
                    own.append(token)
                if len(own) == self.settings["input_words"]:
                    break
            ranked = own + [t for t in _COMMON_IDS if t not in own]
            weights = np.arange(1, len(ranked) + 1, dtype=np.float64) ** -self.settings["zipf"]
            weights *= np.exp(0.5 * _rng("token_logprobs", ids).standard_normal(len(ranked)))
            probs = np.full(MOCK_VOCAB_SIZE, _FLOOR / MOCK_VOCAB_SIZE)
            probs[ranked] += (1.0 - _FLOOR) * weights / weights.sum()
            answers.append(np.log(probs / probs.sum()))
        return answers

    def info(self) -> dict[str, Any]:
        return {"kind": self.spec.kind, "name": self.spec.name, "settings": dict(self.settings)}

    def close(self) -> None:
        """Nothing to release."""

"""Answers the scoring queries of multiple-choice tasks (``loglikelihood``, ``next_token``, ``similarity``) with a
Hugging Face model, causal or sequence-to-sequence.

:class:`QueryScorer` is the entry point the ``hf`` adapter calls. It encodes the queries
(:mod:`harness.plugins.hf.queries.encoding`, lm-evaluation-harness's tokenisation), groups the encoded pairs under their
contexts, and hands each group to the causal scorer (:mod:`harness.plugins.hf.queries.causal`, which reuses a context's
keys/values) or the encoder-decoder scorer (:mod:`harness.plugins.hf.queries.seq2seq`); similarity vectors come from
:mod:`harness.plugins.hf.queries.similarity`. All of them batch through :mod:`harness.plugins.hf.queries.batching`. The
numbers equal an unbatched forward pass of ``context + continuation`` up to float rounding; log-softmax always runs in
float32, whatever the model dtype.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import torch

from harness.api import (
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
    SimilarityRequest,
    SimilarityResponse,
)
from harness.plugins.hf.queries.batching import Ids, ScoringModel
from harness.plugins.hf.queries.causal import CausalScorer
from harness.plugins.hf.queries.encoding import QueryEncoder
from harness.plugins.hf.queries.seq2seq import Seq2SeqScorer
from harness.plugins.hf.queries.similarity import causal_vectors, seq2seq_vectors
from harness.plugins.hf.shared.model_calls import cache_keyword
from harness.plugins.hf.shared.placement import engine_placement

#: Rows per forward pass when the caller gives none (the loader's fixed CPU default).
DEFAULT_BATCH_SIZE = 512


class QueryScorer:
    """Scores continuations, next-token candidates and representation similarities for one model.

    ``batch_size`` caps the rows of one forward pass. ``kv_reuse`` (default on) scores a context's continuations
    against its cached keys/values; off, every query is a full padded sequence (kept for model families whose cache
    cannot be shared, and to measure the difference).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        device: torch.device | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        kv_reuse: bool = True,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size, self.device = engine_placement(model, batch_size, device)
        self.kv_reuse = kv_reuse
        keyword = cache_keyword(model)
        #: How the queries' texts become token ids (the BOS rule, whitespace moves, truncation to the model).
        self.encoder = QueryEncoder(model, tokenizer)
        self.seq2seq = self.encoder.seq2seq
        params = inspect.signature(model.forward).parameters
        self.scoring = ScoringModel(
            model=model,
            device=self.device,
            batch_size=batch_size,
            pad_id=self.encoder.pad_id,
            cache_keyword=keyword,
            keeps_logits="logits_to_keep" in params,
        )
        self._causal = CausalScorer(self.scoring)
        self._seq2seq = Seq2SeqScorer(self.scoring)

    def loglikelihood_many(self, queries: Sequence[LoglikelihoodRequest]) -> list[LoglikelihoodResponse]:
        """Token log-probabilities of every continuation; each distinct (encoded) context runs once."""
        encoder = self.encoder
        cache: dict[str, list[int]] = {}
        pairs = []
        for query in queries:
            context_ids, continuation_ids = encoder.pair(query.context, query.continuation, cache)
            pairs.append((encoder.fit(context_ids, len(continuation_ids)), continuation_ids))
        scores = self._score_pairs(pairs)
        return [
            LoglikelihoodResponse(token_logprobs=scores[pair], tokens=[encoder.token_text(t) for t in pair[1]])
            for pair in pairs
        ]

    def next_token_many(self, queries: Sequence[NextTokenRequest]) -> list[NextTokenResponse]:
        """Log-probability of each candidate after the context: its next-token probability when it is one token,
        and the probability of all its tokens when the tokenizer splits it (SmolLM2 encodes ``" 1"`` as ``" "``
        then ``"1"``, so a first-token score would give every numeric label the same value). It is the loglikelihood
        of the candidate as a continuation and goes through the same grouping: candidates whose effective context is
        equal share one context pass."""
        encoder = self.encoder
        cache: dict[str, list[int]] = {}
        encoded: list[list[tuple[Ids, Ids]]] = []
        for query in queries:
            row = []
            for candidate in query.candidates:
                context_ids, candidate_ids = encoder.pair(query.context, candidate, cache)
                if not candidate_ids:
                    raise ValueError(f"next_token candidate {candidate!r} after {query.context!r} has no tokens")
                row.append((encoder.fit(context_ids, len(candidate_ids)), candidate_ids))
            encoded.append(row)
        scores = self._score_pairs([(c, ids) for row in encoded for c, ids in row])
        return [
            NextTokenResponse(
                logprobs=[float(sum(scores[(c, ids)])) for c, ids in row],
                tokens=[encoder.token_text(ids[0]) for _, ids in row],
                n_tokens=[len(ids) for _, ids in row],
            )
            for row in encoded
        ]

    def similarity_many(self, queries: Sequence[SimilarityRequest]) -> list[SimilarityResponse]:
        """Cosines between prompt and option representations (see ``SimilarityRequest``); each distinct text (causal)
        or prompt/option pair (seq2seq) is run once per call."""
        if self.seq2seq:
            prompts, options = seq2seq_vectors(self._seq2seq, self.encoder, queries)
            pairs = [[(prompts[q.prompt], options[(q.prompt, o)]) for o in q.options] for q in queries]
        else:
            texts = list(dict.fromkeys(t for q in queries for t in (q.prompt, *q.options)))
            causal = causal_vectors(self.scoring, self.encoder, texts)
            pairs = [[(causal[q.prompt], causal[o]) for o in q.options] for q in queries]
        answers = []
        for row in pairs:
            cosines = [
                max(-1.0, min(1.0, float(torch.nn.functional.cosine_similarity(a, b, dim=0, eps=1e-12))))
                for a, b in row
            ]
            answers.append(SimilarityResponse(cosines=cosines))
        return answers

    @torch.inference_mode()
    def _score_pairs(self, pairs: Sequence[tuple[Ids, Ids]]) -> dict[tuple[Ids, Ids], list[float]]:
        """Token log-probabilities of each distinct pair, its continuations grouped under their context (in order
        of first appearance, so passes are the same on every run)."""
        groups: dict[Ids, list[Ids]] = {}
        for context, continuation in dict.fromkeys(pairs):
            groups.setdefault(context, []).append(continuation)
        scores: dict[tuple[Ids, Ids], list[float]] = {}
        full: list[tuple[Ids, Ids]] = []
        # Contexts in token order, so that prompts sharing a beginning (the same description and scenario asked
        # several ways) follow each other and each reuses the keys/values of the prefix it shares with the last.
        for context in sorted(groups):
            continuations = groups[context]
            scoring = [c for c in continuations if c]
            for continuation in continuations:
                if not continuation:
                    scores[(context, continuation)] = []  # log P(nothing) = 0
            if not scoring:
                continue
            result: list[list[float]] | None
            if self.seq2seq:
                result = self._seq2seq.score_group(context, scoring)
            elif self.kv_reuse:
                result = self._causal.score_group_reusing_context(context, scoring)
            else:
                result = None
            if result is None:
                full.extend((context, c) for c in scoring)
            else:
                scores.update(((context, c), r) for c, r in zip(scoring, result, strict=True))
        if full:
            scores.update(zip(full, self._causal.score_full(full), strict=True))
        return scores

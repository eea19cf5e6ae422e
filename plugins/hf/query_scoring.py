"""Answers the scoring queries of multiple-choice tasks (``loglikelihood``, ``next_token``, ``similarity``) with a
Hugging Face model, causal or sequence-to-sequence.

Tokenisation follows lm-evaluation-harness, so scores are comparable with published numbers: whitespace at the end
of a context moves to the front of its continuation (``"Answer: " + "1"`` is scored as ``"Answer:" + " 1"``,
which is how a BPE tokenizer writes the text), context and continuation are encoded separately without special
tokens, and the context gets the tokenizer's BOS token in front when the tokenizer normally adds one. A context that
encodes to nothing (``""``) becomes the BOS token, or the EOS token for tokenizers without one, because the first
continuation token has to be predicted from something.

A multiple-choice item asks for several continuations of one context. Causal models therefore run each distinct
context once (batch 1, its keys/values kept) and score all of its continuations in one pass that reads those
keys/values (:meth:`QueryScorer._score_group_kv`): with a 120-token context and 5 short answers that is 1 context
pass plus about 5 x 14 cheap positions, instead of 5 x 135 positions for full sequences. Model families whose cache
is not plain per-layer keys/values (sliding-window, recurrent) take the full-sequence path
(:meth:`QueryScorer._score_full`), as does ``kv_reuse=False``. Either way the numbers equal an unbatched forward pass
of ``context + continuation`` up to float rounding; log-softmax always runs in float32, whatever the model dtype.

Sequence-to-sequence models read the context through the encoder (encoded with the tokenizer's own special tokens,
as a source text is) and score the continuation as the decoder's target, after the decoder start token the model
prepends. Nothing is moved between the two: they are separate sequences, so the context's trailing whitespace and
the continuation's leading whitespace are stripped (a target starts a fresh sequence; SentencePiece tokenizers such
as T5's drop that whitespace anyway, and stripping gives byte-level tokenizers the same behaviour).

Why this module is long (over 500 lines): it has one job, one class answering the three query kinds for causal and
sequence-to-sequence models, and its parts (encoding, the context-reuse cache, batching into passes, the three entry
points) all work on the same encoded pairs and the same forward-pass batching, so splitting it would spread one
algorithm over several files.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import Any

import torch

from harness.requests import (
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
    SimilarityRequest,
    SimilarityResponse,
)
from plugins.hf.model_calls import cache_keyword, output_cache

#: Rows per forward pass when the caller gives none (the loader's fixed CPU default).
DEFAULT_BATCH_SIZE = 512

_DECODE_KWARGS: dict[str, Any] = {"clean_up_tokenization_spaces": False}

Ids = tuple[int, ...]


#: Shortest shared token prefix worth reusing from the previous context's keys/values.
MIN_SHARED_PREFIX = 8


def _adds_bos(tokenizer: Any) -> bool:
    """Whether the tokenizer puts its BOS token in front of a text by default (Llama-2/3 do, GPT-2 and SmolLM2 do
    not). Probed rather than read from ``add_bos_token``, which not every tokenizer class defines."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    with_special = list(tokenizer("a")["input_ids"])
    without = list(tokenizer("a", add_special_tokens=False)["input_ids"])
    return bool(with_special) and with_special[0] == bos and (not without or without[0] != bos)


def _position_limit(model: Any) -> int | None:
    """Longest input the model's position embeddings allow, or None when it has no such limit."""
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    limit = getattr(config, "max_position_embeddings", None)
    return limit if isinstance(limit, int) and limit > 0 else None


def _plain_dynamic_cache(cache: Any) -> bool:
    """Whether ``cache`` holds every layer's full keys/values as plain tensors, the only layout whose rows can be
    copied onto continuations without knowing the model (sliding windows drop positions, recurrent states differ)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    if not isinstance(cache, DynamicCache) or not cache.layers:
        return False
    return all(type(layer) is DynamicLayer and isinstance(layer.keys, torch.Tensor) for layer in cache.layers)


def _pad(rows: Sequence[Sequence[int]], length: int, value: int) -> tuple[list[list[int]], list[list[int]]]:
    """Right-pad ``rows`` to ``length``: ids and the matching attention mask. Right padding never changes a causal
    model's real positions (they cannot see what comes after them), so only the mask's length matters."""
    ids = [list(r) + [value] * (length - len(r)) for r in rows]
    mask = [[1] * len(r) + [0] * (length - len(r)) for r in rows]
    return ids, mask


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


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
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.kv_reuse = kv_reuse
        self.device = device if device is not None else next(model.parameters()).device
        config = getattr(model, "config", None)
        self.seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        self._cache_keyword = cache_keyword(model)
        self.adds_bos = _adds_bos(tokenizer)
        bos, eos = getattr(tokenizer, "bos_token_id", None), getattr(tokenizer, "eos_token_id", None)
        #: What an empty context is replaced by (lm-evaluation-harness's ``prefix_token_id``).
        self.prefix_id: int | None = int(bos) if bos is not None else (int(eos) if eos is not None else None)
        pad = getattr(tokenizer, "pad_token_id", None)
        #: Filler for padded positions; right padding keeps it out of every real position, so any id works.
        self.pad_id = int(pad) if pad is not None else (self.prefix_id or 0)
        self.max_length = _position_limit(model)
        params = inspect.signature(model.forward).parameters
        #: The vocabulary projection of positions nobody reads is skipped when the model allows it.
        self._keeps_logits = "logits_to_keep" in params
        self._token_texts: dict[int, str] = {}
        #: The last context run and its keys/values: the next context reuses their common token prefix.
        self._last_context: tuple[Ids, Any] | None = None

    # ----------------------------------------------------------------------------------------------------------------
    # Tokenisation
    # ----------------------------------------------------------------------------------------------------------------

    def split(self, context: str, continuation: str) -> tuple[str, str]:
        """The texts actually encoded for a (context, continuation) pair (see the module docstring)."""
        if self.seq2seq:
            return context.rstrip(), continuation.lstrip()
        stripped = context.rstrip()
        return stripped, context[len(stripped) :] + continuation

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` alone, with no special tokens: how continuations and candidates are encoded."""
        return [int(t) for t in self.tokenizer(text, add_special_tokens=False)["input_ids"]] if text else []

    def context_ids(self, text: str) -> list[int]:
        """Ids a context (or a text scored on its own) is read from: the BOS rule for causal models, the tokenizer's
        own special tokens for an encoder; never empty."""
        if self.seq2seq:
            ids = [int(t) for t in self.tokenizer(text)["input_ids"]]
        else:
            ids = self.encode(text)
            if self.adds_bos and self.prefix_id is not None:
                ids = [self.prefix_id, *ids]
        if not ids:
            if self.prefix_id is None:
                raise ValueError("empty context and the tokenizer has neither a BOS nor an EOS token to start from")
            ids = [self.prefix_id]
        return ids

    def _fit(self, context: list[int], continuation_length: int) -> Ids:
        """Left-truncate a context so the model's input fits its position limit, as lm-evaluation-harness does
        (the input is ``context + continuation[:-1]``: the last continuation token is predicted, never read)."""
        if self.max_length is None:
            return tuple(context)
        if self.seq2seq:
            return tuple(context[-self.max_length :])
        keep = self.max_length + 1 - continuation_length
        if keep < 1:
            raise ValueError(
                f"a continuation of {continuation_length} tokens does not fit the model's {self.max_length} positions"
            )
        return tuple(context[-keep:])

    def token_text(self, token: int) -> str:
        """One token decoded alone (memoised: the same few thousand tokens recur across a run)."""
        text = self._token_texts.get(token)
        if text is None:
            text = self._token_texts[token] = str(self.tokenizer.decode([token], **_DECODE_KWARGS))
        return text

    def _pair(self, context: str, continuation: str, cache: dict[str, list[int]]) -> tuple[list[int], Ids]:
        """Encoded (context, continuation), the context not yet fitted; ``cache`` holds the call's context
        encodings (contexts repeat across the queries of an item)."""
        context_text, continuation_text = self.split(context, continuation)
        context_ids = cache.get(context_text)
        if context_ids is None:
            context_ids = cache[context_text] = self.context_ids(context_text)
        return context_ids, tuple(self.encode(continuation_text))

    # ----------------------------------------------------------------------------------------------------------------
    # Entry points
    # ----------------------------------------------------------------------------------------------------------------

    def loglikelihood_many(self, queries: Sequence[LoglikelihoodRequest]) -> list[LoglikelihoodResponse]:
        """Token log-probabilities of every continuation; each distinct (encoded) context runs once."""
        cache: dict[str, list[int]] = {}
        pairs = []
        for query in queries:
            context_ids, continuation_ids = self._pair(query.context, query.continuation, cache)
            pairs.append((self._fit(context_ids, len(continuation_ids)), continuation_ids))
        scores = self._score_pairs(pairs)
        return [
            LoglikelihoodResponse(token_logprobs=scores[pair], tokens=[self.token_text(t) for t in pair[1]])
            for pair in pairs
        ]

    def next_token_many(self, queries: Sequence[NextTokenRequest]) -> list[NextTokenResponse]:
        """Log-probability of each candidate after the context: its next-token probability when it is one token,
        and the probability of all its tokens when the tokenizer splits it (SmolLM2 encodes ``" 1"`` as ``" "``
        then ``"1"``, so a first-token score would give every numeric label the same value). It is the loglikelihood
        of the candidate as a continuation and goes through the same grouping: candidates whose effective context is
        equal share one context pass."""
        cache: dict[str, list[int]] = {}
        encoded: list[list[tuple[Ids, Ids]]] = []
        for query in queries:
            row = []
            for candidate in query.candidates:
                context_ids, candidate_ids = self._pair(query.context, candidate, cache)
                if not candidate_ids:
                    raise ValueError(f"next_token candidate {candidate!r} after {query.context!r} has no tokens")
                row.append((self._fit(context_ids, len(candidate_ids)), candidate_ids))
            encoded.append(row)
        scores = self._score_pairs([(c, ids) for row in encoded for c, ids in row])
        return [
            NextTokenResponse(
                logprobs=[float(sum(scores[(c, ids)])) for c, ids in row],
                tokens=[self.token_text(ids[0]) for _, ids in row],
                n_tokens=[len(ids) for _, ids in row],
            )
            for row in encoded
        ]

    def similarity_many(self, queries: Sequence[SimilarityRequest]) -> list[SimilarityResponse]:
        """Cosines between prompt and option representations (see ``SimilarityRequest``); each distinct text (causal)
        or prompt/option pair (seq2seq) is run once per call."""
        if self.seq2seq:
            prompts, options = self._seq2seq_vectors(queries)
            pairs = [[(prompts[q.prompt], options[(q.prompt, o)]) for o in q.options] for q in queries]
        else:
            texts = list(dict.fromkeys(t for q in queries for t in (q.prompt, *q.options)))
            causal = self._causal_vectors(texts)
            pairs = [[(causal[q.prompt], causal[o]) for o in q.options] for q in queries]
        answers = []
        for row in pairs:
            cosines = [
                max(-1.0, min(1.0, float(torch.nn.functional.cosine_similarity(a, b, dim=0, eps=1e-12))))
                for a, b in row
            ]
            answers.append(SimilarityResponse(cosines=cosines))
        return answers

    # ----------------------------------------------------------------------------------------------------------------
    # Loglikelihood of encoded pairs
    # ----------------------------------------------------------------------------------------------------------------

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
                result = self._score_group_seq2seq(context, scoring)
            elif self.kv_reuse:
                result = self._score_group_kv(context, scoring)
            else:
                result = None
            if result is None:
                full.extend((context, c) for c in scoring)
            else:
                scores.update(((context, c), r) for c, r in zip(scoring, result, strict=True))
        if full:
            scores.update(zip(full, self._score_full(full), strict=True))
        return scores

    def _gather(self, logits: torch.Tensor, rows: Sequence[tuple[int, int, Ids]]) -> list[list[float]]:
        """Float32 log-softmax at the positions that predict each row's targets, read off in one gather.

        ``rows[r] = (batch row, first position, targets)``: position ``first + j`` predicts ``targets[j]``. Only those
        positions are normalised, so padding costs no vocabulary-sized softmax.
        """
        batch_index: list[int] = []
        position_index: list[int] = []
        target_index: list[int] = []
        for row, first, targets in rows:
            batch_index.extend([row] * len(targets))
            position_index.extend(range(first, first + len(targets)))
            target_index.extend(targets)
        device = logits.device
        selected = logits[torch.tensor(batch_index, device=device), torch.tensor(position_index, device=device)]
        logprobs = torch.log_softmax(selected.float(), dim=-1)
        values = logprobs.gather(-1, torch.tensor(target_index, device=device)[:, None])[:, 0].tolist()
        out, start = [], 0
        for _, _, targets in rows:
            out.append([float(v) for v in values[start : start + len(targets)]])
            start += len(targets)
        return out

    def _score_group_kv(self, context: Ids, continuations: Sequence[Ids]) -> list[list[float]] | None:
        """One context pass, then its continuations as right-padded rows reading the context's cached keys/values
        (the cache is expanded to the rows as views; the first update copies it once per pass). None when the
        model's cache is not plain keys/values: the caller then scores full sequences."""
        from transformers import DynamicCache

        shared, past = self._shared_prefix(context)
        ids = torch.tensor([context[shared:]], device=self.device)
        kwargs: dict[str, Any] = {"logits_to_keep": 1} if self._keeps_logits else {}
        out = self.model(
            input_ids=ids,
            attention_mask=torch.ones((1, len(context)), dtype=torch.long, device=self.device),
            position_ids=torch.arange(shared, len(context), device=self.device)[None],
            use_cache=True,
            **{self._cache_keyword: past},
            **kwargs,
        )
        cache = output_cache(out)
        if not _plain_dynamic_cache(cache):
            self._last_context = None
            return None
        self._last_context = (context, cache)
        # The context's last position predicts every continuation's first token.
        first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        results = [[float(first[c[0]])] for c in continuations]
        longer = sorted((i for i, c in enumerate(continuations) if len(c) > 1), key=lambda i: -len(continuations[i]))
        n_context = len(context)
        for chunk in _chunks(longer, self.batch_size):
            inputs = [continuations[i][:-1] for i in chunk]
            length = max(len(r) for r in inputs)
            padded, mask = _pad(inputs, length, self.pad_id)
            rows = len(chunk)
            expanded = DynamicCache(
                ddp_cache_data=[
                    (layer.keys.expand(rows, -1, -1, -1), layer.values.expand(rows, -1, -1, -1))
                    for layer in cache.layers
                ]
            )
            attention = torch.tensor([[1] * n_context + m for m in mask], device=self.device)
            positions = torch.arange(n_context, n_context + length, device=self.device).expand(rows, -1)
            logits = self.model(
                input_ids=torch.tensor(padded, device=self.device),
                attention_mask=attention,
                position_ids=positions,
                use_cache=True,
                **{self._cache_keyword: expanded},
            ).logits
            scored = self._gather(logits, [(r, 0, continuations[i][1:]) for r, i in enumerate(chunk)])
            for i, rest in zip(chunk, scored, strict=True):
                results[i].extend(rest)
            del expanded, logits
        return results

    def _shared_prefix(self, context: Ids) -> tuple[int, Any]:
        """How many leading tokens ``context`` shares with the last context run (at most all but its last token,
        which must run to give the next-token logits), and a cache holding their keys/values; ``(0, None)`` when
        the shared part is shorter than :data:`MIN_SHARED_PREFIX` tokens, where reuse would not pay."""
        if self._last_context is None:
            return 0, None
        from transformers import DynamicCache

        last, cache = self._last_context
        limit = min(len(last), len(context) - 1)
        shared = next((i for i in range(limit) if last[i] != context[i]), limit)
        if shared < MIN_SHARED_PREFIX:
            return 0, None
        # Views of the first ``shared`` positions: the model's cache update concatenates into new tensors, so the
        # last context's cache is never written to.
        layers = [(layer.keys[:, :, :shared], layer.values[:, :, :shared]) for layer in cache.layers]
        return shared, DynamicCache(ddp_cache_data=layers)

    def _score_full(self, pairs: Sequence[tuple[Ids, Ids]]) -> list[list[float]]:
        """Each pair as one right-padded row ``context + continuation[:-1]``, longest first so rows of similar length
        share a pass; only the positions from the earliest continuation start of a pass get logits."""
        order = sorted(range(len(pairs)), key=lambda i: -(len(pairs[i][0]) + len(pairs[i][1])))
        results: list[list[float]] = [[] for _ in pairs]
        for chunk in _chunks(order, self.batch_size):
            inputs = [(pairs[i][0] + pairs[i][1])[:-1] for i in chunk]
            length = max(len(r) for r in inputs)
            padded, mask = _pad(inputs, length, self.pad_id)
            starts = [len(pairs[i][0]) - 1 for i in chunk]
            keep = length - min(starts)
            kwargs: dict[str, Any] = {"logits_to_keep": keep} if self._keeps_logits else {}
            offset = length - keep if self._keeps_logits else 0
            logits = self.model(
                input_ids=torch.tensor(padded, device=self.device),
                attention_mask=torch.tensor(mask, device=self.device),
                use_cache=False,
                **kwargs,
            ).logits
            rows = [(r, starts[r] - offset, pairs[i][1]) for r, i in enumerate(chunk)]
            for i, scored in zip(chunk, self._gather(logits, rows), strict=True):
                results[i] = scored
            del logits
        return results

    # ----------------------------------------------------------------------------------------------------------------
    # Sequence-to-sequence
    # ----------------------------------------------------------------------------------------------------------------

    def _decoder_inputs(self, labels: torch.Tensor) -> torch.Tensor:
        """Decoder inputs for ``labels``: the labels shifted right behind the decoder start token, by the model's own
        rule where it has one (T5, BART and Marian do), so the start token is whatever the model trains with."""
        prepare = getattr(self.model, "prepare_decoder_input_ids_from_labels", None)
        if prepare is not None:
            return prepare(labels=labels)
        start = getattr(self.model.config, "decoder_start_token_id", None)
        if start is None:
            raise ValueError("the sequence-to-sequence model has no decoder_start_token_id")
        shifted = labels.new_full(labels.shape, int(start))
        shifted[:, 1:] = labels[:, :-1]
        return shifted

    def _encode_source(self, context: Ids) -> Any:
        ids = torch.tensor([context], device=self.device)
        return self.model.get_encoder()(input_ids=ids, attention_mask=torch.ones_like(ids))

    def _decode(self, encoded: Any, labels: Sequence[Ids], **kwargs: Any) -> Any:
        """Decoder pass for right-padded ``labels`` rows, all conditioned on one encoded source (expanded, not
        copied: cross-attention only reads it)."""
        from transformers.modeling_outputs import BaseModelOutput

        rows = len(labels)
        length = max(len(r) for r in labels)
        padded, mask = _pad(labels, length, self.pad_id)
        hidden = encoded.last_hidden_state
        return self.model(
            encoder_outputs=BaseModelOutput(last_hidden_state=hidden.expand(rows, -1, -1)),
            attention_mask=torch.ones((rows, hidden.shape[1]), dtype=torch.long, device=self.device),
            decoder_input_ids=self._decoder_inputs(torch.tensor(padded, device=self.device)),
            decoder_attention_mask=torch.tensor(mask, device=self.device),
            use_cache=False,
            **kwargs,
        )

    def _score_group_seq2seq(self, context: Ids, continuations: Sequence[Ids]) -> list[list[float]]:
        """The source through the encoder once; each continuation is a decoder target (position ``j`` predicts
        token ``j``, the start token being the decoder's first input)."""
        encoded = self._encode_source(context)
        results: list[list[float]] = [[] for _ in continuations]
        order = sorted(range(len(continuations)), key=lambda i: -len(continuations[i]))
        for chunk in _chunks(order, self.batch_size):
            logits = self._decode(encoded, [continuations[i] for i in chunk]).logits
            scored = self._gather(logits, [(r, 0, continuations[i]) for r, i in enumerate(chunk)])
            for i, values in zip(chunk, scored, strict=True):
                results[i] = values
        return results

    # ----------------------------------------------------------------------------------------------------------------
    # Similarity vectors
    # ----------------------------------------------------------------------------------------------------------------

    @torch.inference_mode()
    def _causal_vectors(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Last-layer hidden state at each text's last token, every text read alone (right-padded rows, so the
        real positions never see padding), as float64 for the cosine."""
        encoded = {t: self._fit(self.context_ids(t), 1) for t in texts}
        order = sorted(texts, key=lambda t: -len(encoded[t]))
        kwargs: dict[str, Any] = {"logits_to_keep": 1} if self._keeps_logits else {}
        vectors: dict[str, torch.Tensor] = {}
        for chunk in _chunks(order, self.batch_size):
            rows = [encoded[t] for t in chunk]
            padded, mask = _pad(rows, max(len(r) for r in rows), self.pad_id)
            hidden = self.model(
                input_ids=torch.tensor(padded, device=self.device),
                attention_mask=torch.tensor(mask, device=self.device),
                output_hidden_states=True,
                use_cache=False,
                **kwargs,
            ).hidden_states[-1]
            for r, text in enumerate(chunk):
                vectors[text] = hidden[r, len(rows[r]) - 1].double()
        return vectors

    @torch.inference_mode()
    def _seq2seq_vectors(
        self, queries: Sequence[SimilarityRequest]
    ) -> tuple[dict[str, torch.Tensor], dict[tuple[str, str], torch.Tensor]]:
        """The encoder's last-token state per prompt, and per (prompt, option) the decoder's last state after reading
        the option behind the start token: the option's meaning in the context of the prompt, since an
        encoder-decoder model has no other place where the two meet. Each prompt is encoded once; prompt and options
        are stripped as a loglikelihood pair's context and continuation are."""
        options: dict[str, list[str]] = {}
        for query in queries:
            known = options.setdefault(query.prompt, [])
            known.extend(o for o in query.options if o not in known)
        prompts: dict[str, torch.Tensor] = {}
        vectors: dict[tuple[str, str], torch.Tensor] = {}
        for prompt, texts in options.items():
            encoded = self._encode_source(self._fit(self.context_ids(prompt.rstrip()), 0))
            prompts[prompt] = encoded.last_hidden_state[0, -1].double()
            ids = {o: tuple(self.encode(o.lstrip())) for o in texts}
            order = sorted(texts, key=lambda o: -len(ids[o]))
            for chunk in _chunks(order, self.batch_size):
                # A filler label after the option makes the shifted decoder input [start, *option].
                labels = [(*ids[o], self.pad_id) for o in chunk]
                hidden = self._decode(encoded, labels, output_hidden_states=True).decoder_hidden_states[-1]
                for r, option in enumerate(chunk):
                    vectors[(prompt, option)] = hidden[r, len(ids[option])].double()
        return prompts, vectors

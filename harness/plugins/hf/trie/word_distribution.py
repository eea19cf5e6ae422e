"""The exact next-word distribution of a causal LM, by best-first expansion of its token trie.

Why best-first: the distribution over next *words* is a sum over token sequences, and no closed form exists; but
most of its mass sits on few prefixes. The search keeps a heap of unresolved pieces of probability mass, always
resolves the largest next, and stops once the unresolved total is at most ``epsilon``; everything it reports is a
lower bound and the bound's slack is the reported residual (see ``harness.kinds.word_distribution``).

A word is defined exactly as the sampler defines it (``harness.words.rules.decide_word`` with ``mode=exact``: the first
whitespace-separated chunk that normalises to a word, complete once whitespace follows or the sequence ends), so the
exact distribution is the distribution the sampler draws from; the tests check the sampler's frequencies against it.

Two facts keep the search small:

* Once a prefix holds a word, *every* next token that starts with whitespace completes that same word, so their mass
  is added in one vectorised sum over a precomputed mask; only tokens that continue the word (or punctuation) become
  children. This is also Pimentel & Meister's (2024) point about beginning-of-word tokenizers: a word's
  probability includes the probability that the next token starts a new word.
* Children are materialised lazily, most probable first, in chunks: a node's long tail of improbable tokens stays
  one heap entry holding their total mass until it is the largest unresolved piece. A tail too small to matter
  (below ``epsilon / (10 * max_expansions)``) beyond a node's first ``TOP_CHILDREN`` tokens is not kept; its mass
  stays in the residual, so the bound stays honest.

Each expansion recomputes the node's few tokens on top of the context's cached keys and values (rows of one depth
share a forward pass), which costs a few positions per node instead of keeping a cache per node.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from harness.api import TOP_TOKENS, Outcome, Surface, WordDistributionRequest, WordDistributionResponse, decide_word
from harness.plugins.hf.shared.draws import require_mass
from harness.plugins.hf.shared.model_calls import cache_keyword, last_logits_kwargs, output_cache
from harness.plugins.hf.shared.next_token_head import next_token_probabilities
from harness.plugins.hf.shared.placement import engine_placement
from harness.plugins.hf.shared.tokens import ContinuationDecoder, encode_context, eos_token_ids
from harness.plugins.hf.trie.cache import gather_rows, mergeable

#: Children of a node ranked without a full sort; a full sort happens only when the rest holds mass that matters.
TOP_CHILDREN = 256
#: Children turned into heap entries each time a node's tail is the largest unresolved piece.
CHUNK = 2


@dataclass
class _Node:
    tokens: tuple[int, ...]
    text: str
    mass: float


@dataclass
class _Tail:
    """A node's children not yet materialised: token ids ranked by probability, from ``start`` on."""

    node: _Node
    order: np.ndarray
    probs: np.ndarray
    start: int


class ExactWordSearch:
    """Answers ``word_distribution`` requests for one model; keeps the tokenizer's token texts between requests."""

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int = 64, device: torch.device | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size, self.device = engine_placement(model, batch_size, device)
        self.eos = eos_token_ids(model, tokenizer)
        self._texts: list[str] | None = None
        self._space: np.ndarray | None = None
        self._logits_kwargs = last_logits_kwargs(model)
        self._cache_keyword = cache_keyword(model)

    # ------------------------------------------------------------------------------------------- token texts
    def _token_texts(self, vocab: int) -> tuple[list[str], np.ndarray]:
        """Each token's text as it reads inside running text, and which tokens start with whitespace."""
        if self._texts is None or len(self._texts) != vocab:
            anchor = [int(t) for t in self.tokenizer("a", add_special_tokens=False)["input_ids"]]
            head = str(self.tokenizer.decode(anchor, skip_special_tokens=True, clean_up_tokenization_spaces=False))
            known = len(self.tokenizer)
            decoded = self.tokenizer.batch_decode(
                [[*anchor, t] for t in range(min(vocab, known))],
                skip_special_tokens=True,
                clean_up_tokenization_spaces=False,
            )
            texts = [d[len(head) :] if d.startswith(head) else d for d in decoded] + [""] * max(0, vocab - known)
            self._texts = texts
            self._space = np.array([bool(t) and t[0].isspace() for t in texts])
        assert self._space is not None
        return self._texts, self._space

    # ---------------------------------------------------------------------------------------- forward passes
    def _root(self, context_ids: list[int]) -> tuple[Any, np.ndarray]:
        from transformers import DynamicCache

        ids = torch.tensor([context_ids], dtype=torch.long, device=self.device)
        cache = DynamicCache(config=self.model.config)
        out = self.model(input_ids=ids, use_cache=True, **{self._cache_keyword: cache}, **self._logits_kwargs)
        return output_cache(out), out.logits[:, -1, :]

    def _rows_logits(self, cache: Any, rows: Sequence[tuple[int, ...]]) -> list[torch.Tensor]:
        """The last position's logits after each row of tokens, the rows read after the cached context."""
        can_merge = mergeable(cache)
        results: list[torch.Tensor] = [torch.empty(0)] * len(rows)
        by_length: dict[int, list[int]] = {}
        for i, row in enumerate(rows):
            by_length.setdefault(len(row), []).append(i)
        for _, members in sorted(by_length.items()):
            for start in range(0, len(members), self.batch_size):
                chunk = members[start : start + self.batch_size]
                picks = torch.zeros(len(chunk), dtype=torch.long, device=self.device)
                batch_cache = gather_rows([(cache, picks)], can_merge)
                ids = torch.tensor([rows[i] for i in chunk], dtype=torch.long, device=self.device)
                out = self.model(
                    input_ids=ids, use_cache=True, **{self._cache_keyword: batch_cache}, **self._logits_kwargs
                )
                for k, i in enumerate(chunk):
                    results[i] = out.logits[k, -1]
        return results

    @staticmethod
    def _probs(logits: torch.Tensor, temperature: float) -> np.ndarray:
        """The sampler's float32 softmax (with its check of the logits), renormalised in float64 so that masses add
        up exactly."""
        softmax = next_token_probabilities(logits, temperature)
        require_mass(softmax.sum(dim=-1))
        probs = softmax.cpu().numpy().astype(np.float64)
        out: np.ndarray = probs / probs.sum(axis=-1, keepdims=True)
        return out

    # --------------------------------------------------------------------------------------------- the search
    def distribution(
        self, request: WordDistributionRequest, sampled: dict[str, int] | None = None
    ) -> WordDistributionResponse:
        """Answer one request (``sampled``: words the caller drew with the sampler, reported as they are)."""
        tokenizer = self.tokenizer
        context = encode_context(tokenizer, self.model, request.context, request.max_new_tokens)
        decoder = ContinuationDecoder(tokenizer, context)
        with torch.inference_mode():
            cache, root_logits = self._root(context)
            root = self._probs(root_logits[0], request.temperature)
            texts, space = self._token_texts(root.shape[-1])
            eos = np.zeros(root.shape[-1], dtype=bool)
            eos[[t for t in self.eos if t < root.shape[-1]]] = True
            search = _Search(request, decoder, texts, space, eos)
            search.expand(_Node((), "", 1.0), root)
            evaluated = len(context)
            while search.open_nodes() and not search.done():
                batch = search.next_batch(self.batch_size)
                if not batch:
                    break
                logits = self._rows_logits(cache, [n.tokens for n in batch])
                for node, row in zip(batch, logits, strict=True):
                    search.expand(node, self._probs(row, request.temperature))
                evaluated += sum(len(n.tokens) for n in batch)
            greedy, greedy_positions = self._greedy(cache, root, request, decoder)
            evaluated += greedy_positions
            asked = set(request.words) | set(sampled or {}) | ({greedy} if greedy else set())
            surface, surface_positions = self._surface(cache, root, sorted(asked), request, texts, space, eos)
            evaluated += surface_positions
        top = np.argsort(-root, kind="stable")[:TOP_TOKENS]
        return WordDistributionResponse(
            probs=dict(search.words),
            residual=search.residual(),
            rejected=dict(search.rejected),
            surface=surface,
            top_tokens=[(texts[int(t)], float(root[t])) for t in top],
            greedy=greedy,
            sampled=dict(sampled or {}),
            expansions=search.expansions,
            tokens_evaluated=evaluated,
        )

    def _greedy(
        self, cache: Any, root: np.ndarray, request: WordDistributionRequest, decoder: ContinuationDecoder
    ) -> tuple[str | None, int]:
        """The word of greedy token-by-token decoding (None if it ends without one); and positions evaluated."""
        tokens: tuple[int, ...] = ()
        probs = root
        positions = 0
        while True:
            token = int(np.argmax(probs))
            tokens = (*tokens, token)
            ended = token in self.eos
            text = decoder(tokens[:-1]) if ended else decoder(tokens)
            kind, value = decide_word(
                text, ended=ended, depth=len(tokens), mode="exact", max_new_tokens=request.max_new_tokens
            )
            if kind == "word":
                return value, positions
            if kind == "reject":
                return None, positions
            (logits,) = self._rows_logits(cache, [tokens])
            positions += len(tokens)
            probs = self._probs(logits, request.temperature)

    def _surface(
        self,
        cache: Any,
        root: np.ndarray,
        words: list[str],
        request: WordDistributionRequest,
        texts: list[str],
        space: np.ndarray,
        eos: np.ndarray,
    ) -> tuple[dict[str, Surface], int]:
        """Each word's canonical spelling scored (see ``Surface``); and token positions evaluated."""
        if not words:
            return {}, 0
        lead = "" if request.context[-1:].isspace() or not request.context else " "
        spelled = [
            tuple(int(t) for t in self.tokenizer(lead + w, add_special_tokens=False)["input_ids"]) for w in words
        ]
        ends = space | eos
        # The next-token distribution after every prefix of every spelling (each prefix one row: a word is a few
        # tokens, and rows of one length share a forward pass).
        prefixes = sorted({ids[:k] for ids in spelled for k in range(1, len(ids) + 1)})
        after = dict(zip(prefixes, self._rows_logits(cache, prefixes), strict=True))
        surface: dict[str, Surface] = {}
        for word, ids in zip(words, spelled, strict=True):
            if not ids:
                continue
            logprob = math.log(root[ids[0]]) if root[ids[0]] > 0 else -math.inf
            for k in range(1, len(ids)):
                p = self._probs(after[ids[:k]], request.temperature)[ids[k]]
                logprob += math.log(p) if p > 0 else -math.inf
            end = float(self._probs(after[ids], request.temperature)[ends].sum())
            surface[word] = Surface(
                logprob=logprob,
                end_logprob=math.log(end) if end > 0 else -math.inf,
                first_token=texts[ids[0]],
                first_token_prob=float(root[ids[0]]),
            )
        return surface, sum(len(ids) for ids in prefixes)


class _Search:
    """The heap of unresolved mass and the word and rejection masses found so far, for one request."""

    def __init__(
        self,
        request: WordDistributionRequest,
        decoder: ContinuationDecoder,
        texts: list[str],
        space: np.ndarray,
        eos: np.ndarray,
    ) -> None:
        self.request = request
        self.texts = texts
        self.decoder = decoder
        self.space = space
        self.eos = eos
        self.eos_ids = np.flatnonzero(eos)
        self.words: dict[str, float] = {}
        self.rejected: dict[str, float] = {}
        self.heap: list[tuple[float, int, _Node | _Tail]] = []
        self.pending = 0.0
        self.dropped = 0.0
        self.expansions = 0
        self.counter = itertools.count()
        #: A node's unranked tail below this mass is left in the residual instead of being kept.
        self.negligible = request.epsilon / (10.0 * request.max_expansions)

    def residual(self) -> float:
        found = math.fsum(self.words.values()) + math.fsum(self.rejected.values())
        return max(0.0, 1.0 - found)

    def done(self) -> bool:
        return self.pending + self.dropped <= self.request.epsilon or self.expansions >= self.request.max_expansions

    def open_nodes(self) -> bool:
        return bool(self.heap)

    def _push(self, mass: float, item: _Node | _Tail) -> None:
        if mass <= 0:
            return
        heapq.heappush(self.heap, (-mass, next(self.counter), item))
        self.pending += mass

    def _add(self, table: dict[str, float], key: str, mass: float) -> None:
        if mass > 0:
            table[key] = table.get(key, 0.0) + mass

    def _decide(self, text: str, ended: bool, depth: int) -> Outcome:
        """The sampler's word rule (``mode=exact``) for a prefix of ``depth`` tokens reading ``text``."""
        return decide_word(text, ended=ended, depth=depth, mode="exact", max_new_tokens=self.request.max_new_tokens)

    def _settle(self, kind: str, value: str, mass: float) -> None:
        self._add(self.words if kind == "word" else self.rejected, value, mass)

    def expand(self, node: _Node, probs: np.ndarray) -> None:
        """Resolve what one forward pass after ``node`` settles at once; queue its other children as a tail."""
        self.expansions += 1
        depth = len(node.tokens) + 1
        handled = self.eos.copy()
        if self.eos_ids.size:
            kind, value = self._decide(node.text, True, depth)
            self._settle(kind, value, node.mass * float(probs[self.eos_ids].sum()))
        if node.text and not node.text.endswith("\ufffd"):
            kind, value = self._decide(node.text + " ", False, depth)
            if kind == "word":
                ends = self.space & ~self.eos
                self._settle(kind, value, node.mass * float(probs[ends].sum()))
                handled |= ends
        rest = np.where(handled, 0.0, probs)
        n_top = min(TOP_CHILDREN, rest.size)
        top = np.argpartition(-rest, n_top - 1)[:n_top]
        top = top[np.argsort(-rest[top], kind="stable")]
        left = float(rest.sum() - rest[top].sum())
        if node.mass * left > self.negligible:
            order = np.argsort(-rest, kind="stable")
        else:
            order = top
            self.dropped += node.mass * max(0.0, left)
        order = order[rest[order] > 0]
        self._push(node.mass * float(rest[order].sum()), _Tail(node, order, rest[order], 0))

    def next_batch(self, size: int) -> list[_Node]:
        """The next nodes to run through the model: the largest unresolved pieces, tails materialised on the way."""
        batch: list[_Node] = []
        while self.heap and len(batch) < size:
            if self.pending + self.dropped <= self.request.epsilon:
                break
            if self.expansions + len(batch) >= self.request.max_expansions:
                break
            negative, _, item = heapq.heappop(self.heap)
            self.pending -= -negative
            if isinstance(item, _Node):
                batch.append(item)
                # Still unresolved until it is expanded.
                self.pending += item.mass
                continue
            self._materialise(item)
        for node in batch:
            self.pending -= node.mass
        return batch

    def _materialise(self, tail: _Tail) -> None:
        node = tail.node
        end = min(tail.start + CHUNK, tail.order.size)
        depth = len(node.tokens) + 1
        for k in range(tail.start, end):
            token = int(tail.order[k])
            mass = node.mass * float(tail.probs[k])
            tokens = (*node.tokens, token)
            piece = self.texts[token]
            if "\ufffd" in piece or node.text.endswith("\ufffd") or not node.tokens:
                text = self.decoder(tokens)
            else:
                text = node.text + piece
            kind, value = self._decide(text, False, depth)
            if kind == "open":
                self._push(mass, _Node(tokens, text, mass))
            else:
                self._settle(kind, value, mass)
        if end < tail.order.size:
            rest = node.mass * float(tail.probs[end:].sum())
            self._push(rest, _Tail(node, tail.order, tail.probs, end))

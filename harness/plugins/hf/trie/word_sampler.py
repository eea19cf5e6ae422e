"""Efficient next-word sampling: ``n`` ancestral samples after one context, shared through a prefix trie.

Plain sampling (``generate(do_sample=True, num_return_sequences=n)``) runs the context once per sample and expands
every sample token by token, although most samples share their first tokens. This sampler draws the *same*
distribution with far fewer token positions (see ``docs/word-sampling.md``):

* the context is encoded once; its key/value cache is reused by every sample;
* sample counts are split over a prefix trie: at a node reached by ``c`` samples, the ``c`` next tokens are i.i.d.
  draws from the node's next-token distribution, so their counts are one ``Multinomial(c, p)`` draw, and each child
  prefix with count ``c_t`` is again ``c_t`` i.i.d. continuations of that prefix. Repeating this level by level is
  ancestral sampling of ``n`` independent sequences, grouped by shared prefix;
* a child whose text already fixes the word (or that ends with end-of-sequence, or reaches the token cap) is a leaf
  and is never run through the model; the other children of one trie level go through one batched forward step,
  each with its parent's key/value rows selected from the parent level's cache (beam-search style reordering).

The word of a sample is a function of its token sequence only, and a leaf is only declared once every extension of
its prefix yields the same word, so stopping early never changes a sample's word.

For the families of ``prefix_attention.SUPPORTED_MODEL_TYPES`` the context's keys/values are kept once and read
through the attention kernel shared with the generator (:mod:`harness.plugins.hf.shared.prefix_attention`); texts are
decoded and contexts fitted as the generator does (:mod:`harness.plugins.hf.shared.tokens`).

Results depend on the request and the model only (one request is processed at a time, traversal order and random
draws are fixed by ``request.seed``). The batch size changes how rows are grouped into forward passes, which can
change floating-point rounding; keep it fixed to reproduce results bit for bit.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from harness.api import WORD_MODES, SampleWordsRequest, SampleWordsResponse, decide_and_close
from harness.plugins.hf.generate import inplace_mlp
from harness.plugins.hf.loading.options import AUTO_STEP_ROWS
from harness.plugins.hf.shared import prefix_attention
from harness.plugins.hf.shared.device_copy import to_device
from harness.plugins.hf.shared.draws import PendingCounts, launch_flat
from harness.plugins.hf.shared.model_calls import cache_keyword, last_logits_kwargs, output_cache
from harness.plugins.hf.shared.next_token_head import NextTokenHead, next_token_probabilities
from harness.plugins.hf.shared.placement import engine_placement
from harness.plugins.hf.shared.prefix_attention import PrefixBatch, PrefixLayout, SharedPrefix
from harness.plugins.hf.shared.tokens import ContinuationDecoder, encode_context, eos_token_ids
from harness.plugins.hf.shared.word_boundaries import read_vocabulary, space_closes
from harness.plugins.hf.trie.cache import cache_bytes, carriers, gather_rows, mergeable, request_runs, rows_by_chunk
from harness.plugins.hf.trie.nodes import Drawn, PassChunk, Tallies, TrieNode, collect_drawn, level_slices, trace_record
from harness.plugins.hf.trie.prefix_rows import PaddedCarriers, RowPrefix, layout_for
from harness.plugins.hf.trie.static_pass import StaticPass, capture_for

#: Rows per forward pass when the caller gives none: the adapter's ``auto`` on a CPU. Every pass streams all weights
#: once, so a wide trie level wants few, large passes (:data:`~harness.plugins.hf.loading.options.AUTO_STEP_ROWS` has
#: the measurement); a block of 64 Provo contexts has about 11,000 nodes on its first level, a few hundred on its last.
DEFAULT_BATCH_SIZE = AUTO_STEP_ROWS["cpu"]

#: Cap on the key/value bytes gathered for one forward pass: with long contexts fewer rows go into each pass, so
#: memory stays bounded (the cap depends only on the model and the request, so results stay deterministic).
DEFAULT_MAX_CACHE_BYTES = 2 * 1024**3


class TrieWordSampler:
    """Samples next words for one model; holds the model-dependent setup so each request does only its own work."""

    #: When a list, every shared-prefix ``sample_many`` group appends the shape of its trie: the contexts' lengths,
    #: which context's pass serves which, and per level each node's parent row, request and sample count. That is
    #: what ``benchmarks/bench_trie_replay.py`` replays through models of other families and sizes (the time of a
    #: pass depends on its shapes, not on the tokens). None, the default, records nothing.
    trace: list[dict[str, Any]] | None = None

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        device: torch.device | None = None,
        max_cache_bytes: int = DEFAULT_MAX_CACHE_BYTES,
        use_shared_prefix: bool = True,
        fold_word_ends: bool = True,
        prefix_layout: str = "auto",
        pass_capture: str = "auto",
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size, self.device = engine_placement(model, batch_size, device)
        self.max_cache_bytes = max_cache_bytes
        self.eos = eos_token_ids(model, tokenizer)
        #: Whether the context's keys/values are kept once and the trie caches hold only sampled suffixes.
        self.shared_prefix = bool(
            use_shared_prefix and NextTokenHead.supports(model) and prefix_attention.enable(model)
        )
        #: How a pass's rows read their contexts: per run of nested contexts (``runs``, a CPU's, bit for bit as
        #: recorded) or all rows at once (``rows``, a GPU's: fewer kernel launches,
        #: :mod:`harness.plugins.hf.trie.prefix_rows`).
        self.prefix_layout = layout_for(prefix_layout, self.device) if self.shared_prefix else "none"
        self._padded: tuple[list[SharedPrefix], PaddedCarriers] | None = None
        #: The decoder and its LM head writing into reused buffers; the shared-prefix path runs through it.
        self._head = NextTokenHead(model) if self.shared_prefix else None
        #: Whether a level's passes run at fixed shapes, replayed as CUDA graphs on a GPU (:mod:`.static_pass`; they
        #: read the contexts through the rows layout).
        self.pass_capture = capture_for(pass_capture, self.device) if self._head is not None else "off"
        self._static: StaticPass | None = None
        if self._head is not None and self.pass_capture != "off":
            self.prefix_layout = "rows"
            self._static = StaticPass(self._head, model.config, batch_size, graphs=self.pass_capture == "graphs")
        inplace_mlp.enable(model)
        #: Whether children whose word is already decided are counted on the device (:mod:`.word_boundaries`); off,
        #: every child is decoded on the host (the same counts, kept for the tests that check that).
        self.fold_word_ends = fold_word_ends
        self._read: tuple[torch.Tensor, list[str | None]] | None = None
        self._cache_keyword = cache_keyword(model)
        self._logits_kwargs = last_logits_kwargs(model)

    def _new_cache(self) -> Any:
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)

    def _step(self, input_ids: torch.Tensor, cache: Any, temperature: float, **kwargs: Any) -> tuple[torch.Tensor, Any]:
        """Next-token probabilities at every row's last position, and the updated cache.

        On the shared-prefix path the probabilities are a buffer of :class:`NextTokenHead` that the next step
        overwrites, so a pass's draws are made before the next pass runs."""
        if self._head is not None:
            hidden, cache = self._head.hidden(input_ids, cache, **kwargs)
            return self._head.probabilities(hidden[:, -1], temperature), cache
        out = self.model(
            input_ids=input_ids, use_cache=True, **{self._cache_keyword: cache}, **self._logits_kwargs, **kwargs
        )
        return next_token_probabilities(out.logits[:, -1, :], temperature), output_cache(out)

    def _encode_contexts(
        self, contexts: list[list[int]], temperature: float
    ) -> tuple[torch.Tensor, list[SharedPrefix], int]:
        """Every context's next-token probabilities and keys/values, and the cache bytes per token.

        A context whose tokens begin another context of the group is read off that context's forward pass: under
        causal attention, position ``j`` of a longer pass sees exactly the tokens a pass over the first ``j + 1``
        tokens sees. Successive Provo contexts of one passage extend each other word by word, so a group of them costs
        one pass instead of one per context, each a fixed ~70 ms of weight streaming on 2 CPU cores plus its tokens.
        The values equal a context's own pass up to float rounding (matrix products of another shape)."""
        assert self._head is not None
        last_hidden: dict[int, torch.Tensor] = {}
        prefixes: dict[int, SharedPrefix] = {}
        token_bytes = 0
        for carrier, served in carriers(contexts):
            ids = contexts[carrier]
            hidden, cache = self._head.hidden(torch.tensor([ids], device=self.device), self._new_cache())
            token_bytes = max(token_bytes, cache_bytes(cache) // len(ids))
            whole = SharedPrefix.from_cache(cache)
            for i in served:
                last_hidden[i] = hidden[0, len(contexts[i]) - 1]
                prefixes[i] = whole.shortened(len(contexts[i]))
        order = range(len(contexts))
        rows = torch.stack([last_hidden[i] for i in order])
        return self._head.probabilities(rows, temperature), [prefixes[i] for i in order], token_bytes

    def _trace_group(self, contexts: list[list[int]], n: list[int], slots: int) -> dict[str, Any] | None:
        """A new trace record for this group when tracing is on (shared-prefix path only: the one replayed)."""
        if self.trace is None or not self.shared_prefix:
            return None
        self.trace.append(trace_record(contexts, n, slots))  # its levels are appended as they run
        return self.trace[-1]

    def _rows_per_pass(self, row_bytes: int) -> int:
        """``batch_size``, lowered so one pass's gathered cache (``row_bytes`` per row) fits ``max_cache_bytes``."""
        return max(1, min(self.batch_size, self.max_cache_bytes // max(1, row_bytes)))

    def _run_level(
        self,
        nodes: list[TrieNode],
        chunks: list[PassChunk],
        row_bytes: int,
        temperature: float,
        prefixes: list[SharedPrefix] | None = None,
    ) -> Iterator[tuple[PassChunk, torch.Tensor]]:
        """One trie level: forward every node's last token on its parent's cache rows, in passes of at most
        ``batch_size`` rows; yields each pass with its probabilities, to be drawn from before the next pass."""
        if self._static is not None and prefixes is not None:
            yield from self._run_static(nodes, chunks, row_bytes, temperature, prefixes)
            return
        can_merge = chunks[0].cache is None or mergeable(chunks[0].cache)
        for start, end in level_slices(nodes, chunks, can_merge, self._rows_per_pass(row_bytes)):
            parts = self._parent_rows(nodes[start:end], chunks)
            # From flat lists: torch.tensor of a list of one-element lists cost about 5 us per row.
            input_ids = to_device([n.tokens[-1] for n in nodes[start:end]], self.device, torch.long).view(-1, 1)
            kwargs: dict[str, Any] = {}
            if prefixes is None:
                cache = gather_rows(parts, can_merge)
            else:
                # The cache holds only the sampled suffix; the first level starts from an empty one.
                cache = gather_rows(parts, can_merge) if chunks[0].cache is not None else self._new_cache()
                batch = nodes[start:end]
                depth = len(batch[0].tokens)
                positions = [prefixes[n.req].length + depth - 1 for n in batch]
                kwargs["position_ids"] = to_device(positions, self.device, torch.long).view(-1, 1)
                kwargs["shared_prefix"] = self._layout(prefixes, batch)
            probs, cache = self._step(input_ids, cache, temperature, **kwargs)
            yield PassChunk(cache, start, end), probs

    def _run_static(
        self, nodes: list[TrieNode], chunks: list[PassChunk], row_bytes: int, temperature: float,
        prefixes: list[SharedPrefix],
    ) -> Iterator[tuple[PassChunk, torch.Tensor]]:  # fmt: skip
        """:meth:`_run_level` at fixed shapes (:class:`StaticPass`): a chunk's cache is its rows' suffix tensor."""
        assert self._static is not None
        depth = len(nodes[0].tokens)
        for start, end in level_slices(nodes, chunks, True, self._rows_per_pass(row_bytes)):
            batch = nodes[start:end]
            parents = [] if depth == 1 else self._parent_rows(batch, chunks)
            positions = [prefixes[n.req].length + depth - 1 for n in batch]
            probs = self._static.run([n.tokens[-1] for n in batch], positions, [n.req for n in batch], parents,
                                     depth, temperature)  # fmt: skip
            yield PassChunk(self._static.take(end - start, depth), start, end), probs

    def _parent_rows(self, batch: list[TrieNode], chunks: list[PassChunk]) -> list[tuple[Any, torch.Tensor]]:
        """Per parent chunk holding rows of ``batch``: its cache and those rows within it, on the device."""
        return [
            (chunks[k].cache, to_device(rows, self.device, torch.long))
            for k, rows in rows_by_chunk([n.parent_row for n in batch], [c.start for c in chunks])
        ]

    def begin_group(self, prefixes: list[SharedPrefix], slots: int) -> None:
        """Set up a group's fixed-shape passes (its contexts, ``slots`` suffix positions); nothing without them."""
        if self._static is not None:
            self._static.begin_group(PaddedCarriers(prefixes), slots)

    def _layout(self, prefixes: list[SharedPrefix], batch: list[TrieNode]) -> PrefixLayout:
        """The prefix layout of one pass; a group's padded carriers are built once, on its first pass."""
        if self.prefix_layout != "rows":
            return PrefixBatch(prefixes, request_runs([n.req for n in batch]))
        if self._padded is None or self._padded[0] is not prefixes:
            self._padded = (prefixes, PaddedCarriers(prefixes))  # dropped when the group ends
        return RowPrefix(self._padded[1], [n.req for n in batch])

    def _child(
        self,
        parent: TrieNode,
        row: int,
        token: int,
        count: int,
        decoder: ContinuationDecoder,
        request: SampleWordsRequest,
    ) -> TrieNode:
        """The trie node ``parent + token`` reached by ``count`` samples, with its word outcome decided (and, when it
        is open, the word its space-initial children get: :meth:`_word_on_space`)."""
        tokens = (*parent.tokens, token)
        ended = token in self.eos
        # End-of-sequence adds no text, so an ended child reads exactly like its parent.
        text = parent.text if ended else decoder.extend(parent.text, tokens)
        r = request
        outcome, closes = decide_and_close(
            text, ended=ended, depth=len(tokens), mode=r.mode, max_new_tokens=r.max_new_tokens, segmenter=r.segmenter
        )
        return TrieNode(tokens, count, row, text, outcome, parent.req, space_closes(text, closes))

    def _expand(
        self, parents: list[TrieNode], start: int, end: int, probs: torch.Tensor, tallies: Tallies
    ) -> list[TrieNode]:
        """Draw the children of ``parents[start:end]`` (``probs`` holds their rows, in order), count the children
        whose word is decided, and return the open ones (:meth:`_draw`, then :meth:`_children`)."""
        return self._children(parents, start, collect_drawn(*self._draw(parents, start, end, probs, tallies)), tallies)

    def _draw(
        self, parents: list[TrieNode], start: int, end: int, probs: torch.Tensor, tallies: Tallies
    ) -> tuple[PendingCounts, list[str | None]]:
        """Launch the draws of rows ``start:end`` (``probs`` holds their rows, in order), and each row's word of its
        space-initial children (or None), which the draws count in bulk (:func:`.trie_nodes.collect_drawn`
        reads both). The draws are queued before anything that could overwrite ``probs``. Each request's
        stream is consumed row by row, in row order, as if its rows were drawn alone."""
        rows = range(start, end)
        # One call per request's run of rows: a generator's stream split into the rows' counts is the same numbers
        # as one call per row.
        counts = np.fromiter((parents[k].count for k in rows), dtype=np.int64, count=end - start)
        runs = request_runs([parents[k].req for k in rows])
        flat = np.concatenate([tallies.rngs[req].random(int(counts[first:last].sum())) for req, first, last in runs])
        words = [self._word_on_space(parents[row]) for row in rows]
        if any(word is not None for word in words):
            row_mask = to_device([word is not None for word in words], probs.device, torch.bool)
            return launch_flat(probs, flat, counts, row_mask, self._space_mask(probs.shape[-1])), words
        return launch_flat(probs, flat, counts), words

    def _children(self, parents: list[TrieNode], start: int, drawn_rows: Drawn, tallies: Tallies) -> list[TrieNode]:
        """Count the drawn children (of ``parents[start:]``, per :meth:`_draw`) whose word is decided; the open ones."""
        open_children: list[TrieNode] = []
        for row, drawn, word, n_folded in zip(itertools.count(start), *drawn_rows, strict=False):
            parent = parents[row]
            i = parent.req
            if n_folded:
                assert word is not None
                tallies.counts[i][word] = tallies.counts[i].get(word, 0) + n_folded
            for token, count in drawn:
                child = self._child(parent, row, token, count, tallies.decoders[i], tallies.requests[i])
                kind, value = child.outcome
                if kind == "word":
                    tallies.counts[i][value] = tallies.counts[i].get(value, 0) + child.count
                elif kind == "reject":
                    tallies.rejected[i][value] = tallies.rejected[i].get(value, 0) + child.count
                else:
                    open_children.append(child)
        return open_children

    def _word_on_space(self, parent: TrieNode) -> str | None:
        """The word of every child of ``parent`` whose token starts with a space, if that is decided (then those
        children are counted in bulk), else None."""
        # Found when the parent was made (:meth:`_child`): word_on_space(parent.text, mode), without reading the text
        # again. The roots (no tokens) have none.
        return parent.closes if self.fold_word_ends else None

    def _space_mask(self, vocab_size: int) -> torch.Tensor:
        """The tokens that start with a space after any text (end-of-sequence ids never), computed once."""
        return self._vocabulary(vocab_size)[0]

    def _vocabulary(self, vocab_size: int) -> tuple[torch.Tensor, list[str | None]]:
        """The space mask and every token's piece (``shared.word_boundaries.read_vocabulary``)."""
        if self._read is None or self._read[0].shape[0] != vocab_size:
            mask, pieces = read_vocabulary(self.tokenizer, vocab_size, self.device)
            mask[[t for t in self.eos if t < vocab_size]] = False
            self._read = (mask, pieces)
        return self._read

    def sample(self, request: SampleWordsRequest) -> SampleWordsResponse:
        """Answer one request; see the module docstring for the algorithm and why it samples exactly."""
        return self.sample_many([request])[0]

    def sample_many(self, requests: Sequence[SampleWordsRequest]) -> list[SampleWordsResponse]:
        """Answer a group of requests in lockstep: the trie levels of all their contexts share forward passes.

        A forward pass costs a fixed time to stream the weights (about 70 ms for SmolLM2-135M-Instruct on 2 CPU cores)
        on top of a per-row cost, and a single context's deeper trie levels have few rows; running the levels of
        several contexts together divides the fixed cost by the group size. This needs shared-prefix attention (each
        row attends to its own context's keys and values, kept once); without it, requests are answered one by one.
        Each request has its own random generator, consumed in the order it would be alone, so grouping never
        changes which tokens are drawn from given probabilities; it can change the last bits of the probabilities
        (the batch shape of each matrix product, and which context's pass a nested context is read from), so
        bit-identical reruns need the same groups, which the runner guarantees by grouping instances in fixed blocks.
        """
        for request in requests:
            _validate(request)
        # One softmax per forward pass serves every row in it, so a group must share its temperature.
        if len({r.temperature for r in requests}) > 1:
            raise ValueError("requests answered together must share one temperature")
        if len(requests) > 1 and not self.shared_prefix:
            return [self.sample_many([r])[0] for r in requests]
        if self.shared_prefix:
            prefix_attention.ensure(self.model)
        contexts = [encode_context(self.tokenizer, self.model, r.context, r.max_new_tokens) for r in requests]
        head = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
        vocab_size = int(head.weight.shape[0]) if head is not None else int(self.model.config.vocab_size)
        pieces = self._vocabulary(vocab_size)[1]
        tallies = Tallies(
            requests=requests,
            rngs=[np.random.default_rng(r.seed) for r in requests],
            decoders=[ContinuationDecoder(self.tokenizer, ids, pieces) for ids in contexts],
            counts=[{} for _ in requests],
            rejected=[{} for _ in requests],
        )
        evaluated = [len(ids) if r.n > 0 else 0 for ids, r in zip(contexts, requests, strict=True)]
        live = [i for i, r in enumerate(requests) if r.n > 0]
        if live:
            with torch.inference_mode():
                self._sample_live(live, contexts, tallies, evaluated)
        return [
            SampleWordsResponse(
                counts=tallies.counts[i],
                n_requested=r.n,
                rejected=tallies.rejected[i],
                tokens_evaluated=evaluated[i],
            )
            for i, r in enumerate(requests)
        ]

    def _sample_live(self, live: list[int], contexts: list[list[int]], tallies: Tallies, evaluated: list[int]) -> None:
        """The trie of every request in ``live`` (those with ``n > 0``), level by level, into ``tallies``."""
        requests = tallies.requests
        temperature = requests[live[0]].temperature
        slots = max(requests[i].max_new_tokens for i in live)  # the deepest suffix any row can hold
        parents = [TrieNode((), requests[i].n, parent_row=row, text="", req=i) for row, i in enumerate(live)]
        prefixes: list[SharedPrefix] | None = None
        if self.shared_prefix:
            root_probs, live_prefixes, token_bytes = self._encode_contexts([contexts[i] for i in live], temperature)
            prefixes = [SharedPrefix(keys=[], values=[]) for _ in requests]
            for i, prefix in zip(live, live_prefixes, strict=True):
                prefixes[i] = prefix
            self.begin_group(prefixes, slots)
            chunks = [PassChunk(None, 0, len(live))]
        else:
            (only,) = live
            ids = torch.tensor([contexts[only]], dtype=torch.long, device=self.device)
            root_probs, root_cache = self._step(ids, self._new_cache(), temperature)
            chunks = [PassChunk(root_cache, 0, 1)]
            context_bytes = cache_bytes(root_cache)
        level = self._expand(parents, 0, len(parents), root_probs, tallies)
        record = self._trace_group([contexts[i] for i in live], [requests[i].n for i in live], slots)
        live_index = {req: k for k, req in enumerate(live)}
        while level:
            depth = len(level[0].tokens)
            if record is not None:
                record["levels"].append(
                    {"parents": [n.parent_row for n in level], "reqs": [live_index[n.req] for n in level],
                     "counts": [n.count for n in level], "depth": depth}
                )  # fmt: skip
            if prefixes is not None:
                row_bytes = token_bytes * depth
            else:
                n_context = len(contexts[live[0]])
                row_bytes = context_bytes * (n_context + depth) // n_context
            next_level: list[TrieNode] = []
            next_chunks: list[PassChunk] = []
            passes = self._run_level(level, chunks, row_bytes, temperature, prefixes)
            current = next(passes, None)
            while current is not None:
                chunk, probs = current
                drawn = self._draw(level, chunk.start, chunk.end, probs, tallies)
                # The level's next pass (its inputs are all known) is launched after this one's draws and before
                # they are read: on a GPU it runs while the host waits for the draws and decides their children.
                # The same operations, in the same order.
                current = next(passes, None)
                next_level.extend(self._children(level, chunk.start, collect_drawn(*drawn), tallies))
                next_chunks.append(chunk)
            for node in level:
                evaluated[node.req] += 1
            chunks, level = next_chunks, next_level
        self._padded = None


def _validate(request: SampleWordsRequest) -> None:
    if request.n < 0:
        raise ValueError(f"n must be non-negative, got {request.n}")
    if request.max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {request.max_new_tokens}")
    if request.mode not in WORD_MODES:
        raise ValueError(f"unknown word mode {request.mode!r}: expected one of {', '.join(WORD_MODES)}")


def sample_words(
    model: Any,
    tokenizer: Any,
    request: SampleWordsRequest,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    device: torch.device | None = None,
) -> SampleWordsResponse:
    """``n`` next words after ``request.context`` (see :class:`TrieWordSampler`); one-off convenience wrapper."""
    return TrieWordSampler(model, tokenizer, batch_size=batch_size, device=device).sample(request)

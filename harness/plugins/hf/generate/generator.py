"""Efficient ``n``-sample text generation: each prompt encoded once, its ``n`` samples decoded as rows of one batch.

Plain sampling (``generate(do_sample=True, num_return_sequences=n)``, one call per prompt) runs the prompt once per
sample, keeps every row in the batch until the *last* sample of the prompt stops (finished rows are padded, not
dropped), and pays the fixed cost of a forward pass (streaming all the weights) for only ``n`` rows. The
:class:`BatchGenerator` instead (see ``docs/generation.md``):

* encodes each prompt once (the prompts of a group packed end to end into a few forward passes, attention within
  each prompt) and keeps its keys/values once, as a shared prefix; each sample row's cache holds only its own
  generated suffix (:mod:`harness.plugins.hf.generate.suffix_cache`);
* decodes the rows of all requests of a group in the same forward passes, one new token per row per step, each row
  attending to its own prompt's keys/values (:mod:`harness.plugins.hf.shared.prefix_attention`, the prompts of a group
  padded into one :class:`~harness.plugins.hf.shared.prefix_attention.GroupPrefix` so one batched product per layer
  serves them all);
* removes a row from the batch (and its suffix from the cache) as soon as it stops: end-of-sequence, a stop string,
  or ``max_new_tokens`` (the rules of :mod:`harness.plugins.hf.generate.text`).

Each token is drawn from the distribution ``generate`` would use: the float32 logits go through transformers' own
``TemperatureLogitsWarper``, ``TopKLogitsWarper``, ``TopPLogitsWarper`` and ``TypicalLogitsWarper`` (in that order,
only those not at their neutral value, as ``generate`` builds them), then a float32 softmax. The token is then drawn
by inverse transform with one uniform from the row's own random stream (``numpy`` ``default_rng`` seeded from
``request.seed`` and the row's index), so the draws of a request do not depend on which other requests share its
passes, nor on ``n`` (row ``j`` of ``n = 10`` is row ``j`` of ``n = 20``).

Model families without shared-prefix attention and sequence-to-sequence models take a plain per-request path through
``model.generate`` (:func:`harness.plugins.hf.generate.plain.generate_plain`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from harness.api import DecodingConfig, GenerateRequest, GenerateResponse
from harness.plugins.hf.generate import inplace_mlp
from harness.plugins.hf.generate.plain import generate_plain
from harness.plugins.hf.generate.suffix_cache import SuffixLayer
from harness.plugins.hf.generate.text import finish_row, validate_request
from harness.plugins.hf.loading.options import AUTO_STEP_ROWS
from harness.plugins.hf.shared import prefix_attention
from harness.plugins.hf.shared.draws import draw_tokens
from harness.plugins.hf.shared.model_calls import cache_keyword, last_logits_kwargs
from harness.plugins.hf.shared.next_token_head import NextTokenHead
from harness.plugins.hf.shared.packed_prompts import PackedPrompts
from harness.plugins.hf.shared.placement import engine_placement
from harness.plugins.hf.shared.prefix_attention import GroupPrefix, PassPrefix, SharedPrefix
from harness.plugins.hf.shared.tokens import ContinuationDecoder, encode_context, eos_token_ids, fit_context

#: Rows per forward pass when the caller gives none: the adapter's ``auto`` on a CPU
#: (:data:`harness.plugins.hf.loading.options.AUTO_STEP_ROWS`). A decoding step streams all weights once, so wide passes
#: are cheap per row (on 2 CPU cores SmolLM2-135M-Instruct runs about 70 ms for 1 row and 3-4 ms per row at 512 rows),
#: and a group of 64 prompts with 10 samples each (640 rows) goes through one pass per step instead of two.
DEFAULT_BATCH_SIZE = AUTO_STEP_ROWS["cpu"]


def build_warpers(decoding: DecodingConfig) -> list[Any]:
    """transformers' logits warpers for ``decoding``, built as ``generate`` builds them for sampling (same classes,
    same order, same ``min_tokens_to_keep=1``; one at its neutral value is left out, as ``generate`` does)."""
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, TypicalLogitsWarper

    warpers: list[Any] = []
    if decoding.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(float(decoding.temperature)))
    if decoding.top_k != 0:
        warpers.append(TopKLogitsWarper(top_k=int(decoding.top_k), min_tokens_to_keep=1))
    if decoding.top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=float(decoding.top_p), min_tokens_to_keep=1))
    if decoding.typical_p < 1.0:
        warpers.append(TypicalLogitsWarper(mass=float(decoding.typical_p), min_tokens_to_keep=1))
    return warpers


@dataclass
class _Row:
    """One sample being decoded: its request, its index among the request's ``n`` samples, its tokens so far."""

    req: int
    index: int
    tokens: list[int] = field(default_factory=list)


@dataclass
class _Pass:
    """Live rows that go through one forward pass together, and their suffix cache (None before the first pass)."""

    rows: list[_Row]
    cache: Any = None


@dataclass
class _Result:
    texts: list[str]
    finish_reasons: list[str]
    n_tokens: list[int]


class BatchGenerator:
    """Answers ``generate`` requests for one model; holds the model-dependent setup so each group does only its work.

    ``batch_size`` caps the rows of one forward pass (a memory bound: the rows of a group go through several passes
    per step when there are more). ``name`` is used in error messages (the adapter passes ``hf:NAME``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        device: torch.device | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        name: str | None = None,
        use_shared_prefix: bool = True,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size, self.device = engine_placement(model, batch_size, device)
        config = getattr(model, "config", None)
        self.name = name or str(getattr(config, "name_or_path", "") or type(model).__name__)
        self.eos = eos_token_ids(model, tokenizer)
        #: Sequence-to-sequence models read ``request.source`` through their encoder and use ``generate``.
        self.seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        #: Whether prompts are kept once as a shared prefix and samples of several requests share passes; otherwise
        #: each request goes through ``model.generate``.
        self.shared_prefix = bool(use_shared_prefix and not self.seq2seq and prefix_attention.enable(model))
        inplace_mlp.enable(model)
        #: The decoder and its LM head writing into reused buffers: a step's logits and probabilities (126 MB each
        #: for 640 rows of SmolLM2's vocabulary in float32) are not allocated afresh, which on a CPU page-faults.
        self._head = NextTokenHead(model) if self.shared_prefix and NextTokenHead.supports(model) else None
        self._cache_keyword = cache_keyword(model)
        self._logits_kwargs = last_logits_kwargs(model)
        self._warpers: dict[DecodingConfig, list[Any]] = {}

    @property
    def mode(self) -> str:
        """How requests are answered: ``shared-prefix``, ``generate`` or ``generate-seq2seq`` (for ``info()``)."""
        if self.shared_prefix:
            return "shared-prefix"
        return "generate-seq2seq" if self.seq2seq else "generate"

    # ----------------------------------------------------------------------------------------------------------------
    # Inputs
    # ----------------------------------------------------------------------------------------------------------------

    def prompt_ids(self, request: GenerateRequest) -> list[int]:
        """The token ids the model continues: the chat-rendered ``messages`` when ``request.chat``, else ``prompt``.

        A plain prompt is tokenized with the tokenizer's default special tokens; a chat rendering already holds the
        template's own special tokens, so none are added (as ``apply_chat_template(tokenize=True)`` does). Both are
        left-truncated to ``max_position_embeddings - max_new_tokens`` (a leading BOS kept); an empty prompt becomes
        the BOS token.
        """
        if not request.chat:
            return encode_context(self.tokenizer, self.model, request.prompt, request.max_new_tokens)
        if getattr(self.tokenizer, "chat_template", None) is None:
            raise ValueError(
                f"model {self.name}: the request asks for a chat prompt (chat=true) but the tokenizer has no chat "
                "template; use a plain prompt (chat=false) for this model"
            )
        if not request.messages:
            raise ValueError("chat=true needs at least one message")
        messages = [{"role": role, "content": content} for role, content in request.messages]
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = [int(t) for t in self.tokenizer(str(text), add_special_tokens=False)["input_ids"]]
        return fit_context(ids, self.tokenizer, self.model, request.max_new_tokens, what="prompt")

    def source_ids(self, request: GenerateRequest) -> list[int]:
        """Encoder input of a sequence-to-sequence model: ``request.source`` (the prompt if the task gave none),
        with the tokenizer's special tokens (T5 appends ``</s>``), right-truncated to the encoder's length limit."""
        text = request.source or request.prompt
        ids = [int(t) for t in self.tokenizer(text)["input_ids"]]
        if not ids:
            raise ValueError("empty source for a sequence-to-sequence model")
        config = getattr(self.model, "config", None)
        limit = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
        if isinstance(limit, int) and limit > 0 and len(ids) > limit:
            ids = ids[:limit]
        return ids

    # ----------------------------------------------------------------------------------------------------------------
    # Entry points
    # ----------------------------------------------------------------------------------------------------------------

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        """Answer one request (see :meth:`generate_many`)."""
        return self.generate_many([request])[0]

    def generate_many(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Answer a group of requests. With shared-prefix attention their samples share forward passes; otherwise
        each request is one ``model.generate`` call. The texts of a request depend on the request, the model and,
        through float rounding of batched matrix products, on which requests share its passes (the runner groups
        instances in fixed blocks, so reruns are identical); the random draws never depend on the group."""
        for request in requests:
            validate_request(request)
        # Every input is rendered before any forward pass, so a bad request fails the group before work is spent.
        if not self.shared_prefix:
            render = self.source_ids if self.seq2seq else self.prompt_ids
            inputs = [render(r) if r.n > 0 else [] for r in requests]
            return [
                generate_plain(
                    self.model, self.tokenizer, r, ids, eos=self.eos, seq2seq=self.seq2seq, device=self.device
                )
                for r, ids in zip(requests, inputs, strict=True)
            ]
        prompts = [self.prompt_ids(r) if r.n > 0 else [] for r in requests]
        prefix_attention.ensure(self.model)
        return self._generate_shared(list(requests), prompts)

    # ----------------------------------------------------------------------------------------------------------------
    # Shared-prefix path
    # ----------------------------------------------------------------------------------------------------------------

    def _new_cache(self, max_length: int | None = None) -> Any:
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        if max_length is not None:
            cache.layers = [SuffixLayer(max_length) for _ in cache.layers]
        return cache

    def _forward(self, input_ids: torch.Tensor, cache: Any, **kwargs: Any) -> torch.Tensor:
        out = self.model(
            input_ids=input_ids, use_cache=True, **{self._cache_keyword: cache}, **self._logits_kwargs, **kwargs
        )
        # float32 logits, as ``generate`` takes them before its logits processors.
        return out.logits[:, -1, :].float()

    def _probabilities(self, logits: torch.Tensor, configs: list[DecodingConfig]) -> torch.Tensor:
        """Softmax of the warped logits; rows are grouped by decoding config so each warper runs once per group.

        With the reused head, a group whose only warper is the temperature (the default ``top_k=0``, ``top_p=1``) is
        divided and normalised in the head's buffers (``logits`` is overwritten): the same operations as
        ``torch.softmax(logits / temperature)``, bit for bit. The result is valid until the next forward pass."""
        groups: dict[DecodingConfig, list[int]] = {}
        for row, config in enumerate(configs):
            groups.setdefault(config, []).append(row)
        if len(groups) == 1:
            from transformers import TemperatureLogitsWarper

            config = configs[0]
            warpers = self._warpers_of(config)
            if self._head is not None and all(isinstance(w, TemperatureLogitsWarper) for w in warpers):
                return self._head.softmax(logits, float(config.temperature))
            return torch.softmax(self._warp(logits, config), dim=-1)
        probs = torch.empty_like(logits)
        for config, rows in groups.items():
            index = torch.tensor(rows, dtype=torch.long, device=logits.device)
            probs[index] = torch.softmax(self._warp(logits.index_select(0, index), config), dim=-1)
        return probs

    def _warpers_of(self, config: DecodingConfig) -> list[Any]:
        warpers = self._warpers.get(config)
        if warpers is None:
            warpers = self._warpers[config] = build_warpers(config)
        return warpers

    def _warp(self, scores: torch.Tensor, config: DecodingConfig) -> torch.Tensor:
        warpers = self._warpers_of(config)
        if not warpers:
            return scores
        # These warpers ignore the token history; ``generate`` passes it, they never read it.
        dummy = torch.zeros((scores.shape[0], 1), dtype=torch.long, device=scores.device)
        for warper in warpers:
            scores = warper(dummy, scores)
        return scores

    def _generate_shared(self, requests: list[GenerateRequest], prompts: list[list[int]]) -> list[GenerateResponse]:
        """The batched algorithm (module docstring). ``prompts[i]`` is empty exactly when ``requests[i].n == 0``."""
        results = [_Result([""] * r.n, [""] * r.n, [0] * r.n) for r in requests]
        evaluated = [len(p) for p in prompts]
        live = [i for i, r in enumerate(requests) if r.n > 0]
        if not live:
            return _responses(results, evaluated)
        decoders = [ContinuationDecoder(self.tokenizer, p) for p in prompts]
        # One random stream per sample row, seeded from (request seed, row index): consumption never depends on
        # the other rows or requests, so grouping and ``n`` never change which uniform a row's step gets.
        streams = [
            [np.random.default_rng(child) for child in np.random.SeedSequence(r.seed).spawn(r.n)] for r in requests
        ]
        max_length = max(requests[i].max_new_tokens for i in live)

        with torch.inference_mode():
            prefixes, first_logits = self._encode_prompts([prompts[i] for i in live])
            group = GroupPrefix(prefixes)
            del prefixes  # the group holds its own (padded) copy
            slot = {req: k for k, req in enumerate(live)}  # request index -> its prompt in ``group``

            rows = [_Row(i, j) for i in live for j in range(requests[i].n)]
            passes = [_Pass(rows[s : s + self.batch_size]) for s in range(0, len(rows), self.batch_size)]
            # Step 0 reads each prompt's own last-position logits, shared by all its rows.
            logits = torch.cat([first_logits[slot[row.req]] for row in rows])
            step = 0
            while True:
                live_rows = [row for p in passes for row in p.rows]
                probs = self._probabilities(logits, [requests[row.req].decoding for row in live_rows])
                uniforms = torch.tensor([streams[row.req][row.index].random() for row in live_rows])
                tokens = draw_tokens(probs, uniforms).tolist()
                del probs, logits
                for row, token in zip(live_rows, tokens, strict=True):
                    row.tokens.append(int(token))
                passes = self._rebalance(self._drop_finished(passes, requests, decoders, results), max_length)
                if not passes:
                    break
                group, slot = _live_prompts(group, slot, passes)
                chunks: list[torch.Tensor] = []
                for p in passes:
                    if p.cache is None:
                        p.cache = self._new_cache(max_length)
                    input_ids = torch.tensor([[row.tokens[-1]] for row in p.rows], device=self.device)
                    positions = torch.tensor([[group.lengths[slot[row.req]] + step] for row in p.rows])
                    pass_prefix = PassPrefix(group, [slot[row.req] for row in p.rows])
                    kwargs = {"position_ids": positions.to(self.device), "shared_prefix": pass_prefix}
                    if self._head is not None:
                        # Only the last hidden states: one LM head product over every pass's rows, below.
                        chunks.append(self._head.hidden(input_ids, p.cache, **kwargs)[0][:, -1])
                    else:
                        chunks.append(self._forward(input_ids, p.cache, **kwargs))
                    for row in p.rows:
                        evaluated[row.req] += 1
                joined = chunks[0] if len(chunks) == 1 else torch.cat(chunks)
                logits = joined if self._head is None else self._head.logits(joined)
                step += 1
        return _responses(results, evaluated)

    def _encode_prompts(self, prompts: list[list[int]]) -> tuple[list[SharedPrefix], list[torch.Tensor]]:
        """Each prompt's keys/values and its first-token float32 logits ``[1, vocab]``.

        Consecutive prompts are packed end to end into passes of at most ``batch_size`` positions
        (:class:`~harness.plugins.hf.shared.packed_prompts.PackedPrompts`: attention within each prompt): each pass
        streams all the weights once, and 64 ASSET prompts took 3 passes instead of 64 (8.5 s -> 4.7 s on 2 CPU cores).
        The logits are the LM head of each prompt's last position alone, the product ``model(...)`` computes for one
        prompt (one product over all the prompts' rows rounds differently). A prompt longer than ``batch_size`` goes
        alone."""
        prefixes: list[SharedPrefix] = []
        first_logits: list[torch.Tensor] = []
        start = 0
        while start < len(prompts):
            end, total = start + 1, len(prompts[start])
            while self._head is not None and end < len(prompts) and total + len(prompts[end]) <= self.batch_size:
                total += len(prompts[end])
                end += 1
            if end - start == 1:
                cache = self._new_cache()
                first_logits.append(self._forward(torch.tensor([prompts[start]], device=self.device), cache))
                prefixes.append(SharedPrefix.from_cache(cache))
            else:
                self._encode_packed(prompts[start:end], prefixes, first_logits)
            start = end
        return prefixes, first_logits

    def _encode_packed(
        self, prompts: list[list[int]], prefixes: list[SharedPrefix], first_logits: list[torch.Tensor]
    ) -> None:
        assert self._head is not None
        packed = PackedPrompts([len(p) for p in prompts])
        input_ids = torch.tensor([[token for p in prompts for token in p]], device=self.device)
        hidden, cache = self._head.hidden(
            input_ids, self._new_cache(), position_ids=packed.position_ids(self.device), packed_prompts=packed
        )
        lm_head = self.model.get_output_embeddings()
        for s, e in packed.bounds:
            first_logits.append(lm_head(hidden[:, e - 1 : e])[:, -1, :].float())
            prefixes.append(SharedPrefix.from_cache(cache, s, e))

    def _drop_finished(
        self,
        passes: list[_Pass],
        requests: list[GenerateRequest],
        decoders: list[ContinuationDecoder],
        results: list[_Result],
    ) -> list[_Pass]:
        """Record the rows that stopped with their last token and remove them from their pass and its suffix cache
        (compaction: finished rows never run again); passes left empty are dropped."""
        survivors: list[_Pass] = []
        for p in passes:
            keep: list[int] = []
            for k, row in enumerate(p.rows):
                request = requests[row.req]
                done = finish_row(row.tokens, decoders[row.req], self.eos, request.stop, request.max_new_tokens)
                if done is None:
                    keep.append(k)
                    continue
                result = results[row.req]
                result.texts[row.index], result.finish_reasons[row.index], result.n_tokens[row.index] = done
            if not keep:
                continue
            if len(keep) < len(p.rows):
                if p.cache is not None:
                    index = torch.tensor(keep, dtype=torch.long, device=self.device)
                    for layer in p.cache.layers:
                        layer.keep_rows(index)
                p.rows = [p.rows[k] for k in keep]
            survivors.append(p)
        return survivors

    def _rebalance(self, passes: list[_Pass], max_length: int) -> list[_Pass]:
        """Merge passes when their live rows fit in fewer: each pass costs a fixed weight-streaming time, so rows
        that stopped should free whole passes. Row order (and so each request's contiguous segment) is kept."""
        total = sum(len(p.rows) for p in passes)
        needed = math.ceil(total / self.batch_size) if total else 0
        if len(passes) <= max(needed, 1) or any(p.cache is None for p in passes):
            return passes
        rows = [row for p in passes for row in p.rows]
        layers = [
            SuffixLayer.concatenate([p.cache.layers[i] for p in passes]) for i in range(len(passes[0].cache.layers))
        ]
        merged: list[_Pass] = []
        for start in range(0, total, self.batch_size):
            end = min(start + self.batch_size, total)
            cache = self._new_cache(max_length)
            cache.layers = [layer.take(start, end) for layer in layers]
            merged.append(_Pass(rows[start:end], cache))
        return merged


def _live_prompts(group: GroupPrefix, slot: dict[int, int], passes: list[_Pass]) -> tuple[GroupPrefix, dict[int, int]]:
    """The group narrowed to the prompts that still have rows, once a quarter of its prompts have none (each
    narrowing copies the live prompts' keys and values), with ``slot`` renumbered to match."""
    live = sorted({row.req for p in passes for row in p.rows}, key=slot.__getitem__)
    if 4 * len(live) > 3 * len(group.lengths):
        return group, slot
    return group.subset([slot[req] for req in live]), {req: k for k, req in enumerate(live)}


def _responses(results: list[_Result], evaluated: list[int]) -> list[GenerateResponse]:
    return [
        GenerateResponse(texts=r.texts, finish_reasons=r.finish_reasons, n_tokens=r.n_tokens, tokens_evaluated=e)
        for r, e in zip(results, evaluated, strict=True)
    ]

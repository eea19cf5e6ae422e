"""Efficient ``n``-sample text generation: each prompt encoded once, its ``n`` samples decoded as rows of one batch.

Plain sampling (``generate(do_sample=True, num_return_sequences=n)``, one call per prompt) runs the prompt once per
sample, keeps every row in the batch until the *last* sample of the prompt stops (finished rows are padded, not
dropped), and pays the fixed cost of a forward pass (streaming all the weights) for only ``n`` rows. The
:class:`BatchGenerator` instead (see ``docs/generation.md``):

* encodes each prompt once (one forward pass, batch 1) and keeps its keys/values once, as a shared prefix (the
  idea of ``plugins/hf/shared_prefix.py``): each sample row's cache holds only its own generated suffix;
* decodes the rows of all requests of a group in the same forward passes, one new token per row per step, each row
  attending to its own prompt's keys/values (:func:`group_prefix_attention`, batched over the group's prompts);
* removes a row from the batch (and its suffix from the cache) as soon as it stops: end-of-sequence, a stop string,
  or ``max_new_tokens``.

Each token is drawn from the distribution ``generate`` would use: the float32 logits go through transformers' own
``TemperatureLogitsWarper``, ``TopKLogitsWarper``, ``TopPLogitsWarper`` and ``TypicalLogitsWarper`` (in that order,
only those not at their neutral value, as ``generate`` builds them), then a float32 softmax. The token is then drawn
by inverse transform with one uniform from the row's own random stream (``numpy`` ``default_rng`` seeded from
``request.seed`` and the row's index), so the draws of a request do not depend on which other requests share its
passes, nor on ``n`` (row ``j`` of ``n = 10`` is row ``j`` of ``n = 20``).

Model families without shared-prefix attention and sequence-to-sequence models take a plain per-request path through
``model.generate`` (see :meth:`BatchGenerator._generate_plain`).
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from transformers.cache_utils import DynamicLayer

from harness.requests import DecodingConfig, GenerateRequest, GenerateResponse
from plugins.hf import shared_prefix
from plugins.hf.shared_prefix import SharedPrefix
from plugins.hf.word_sampler import encode_context, eos_token_ids

#: Rows per forward pass when the caller gives none. A decoding step streams all weights once, so wide passes are
#: cheap per row (on 2 CPU cores SmolLM2-135M runs about 70 ms for 1 row and 3-4 ms per row at 512 rows).
DEFAULT_BATCH_SIZE = 512

#: Context tokens decoded in front of a continuation (as ``word_sampler.continuation_text`` does), so tokenizers
#: that drop a leading space when a continuation is decoded alone still give it.
_DECODE_CONTEXT_TOKENS = 16

#: First capacity (tokens) of a suffix cache buffer; it doubles when full, up to the group's ``max_new_tokens``.
_INITIAL_SUFFIX_CAPACITY = 32

_DECODE_KWARGS: dict[str, Any] = {"skip_special_tokens": True, "clean_up_tokenization_spaces": False}


def validate_request(request: GenerateRequest) -> None:
    """ValueError for requests no path can answer (checked before any forward pass, so a group fails as a whole)."""
    if request.n < 0:
        raise ValueError(f"n must be non-negative, got {request.n}")
    if request.max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {request.max_new_tokens}")
    if any(not s for s in request.stop):
        raise ValueError("stop strings must be non-empty (an empty one would stop every sample at once)")


def first_stop(text: str, stops: Sequence[str]) -> int | None:
    """Index in ``text`` of the earliest occurrence of any stop string, or None."""
    found = [i for i in (text.find(s) for s in stops) if i >= 0]
    return min(found) if found else None


class ContinuationDecoder:
    """Decodes a row's generated tokens as they read after its prompt (the whole list at once, never token by
    token: byte-level BPE splits multi-byte characters over tokens).

    Same rule as ``word_sampler.continuation_text``, with the decoded prompt tail computed once per request.
    """

    def __init__(self, tokenizer: Any, context_ids: Sequence[int]) -> None:
        self.tokenizer = tokenizer
        self.tail = [int(t) for t in context_ids[-_DECODE_CONTEXT_TOKENS:]]
        self.head = str(tokenizer.decode(self.tail, **_DECODE_KWARGS)) if self.tail else ""

    def __call__(self, tokens: Sequence[int]) -> str:
        if not tokens:
            return ""
        if not self.tail:
            return str(self.tokenizer.decode(list(tokens), **_DECODE_KWARGS))
        full = str(self.tokenizer.decode(self.tail + list(tokens), **_DECODE_KWARGS))
        if full.startswith(self.head):
            return full[len(self.head) :]
        return str(self.tokenizer.decode(list(tokens), **_DECODE_KWARGS))


def finish_row(
    tokens: Sequence[int], decoder: ContinuationDecoder, eos: frozenset[int], stops: Sequence[str], max_new_tokens: int
) -> tuple[str, str, int] | None:
    """``(text, finish_reason, n_tokens)`` if a row with these generated ``tokens`` has stopped, else None.

    Checked after every new token, so the first rule that fires is the row's end: end-of-sequence (its token counts
    but adds no text), then a stop string anywhere in the decoded text (the text is cut before the earliest
    occurrence; the tokens up to the one that completed it count), then the token cap.
    """
    if tokens and tokens[-1] in eos:
        return decoder(tokens[:-1]), "eos", len(tokens)
    text: str | None = None
    if stops:
        text = decoder(tokens)
        cut = first_stop(text, stops)
        if cut is not None:
            return text[:cut], "stop", len(tokens)
    if len(tokens) >= max_new_tokens:
        return (text if text is not None else decoder(tokens)), "length", len(tokens)
    return None


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


def draw_tokens(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """One token per row of ``probs`` by inverse transform: ``uniforms[r] * total`` searched in the row's float64
    cumulative sum. A token of probability 0 (masked by a warper) has an empty interval and is never drawn."""
    cdf = torch.cumsum(probs, dim=-1, dtype=torch.float64)
    total = cdf[:, -1:].contiguous()
    if not bool((torch.isfinite(total) & (total > 0)).all()):
        raise FloatingPointError("the model produced NaN or infinite logits (try dtype=float32)")
    tokens = torch.searchsorted(cdf, uniforms.to(cdf.device, torch.float64)[:, None] * total, right=True)
    # ``u * total`` can round up to ``total`` for ``u`` within 2**-53 of 1: keep it on the last token with mass.
    last = torch.searchsorted(cdf, total, right=False)
    return torch.minimum(tokens, last)[:, 0]


class _SuffixLayer(DynamicLayer):
    """A key/value cache layer for the generated suffix of every row of one pass, in a preallocated buffer.

    All rows of a group start together, so they always hold the same number of suffix tokens and one buffer
    ``[rows, kv_heads, capacity, head_dim]`` holds them with no padding. Appending writes one slot in place (a
    ``DynamicLayer`` copies its whole cache with ``torch.cat`` on every token); the capacity doubles when full, up
    to ``max_length``. ``keys``/``values`` are views of the filled part, which is what attention reads.
    """

    def __init__(self, max_length: int) -> None:
        super().__init__()
        self.max_length = max_length
        self.length = 0
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        capacity = min(self.max_length, _INITIAL_SUFFIX_CAPACITY)
        self._key_buffer = key_states.new_empty((*key_states.shape[:2], capacity, key_states.shape[3]))
        self._value_buffer = value_states.new_empty((*value_states.shape[:2], capacity, value_states.shape[3]))
        self.is_initialized = True

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        assert self._key_buffer is not None and self._value_buffer is not None
        new = key_states.shape[-2]
        end = self.length + new
        if end > self._key_buffer.shape[2]:
            self._grow(max(end, min(self.max_length, 2 * self._key_buffer.shape[2])))
        self._key_buffer[:, :, self.length : end] = key_states
        self._value_buffer[:, :, self.length : end] = value_states
        self.length = end
        self.keys = self._key_buffer[:, :, :end]
        self.values = self._value_buffer[:, :, :end]
        return self.keys, self.values

    def _grow(self, capacity: int) -> None:
        assert self._key_buffer is not None and self._value_buffer is not None
        buffers = []
        for old in (self._key_buffer, self._value_buffer):
            grown = old.new_empty((*old.shape[:2], capacity, old.shape[3]))
            grown[:, :, : self.length] = old[:, :, : self.length]
            buffers.append(grown)
        self._key_buffer, self._value_buffer = buffers

    def keep_rows(self, rows: torch.Tensor) -> None:
        """Drop the rows not in ``rows`` (compaction after some rows stopped); one copy of the live rows."""
        if self._key_buffer is None or self._value_buffer is None:
            return
        self._key_buffer = self._key_buffer.index_select(0, rows)
        self._value_buffer = self._value_buffer.index_select(0, rows)
        self.keys = self._key_buffer[:, :, : self.length]
        self.values = self._value_buffer[:, :, : self.length]

    @classmethod
    def concatenate(cls, layers: Sequence[_SuffixLayer]) -> _SuffixLayer:
        """One layer holding the rows of ``layers`` in order. Rows advance together, so all layers hold the same
        length and, having grown at the same steps, normally the same capacity: then whole buffers are concatenated
        (one copy); otherwise the filled parts are copied into a buffer of the largest capacity."""
        merged = cls(layers[0].max_length)
        filled = [layer for layer in layers if layer._key_buffer is not None and layer._value_buffer is not None]
        if not filled:
            return merged
        length = filled[0].length
        if any(layer.length != length for layer in filled):
            raise ValueError("suffix caches of different lengths cannot be merged")
        keys = [layer._key_buffer for layer in filled if layer._key_buffer is not None]
        values = [layer._value_buffer for layer in filled if layer._value_buffer is not None]
        capacity = max(k.shape[2] for k in keys)
        if any(k.shape[2] != capacity for k in keys):
            merged_keys = keys[0].new_empty(
                (sum(k.shape[0] for k in keys), keys[0].shape[1], capacity, keys[0].shape[3])
            )
            merged_values = torch.empty_like(merged_keys)
            merged_keys[:, :, :length] = torch.cat([k[:, :, :length] for k in keys])
            merged_values[:, :, :length] = torch.cat([v[:, :, :length] for v in values])
            merged._set(merged_keys, merged_values, length)
        else:
            merged._set(torch.cat(keys), torch.cat(values), length)
        return merged

    def take(self, start: int, end: int) -> _SuffixLayer:
        """A layer holding rows ``start:end`` of this one (views: the rows are disjoint, writes never overlap)."""
        part = type(self)(self.max_length)
        if self._key_buffer is not None and self._value_buffer is not None:
            part._set(self._key_buffer[start:end], self._value_buffer[start:end], self.length)
        return part

    def _set(self, key_buffer: torch.Tensor, value_buffer: torch.Tensor, length: int) -> None:
        self.dtype, self.device = key_buffer.dtype, key_buffer.device
        self._key_buffer, self._value_buffer, self.length = key_buffer, value_buffer, length
        self.keys = key_buffer[:, :, :length]
        self.values = value_buffer[:, :, :length]
        self.is_initialized = True


# --------------------------------------------------------------------------------------------------------------------
# Attention over the prompts of a group, batched across prompts
# --------------------------------------------------------------------------------------------------------------------

#: The attention implementation the generator switches the model to while it decodes (see :func:`_decoding_attention`).
ATTENTION_NAME = "harness_group_prefix"


class GroupPrefix:
    """The prompts of a group, their keys/values padded to one length per layer: ``[prompts, kv_heads, max_len, d]``,
    and an additive mask ``[prompts, 1, 1, max_len]`` (0 on a prompt's positions, -inf on its padding).

    ``shared_prefix.shared_prefix_attention`` loops over the prompts of a pass (one segment each) with four small
    matrix products per segment and layer; with 16 prompts of 10 rows that is about 2,000 tiny kernel calls per step,
    which took 40% of a decoding step on 2 CPU cores. Padding the prompts to one length lets one batched product per
    layer serve every prompt.
    """

    def __init__(self, prefixes: Sequence[SharedPrefix]) -> None:
        real = [p for p in prefixes if p.length > 0]
        self.max_length = max(p.length for p in real)
        n_layers = len(real[0].keys)
        template = real[0].keys[0]
        kv_heads, dim = template.shape[0], template.shape[-1]
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        for layer in range(n_layers):
            keys = template.new_zeros((len(prefixes), kv_heads, self.max_length, dim))
            values = template.new_zeros((len(prefixes), kv_heads, self.max_length, dim))
            for i, prefix in enumerate(prefixes):
                if prefix.length:
                    keys[i, :, : prefix.length] = prefix.keys[layer]
                    values[i, :, : prefix.length] = prefix.values[layer]
            self.keys.append(keys)
            self.values.append(values)
        self.mask = torch.full((len(prefixes), 1, 1, self.max_length), -math.inf, device=template.device)
        for i, prefix in enumerate(prefixes):
            self.mask[i, ..., : prefix.length] = 0.0
        self.lengths = [p.length for p in prefixes]


class PassPrefix:
    """Which prompt each row of one forward pass reads: row ``r`` is query slot ``slot[r]`` of prompt ``prompt[r]``."""

    def __init__(self, group: GroupPrefix, row_prompts: Sequence[int]) -> None:
        self.group = group
        slots: list[int] = []
        seen: dict[int, int] = {}
        for p in row_prompts:
            slots.append(seen.get(p, 0))
            seen[p] = slots[-1] + 1
        device = group.mask.device
        self.prompt = torch.tensor(list(row_prompts), dtype=torch.long, device=device)
        self.slot = torch.tensor(slots, dtype=torch.long, device=device)
        self.max_rows = max(seen.values())


def group_prefix_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    group_prefix: PassPrefix | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Attention of each row's query over its prompt's keys/values (kept once) and its own cached suffix ``key``.

    The two parts are computed separately and merged exactly as a softmax over their concatenation (the
    log-sum-exp merge of flash attention): with ``m`` the larger of the two maxima, ``out = (o_p e^(m_p - m) +
    o_s e^(m_s - m)) / (l_p e^(m_p - m) + l_s e^(m_s - m))``, where ``o``, ``l`` are each part's unnormalised output
    and sum. The prompt part is one batched product over ``[prompts, kv_heads, rows_per_prompt * group, max_len]``
    (rows scattered into per-prompt query blocks); the suffix part one product over the rows. Float rounding
    differs from ``sdpa`` in the last bits, as it does between any two attention kernels. Without ``group_prefix``
    this is ``shared_prefix.shared_prefix_attention`` (the trie sampler's attention, or ``sdpa`` for a prompt).
    Shapes: ``query [rows, q_heads, 1, d]``, ``key``/``value [rows, kv_heads, suffix_len, d]``; returns
    ``[rows, 1, q_heads, d]``.
    """
    if group_prefix is None:
        return shared_prefix.shared_prefix_attention(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    rows, q_heads, q_len, dim = query.shape
    if q_len != 1:
        raise ValueError("group-prefix attention takes one new position per row")
    kv_heads = key.shape[1]
    group = q_heads // kv_heads
    scale = scaling if scaling is not None else dim**-0.5
    layer = int(getattr(module, "layer_idx"))  # noqa: B009 - set by transformers on every attention layer
    prefix = group_prefix.group
    n_prompts, max_rows = len(prefix.lengths), group_prefix.max_rows
    # Query head h*group + r reads key/value head h (the grouping transformers' repeat_kv implements).
    q = query.reshape(rows, kv_heads, group, dim)

    blocks = q.new_zeros((n_prompts, max_rows, kv_heads, group, dim))
    blocks[group_prefix.prompt, group_prefix.slot] = q
    blocks = blocks.permute(0, 2, 1, 3, 4).reshape(n_prompts, kv_heads, max_rows * group, dim)
    scores = torch.matmul(blocks, prefix.keys[layer].transpose(-1, -2)).float() * scale + prefix.mask
    m_prefix = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - m_prefix)
    l_prefix = weights.sum(dim=-1, keepdim=True)
    o_prefix = torch.matmul(weights.to(value.dtype), prefix.values[layer]).float()

    def to_rows(t: torch.Tensor) -> torch.Tensor:
        """``[prompts, kv_heads, max_rows * group, x]`` back to ``[rows, kv_heads, group, x]``."""
        t = t.reshape(n_prompts, kv_heads, max_rows, group, t.shape[-1]).permute(0, 2, 1, 3, 4)
        return t[group_prefix.prompt, group_prefix.slot]

    scores_suffix = torch.einsum("bhgd,bhld->bhgl", q, key).float() * scale
    m_suffix = scores_suffix.amax(dim=-1, keepdim=True)
    weights_suffix = torch.exp(scores_suffix - m_suffix)
    l_suffix = weights_suffix.sum(dim=-1, keepdim=True)
    o_suffix = torch.einsum("bhgl,bhld->bhgd", weights_suffix.to(value.dtype), value).float()

    m_prefix, l_prefix, o_prefix = to_rows(m_prefix), to_rows(l_prefix), to_rows(o_prefix)
    m = torch.maximum(m_prefix, m_suffix)
    a, b = torch.exp(m_prefix - m), torch.exp(m_suffix - m)
    out = ((o_prefix * a + o_suffix * b) / (l_prefix * a + l_suffix * b)).to(query.dtype)
    return out.reshape(rows, q_heads, 1, dim).transpose(1, 2), None


@contextlib.contextmanager
def _decoding_attention(model: Any) -> Iterator[None]:
    """Switch ``model`` to :func:`group_prefix_attention` for the duration of one group, then back.

    The switch is scoped rather than permanent because the model is shared with the trie word sampler, whose setup
    (``shared_prefix.enable``) only recognises its own attention name; outside a group the model runs exactly as it
    did before.
    """
    from transformers import AttentionInterface

    previous = model.config._attn_implementation
    AttentionInterface.register(ATTENTION_NAME, group_prefix_attention)
    model.set_attn_implementation(ATTENTION_NAME)
    try:
        yield
    finally:
        model.set_attn_implementation(previous)


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
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.device = device if device is not None else next(model.parameters()).device
        config = getattr(model, "config", None)
        self.name = name or str(getattr(config, "name_or_path", "") or type(model).__name__)
        self.eos = eos_token_ids(model, tokenizer)
        #: Sequence-to-sequence models read ``request.source`` through their encoder and use ``generate``.
        self.seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        #: Whether prompts are kept once as a shared prefix and samples of several requests share passes; otherwise
        #: each request goes through ``model.generate``.
        self.shared_prefix = bool(use_shared_prefix and not self.seq2seq and shared_prefix.enable(model))
        params = inspect.signature(model.forward).parameters
        # Only the last position's logits are needed; skipping the rest saves a vocab-sized matmul per prompt token.
        self._logits_kwargs: dict[str, Any] = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
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
        return _fit_context(ids, self.tokenizer, self.model, request.max_new_tokens)

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
            return [self._generate_plain(r, ids) for r, ids in zip(requests, inputs, strict=True)]
        prompts = [self.prompt_ids(r) if r.n > 0 else [] for r in requests]
        return self._generate_shared(list(requests), prompts)

    # ----------------------------------------------------------------------------------------------------------------
    # Shared-prefix path
    # ----------------------------------------------------------------------------------------------------------------

    def _new_cache(self, max_length: int | None = None) -> Any:
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        if max_length is not None:
            cache.layers = [_SuffixLayer(max_length) for _ in cache.layers]
        return cache

    def _forward(self, input_ids: torch.Tensor, cache: Any, **kwargs: Any) -> torch.Tensor:
        out = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True, **self._logits_kwargs, **kwargs)
        # float32 logits, as ``generate`` takes them before its logits processors.
        return out.logits[:, -1, :].float()

    def _probabilities(self, logits: torch.Tensor, configs: list[DecodingConfig]) -> torch.Tensor:
        """Softmax of the warped logits; rows are grouped by decoding config so each warper runs once per group."""
        groups: dict[DecodingConfig, list[int]] = {}
        for row, config in enumerate(configs):
            groups.setdefault(config, []).append(row)
        if len(groups) == 1:
            return torch.softmax(self._warp(logits, configs[0]), dim=-1)
        probs = torch.empty_like(logits)
        for config, rows in groups.items():
            index = torch.tensor(rows, dtype=torch.long, device=logits.device)
            probs[index] = torch.softmax(self._warp(logits.index_select(0, index), config), dim=-1)
        return probs

    def _warp(self, scores: torch.Tensor, config: DecodingConfig) -> torch.Tensor:
        warpers = self._warpers.get(config)
        if warpers is None:
            warpers = self._warpers[config] = build_warpers(config)
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

        with torch.inference_mode(), _decoding_attention(self.model):
            # Each prompt alone (batch 1), so its keys/values and first-token logits never depend on the group.
            prefixes: list[SharedPrefix] = []
            first_logits: list[torch.Tensor] = []
            for i in live:
                cache = self._new_cache()
                first_logits.append(self._forward(torch.tensor([prompts[i]], device=self.device), cache))
                prefixes.append(SharedPrefix.from_cache(cache))
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
                chunks = []
                for p in passes:
                    if p.cache is None:
                        p.cache = self._new_cache(max_length)
                    input_ids = torch.tensor([[row.tokens[-1]] for row in p.rows], device=self.device)
                    positions = torch.tensor([[group.lengths[slot[row.req]] + step] for row in p.rows])
                    pass_prefix = PassPrefix(group, [slot[row.req] for row in p.rows])
                    chunks.append(
                        self._forward(
                            input_ids, p.cache, position_ids=positions.to(self.device), group_prefix=pass_prefix
                        )
                    )
                    for row in p.rows:
                        evaluated[row.req] += 1
                logits = chunks[0] if len(chunks) == 1 else torch.cat(chunks)
                step += 1
        return _responses(results, evaluated)

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
            _SuffixLayer.concatenate([p.cache.layers[i] for p in passes]) for i in range(len(passes[0].cache.layers))
        ]
        merged: list[_Pass] = []
        for start in range(0, total, self.batch_size):
            end = min(start + self.batch_size, total)
            cache = self._new_cache(max_length)
            cache.layers = [layer.take(start, end) for layer in layers]
            merged.append(_Pass(rows[start:end], cache))
        return merged

    # ----------------------------------------------------------------------------------------------------------------
    # Plain path: model.generate, one request at a time
    # ----------------------------------------------------------------------------------------------------------------

    def _generate_plain(self, request: GenerateRequest, ids: list[int]) -> GenerateResponse:
        """One ``model.generate`` call on ``ids`` (the prompt, or the encoder input of a seq2seq model): causal
        models without shared-prefix attention, and seq2seq models.

        Ancestral sampling is passed explicitly (``top_k=0``: ``generate`` defaults to ``top_k=50``), and
        ``num_beams=1`` overrides checkpoints whose generation config asks for beam search; other settings of the
        model's generation config (for example Marian's ban on generating the pad token) apply as in any
        ``generate`` call. ``generate`` takes no random generator, so the global torch RNG is seeded from
        ``request.seed`` inside ``torch.random.fork_rng`` (the caller's RNG state is restored afterwards): results
        are reproducible for the same request, device and batch shape. Stop strings stop a row through a stopping
        criterion with the same text rule as the shared-prefix path, and the texts are then cut by that same rule.
        ``tokens_evaluated`` counts what ``generate`` runs: the prompt once per sample (the encoder input once for
        seq2seq) plus every step of every row, finished rows included (``generate`` pads them, it does not drop them).
        """
        if request.n == 0:
            return GenerateResponse(texts=[], finish_reasons=[], n_tokens=[], tokens_evaluated=0)
        from transformers import StoppingCriteriaList

        decoder = ContinuationDecoder(self.tokenizer, [] if self.seq2seq else ids)
        input_ids = torch.tensor([ids], dtype=torch.long, device=self.device)
        d = request.decoding
        pad = getattr(self.tokenizer, "pad_token_id", None)
        if pad is None:
            pad = min(self.eos) if self.eos else 0
        kwargs: dict[str, Any] = {
            "attention_mask": torch.ones_like(input_ids),
            "do_sample": True,
            "num_beams": 1,
            "num_return_sequences": request.n,
            "temperature": float(d.temperature),
            "top_k": int(d.top_k),
            "top_p": float(d.top_p),
            "typical_p": float(d.typical_p),
            "max_new_tokens": request.max_new_tokens,
            "pad_token_id": pad,
        }
        if self.eos:
            kwargs["eos_token_id"] = sorted(self.eos)
        # Decoder inputs start with the decoder start token for seq2seq models, with the prompt for causal ones.
        start = 1 if self.seq2seq else len(ids)
        if request.stop:
            criterion = _StopCriterion(decoder, request.stop, start, self.eos)
            kwargs["stopping_criteria"] = StoppingCriteriaList([criterion])
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.inference_mode(), torch.random.fork_rng(devices=devices):
            torch.manual_seed(request.seed)
            out = self.model.generate(input_ids, **kwargs)
        generated = out[:, start:].tolist()
        texts, reasons, counts = [], [], []
        for row in generated:
            text, reason, n_tokens = scan_row(row, decoder, self.eos, request.stop, request.max_new_tokens)
            texts.append(text)
            reasons.append(reason)
            counts.append(n_tokens)
        steps = len(generated[0])
        # seq2seq: the encoder once, then the decoder start token and every generated token but the last, per row.
        evaluated = len(ids) + request.n * steps if self.seq2seq else request.n * (len(ids) + max(0, steps - 1))
        return GenerateResponse(texts=texts, finish_reasons=reasons, n_tokens=counts, tokens_evaluated=evaluated)


class _StopCriterion:
    """A ``generate`` stopping criterion: a row is done once its decoded continuation holds a stop string (the rule
    :func:`finish_row` applies), so ``generate`` stops rows where the shared-prefix path would."""

    def __init__(self, decoder: ContinuationDecoder, stops: Sequence[str], start: int, eos: frozenset[int]) -> None:
        self.decoder = decoder
        self.stops = tuple(stops)
        self.start = start
        self.eos = eos
        self.done: set[int] = set()

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        flags = []
        for r, row in enumerate(input_ids[:, self.start :].tolist()):
            if (
                r not in self.done
                and row
                and row[-1] not in self.eos
                and first_stop(self.decoder(row), self.stops) is not None
            ):
                self.done.add(r)
            flags.append(r in self.done)
        return torch.tensor(flags, dtype=torch.bool, device=input_ids.device)


def scan_row(
    row: Sequence[int], decoder: ContinuationDecoder, eos: frozenset[int], stops: Sequence[str], max_new_tokens: int
) -> tuple[str, str, int]:
    """Where a ``generate`` row ended, by the rules of :func:`finish_row` (tokens after the end are ``generate``'s
    padding). Prefixes are decoded one by one only when the row's text holds a stop string."""
    end = next((k + 1 for k, t in enumerate(row) if t in eos), len(row))
    if stops and first_stop(decoder(row[:end]), stops) is not None:
        for k in range(1, end + 1):
            done = finish_row(row[:k], decoder, eos, stops, max_new_tokens)
            if done is not None:
                return done
    if end and row[end - 1] in eos:
        return decoder(row[: end - 1]), "eos", end
    return decoder(row[:end]), "length", end


def _fit_context(ids: list[int], tokenizer: Any, model: Any, max_new_tokens: int) -> list[int]:
    """Left-truncate ``ids`` as ``word_sampler.encode_context`` does (leading BOS kept); empty becomes BOS."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if not ids:
        if bos is None:
            raise ValueError("empty prompt and the tokenizer has no BOS token to condition on")
        return [int(bos)]
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    limit = getattr(config, "max_position_embeddings", None)
    if isinstance(limit, int) and limit > 0:
        limit = max(1, limit - max_new_tokens)
        if len(ids) > limit:
            if bos is not None and ids[0] == bos and limit > 1:
                return [ids[0]] + ids[len(ids) - (limit - 1) :]
            return ids[len(ids) - limit :]
    return ids


def _responses(results: list[_Result], evaluated: list[int]) -> list[GenerateResponse]:
    return [
        GenerateResponse(texts=r.texts, finish_reasons=r.finish_reasons, n_tokens=r.n_tokens, tokens_evaluated=e)
        for r, e in zip(results, evaluated, strict=True)
    ]

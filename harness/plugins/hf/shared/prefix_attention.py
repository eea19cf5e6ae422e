"""Attention over a prefix kept once for many rows: the one attention kernel of the trie word sampler and the batched
generator.

Both engines continue a context (a Provo context, a prompt) with many rows at once, one new token per row per
forward pass. Transformers' key/value cache would hold a full copy of the context per row and copy it again whenever
rows are gathered or a token is appended (on a CPU, ``torch.cat`` and ``index_select`` of context caches were 2/3 of
the profile of a grouped trie run). Here the cache holds only each row's own generated suffix; each context's keys
and values (:class:`SharedPrefix`) are kept once, and :func:`prefix_attention` attends each row's single new query
position to ``[its context's keys; its own suffix keys]``. That is the same attention as ``sdpa`` over the full
sequence, computed in another order (float rounding differs from ``sdpa`` in the last bits, as it does between any
two attention kernels).

One function is registered (under :data:`ATTENTION_NAME`, with ``sdpa``'s mask builder) and switched on once per
model by :func:`enable`, only for model families whose attention layers call transformers' attention registry with
position-embedded, cache-updated keys (:data:`SUPPORTED_MODEL_TYPES`); other models keep their plain per-row
cache. A forward pass selects the prefix layout by passing ``shared_prefix=`` (a :class:`PrefixLayout`); without it
(a context's own forward pass, or the multiple-choice scorer's passes on the same model) the function is ``sdpa``.
Everything around the arithmetic is shared: the entry point and its ``sdpa`` fallback, the one-position check, the
grouped-query layout (query head ``h * group + r`` reads key/value head ``h``, the grouping transformers'
``repeat_kv`` implements), the scale, the layer index, the suffix scores and the output layout.

Why two layouts, each with its own arithmetic (this is deliberate, not leftover duplication). Outputs must stay bit
for bit what they were, and the two engines were tuned to different shapes, so each keeps the exact operations, in
the same order and dtypes, that produced its recorded results:

* :class:`PrefixBatch` (the trie word sampler): the rows of a pass come as a few segments, one per context, and the
  segments of nested contexts (read off one forward pass) form one run over that pass's keys. Per run, the prefix
  scores (one ``einsum`` against ``[kv_heads, positions, d]``, positions past a row's own context masked to -inf) and
  the suffix scores are concatenated and go through **one** float32 ``torch.softmax``; the normalised weights are
  cast to the value dtype and the two value products are added in the value dtype.
* :class:`PassPrefix` over a :class:`GroupPrefix` (the generator): the prompts of a group are padded to one length
  and masked, so **one** batched ``matmul`` per layer serves every prompt (a per-prompt loop cost 40% of a
  decoding step with 16 prompts of 10 rows on 2 CPU cores). The prefix and suffix parts are each normalised
  separately and merged in float32 by the log-sum-exp rule of flash attention, then cast to the query dtype.

The two are equal in exact arithmetic but not in floating point: the softmax normalises before the value products in
one and after them in the other, the two parts are added in the value dtype in one and in float32 in the other, and
a padded batched product and a per-segment product are blocked differently. Running either engine on the other's
arithmetic changes the last bits of its logits, which can change a drawn token and so a recorded output.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import torch

from harness.plugins.hf.shared.device_copy import to_device
from harness.plugins.hf.shared.plain_attention import plain_attention

if TYPE_CHECKING:
    from harness.plugins.hf.shared.packed_prompts import PackedPrompts

#: The attention implementation name models are switched to (``model.config._attn_implementation``).
ATTENTION_NAME = "harness_shared_prefix"
#: Model types whose attention layers call transformers' attention registry with position-embedded, cache-updated
#: keys (rotary, or GPT-2's and OPT's absolute positions added from the same ``position_ids``), each checked on a tiny
#: random model by ``tests/test_model_families.py``; the others, and why, in ``docs/word-sampling.md``.
SUPPORTED_MODEL_TYPES = frozenset(
    {"llama", "mistral", "qwen2", "qwen3", "gpt2", "gpt_neox", "opt", "phi3", "olmo2", "gemma3_text", "gemma2"}
)


class SharedPrefix:
    """A context's keys and values per layer (``[kv_heads, positions, head_dim]``), kept once for all its rows.

    Only the first ``length`` positions are the context's own. The tensors may run past them: a context whose tokens
    begin a longer context is read off that context's forward pass and shares its tensors (no copy), and the trie
    sampler's attention then reads every context of one pass with one product, masking each row past its length."""

    def __init__(self, keys: list[torch.Tensor], values: list[torch.Tensor], length: int | None = None) -> None:
        self.keys = keys
        self.values = values
        self.positions = int(keys[0].shape[-2]) if keys else 0
        self.length = self.positions if length is None else length
        if not 0 <= self.length <= self.positions:
            raise ValueError(f"a prefix of {self.length} positions over tensors of {self.positions}")

    @classmethod
    def from_cache(cls, cache: Any, start: int = 0, end: int | None = None) -> SharedPrefix:
        """The prefix held by the batch-1 ``cache`` of a context's forward pass, as views of the cache's tensors:
        positions ``start:end`` of it (one prompt of several packed into that pass, :class:`PackedPrompts`)."""
        keys = [layer.keys[0][:, start:end] for layer in cache.layers]
        if len({int(k.shape[-2]) for k in keys}) > 1:  # a sliding-window layer kept only its window
            raise ValueError("a context longer than the model's sliding window (not implemented on this path)")
        return cls(keys, [layer.values[0][:, start:end] for layer in cache.layers])

    def shortened(self, length: int) -> SharedPrefix:
        """The prefix of a shorter context that this one's tokens begin with: its first ``length`` positions, over
        the same tensors (the trie sampler's attention groups rows by that identity, see :class:`PrefixBatch`)."""
        return SharedPrefix(self.keys, self.values, length)

    def own_keys(self, layer: int) -> torch.Tensor:
        """The context's own keys of ``layer``: ``[kv_heads, length, head_dim]``."""
        return self.keys[layer][:, : self.length]

    def own_values(self, layer: int) -> torch.Tensor:
        """The context's own values of ``layer``: ``[kv_heads, length, head_dim]``."""
        return self.values[layer][:, : self.length]


class PrefixLayout(Protocol):
    """Which prefix each row of one forward pass reads, and how its attention is computed (module docstring)."""

    def attend(
        self,
        q: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        layer: int,
        scale: float,
        softcap: float | None = None,
    ) -> torch.Tensor:
        """Attention output ``[rows, kv_heads, group, d]`` for the grouped queries ``q [rows, kv_heads, group, d]``
        over the layout's prefixes and the rows' own suffix ``key``/``value [rows, kv_heads, suffix_len, d]``;
        scaled scores soft-capped to ``softcap * tanh(score / softcap)`` where the model does (Gemma 2)."""
        ...

    def longest(self) -> int:
        """The longest prefix any row reads (positions)."""
        ...


def capped(scores: torch.Tensor, softcap: float | None) -> torch.Tensor:
    """``scores`` soft-capped in place, ``softcap * tanh(scores / softcap)``, as Gemma 2 caps its scaled scores before
    the mask; unchanged without a cap."""
    if softcap is not None:
        scores.div_(softcap).tanh_().mul_(softcap)
    return scores


def context_mask(lengths: torch.Tensor, positions: int) -> torch.Tensor:
    """The additive mask ``[rows, 1, 1, positions]`` of rows whose contexts have ``lengths``: 0 before, -inf from
    (every trie layout masks a row's positions past its own context with it)."""
    past = torch.arange(positions, device=lengths.device) >= lengths[:, None]
    return torch.zeros(past.shape, device=lengths.device).masked_fill_(past, -math.inf)[:, None, None, :]


def suffix_scores(q: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """Unscaled scores of every row's query against its own suffix keys, in the model dtype: ``[rows, kv, group, l]``.

    Kept unscaled and in the model dtype because both layouts convert to float32 and scale afterwards, elementwise,
    exactly as they did when each computed this product itself."""
    return torch.einsum("bhgd,bhld->bhgl", q, key)


# --------------------------------------------------------------------------------------------------------------------
# The trie word sampler's layout: segments of rows, one softmax over [prefix; suffix] per segment
# --------------------------------------------------------------------------------------------------------------------


class PrefixBatch:
    """The prefixes of a group of contexts answered together, and which rows of the current pass read which.

    Rows of one context are contiguous in a trie level, so a pass is a few ``(context, start, end)`` segments. Nested
    contexts share one set of key/value tensors (:meth:`SharedPrefix.shortened`), and their segments are consecutive, so
    consecutive segments over the same tensors form one run: each run is **one** product against those tensors, with
    positions past a row's own context masked out of its softmax (weight exactly zero). A Provo block of 64 contexts
    is a handful of runs, where one product per context cost 64 small products per layer: on a GPU each is a kernel
    launch, on a CPU a call through torch's dispatcher.
    """

    def __init__(self, prefixes: list[SharedPrefix], segments: list[tuple[int, int, int]]) -> None:
        #: ``(prefix over the run's tensors, start, end, additive mask [rows, 1, 1, positions] or None)`` per run.
        self.runs: list[tuple[SharedPrefix, int, int, torch.Tensor | None]] = []
        grouped: list[list[tuple[int, int, int]]] = []
        for segment in segments:
            if grouped and prefixes[grouped[-1][0][0]].keys is prefixes[segment[0]].keys:
                grouped[-1].append(segment)
            else:
                grouped.append([segment])
        for run in grouped:
            owner = prefixes[run[0][0]]
            start, end = run[0][1], run[-1][2]
            lengths = [prefixes[context].length for context, s, e in run for _ in range(s, e)]
            mask = None
            if any(length < owner.positions for length in lengths):
                mask = context_mask(to_device(lengths, owner.keys[0].device, torch.long), owner.positions)
            self.runs.append((owner, start, end, mask))

    def longest(self) -> int:
        return max((owner.positions for owner, _, _, _ in self.runs), default=0)

    def attend(
        self,
        q: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        layer: int,
        scale: float,
        softcap: float | None = None,
    ) -> torch.Tensor:
        """Per run: the scores ``[prefix; suffix]`` of every row, one float32 softmax, the two value products added.

        The scores are laid out head-major, ``[kv_heads, rows * group, positions + suffix]``: that is the layout the
        prefix products (one batched product per key/value head) produce and read, so the prefix scores are written
        straight into the one buffer the softmax reads and the weights are read in place, where an ``einsum`` over
        row-major scores copied both ways and ``torch.cat`` copied them once more (about 15% of this function on
        1,024 rows). Every product, the softmax and the sum see the same values in the same order as before: the
        outputs are the same bit for bit (``tests/test_generator.py``)."""
        scores_suffix = suffix_scores(q, key)
        out = torch.empty_like(q)
        kv_heads, group, length = q.shape[1], q.shape[2], key.shape[2]
        for owner, start, end, mask in self.runs:
            rows, positions = end - start, owner.positions
            queries = q[start:end].permute(1, 0, 2, 3).reshape(kv_heads, rows * group, q.shape[-1])
            scores = q.new_empty((kv_heads, rows * group, positions + length))
            scores[..., :positions] = torch.bmm(queries, owner.keys[layer].transpose(1, 2))
            scores[..., positions:] = scores_suffix[start:end].permute(1, 0, 2, 3).reshape(kv_heads, rows * group, -1)
            scores = capped(scores.float().mul_(scale), softcap)
            if mask is not None:
                scores.view(kv_heads, rows, group, -1)[..., :positions] += mask[:, 0, 0, :][None, :, None, :]
            weights = torch.softmax(scores, dim=-1).to(value.dtype)
            part = torch.bmm(weights[..., :positions], owner.values[layer])
            own = weights[..., positions:].reshape(kv_heads, rows, group, length).permute(1, 0, 2, 3)
            out[start:end] = part.view(kv_heads, rows, group, -1).permute(1, 0, 2, 3) + torch.einsum(
                "bhgl,bhld->bhgd", own, value[start:end]
            )
        return out


# --------------------------------------------------------------------------------------------------------------------
# The generator's layout: prompts padded to one length, parts merged by log-sum-exp
# --------------------------------------------------------------------------------------------------------------------


class GroupPrefix:
    """The prompts of a group, their keys/values padded to one length per layer: ``[prompts, kv_heads, max_len, d]``,
    and an additive mask ``[prompts, 1, 1, max_len]`` (0 on a prompt's positions, -inf on its padding).

    A :class:`PrefixBatch` loops over the prompts of a pass (one segment each) with four small matrix products per
    segment and layer; with 16 prompts of 10 rows that is about 2,000 tiny kernel calls per step, which took 40% of a
    decoding step on 2 CPU cores. Padding the prompts to one length lets one batched product per layer serve every
    prompt.
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
                    keys[i, :, : prefix.length] = prefix.own_keys(layer)
                    values[i, :, : prefix.length] = prefix.own_values(layer)
            self.keys.append(keys)
            self.values.append(values)
        self.mask = torch.full((len(prefixes), 1, 1, self.max_length), -math.inf, device=template.device)
        for i, prefix in enumerate(prefixes):
            self.mask[i, ..., : prefix.length] = 0.0
        self.lengths = [p.length for p in prefixes]

    def subset(self, prompts: Sequence[int]) -> GroupPrefix:
        """The group of only ``prompts`` (indices into this group, in that order), at the same padded length.

        The batched product runs over every prompt of the group, finished or not; late in a group's decoding a few
        prompts still have rows, and the products over the others (one small matrix product per prompt and head) were
        a quarter of a step's time. The padded length is kept, so each prompt's products keep their shapes."""
        part = GroupPrefix.__new__(GroupPrefix)
        index = torch.tensor(list(prompts), dtype=torch.long, device=self.mask.device)
        part.max_length = self.max_length
        part.keys = [k.index_select(0, index) for k in self.keys]
        part.values = [v.index_select(0, index) for v in self.values]
        part.mask = self.mask.index_select(0, index)
        part.lengths = [self.lengths[i] for i in prompts]
        return part


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

    def longest(self) -> int:
        return self.group.max_length

    def attend(
        self,
        q: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        layer: int,
        scale: float,
        softcap: float | None = None,
    ) -> torch.Tensor:
        """The prompt part is one batched product over ``[prompts, kv_heads, rows_per_prompt * group, max_len]``
        (rows scattered into per-prompt query blocks); the suffix part one product over the rows. With ``o``, ``l``
        and ``m`` each part's unnormalised output, sum and maximum, and ``m`` the larger maximum:
        ``out = (o_p e^(m_p - m) + o_s e^(m_s - m)) / (l_p e^(m_p - m) + l_s e^(m_s - m))``, which is a softmax
        over the concatenation of the two parts."""
        _, kv_heads, group, dim = q.shape
        prefix = self.group
        n_prompts, max_rows = len(prefix.lengths), self.max_rows

        blocks = q.new_zeros((n_prompts, max_rows, kv_heads, group, dim))
        blocks[self.prompt, self.slot] = q
        blocks = blocks.permute(0, 2, 1, 3, 4).reshape(n_prompts, kv_heads, max_rows * group, dim)
        scores = (
            capped(torch.matmul(blocks, prefix.keys[layer].transpose(-1, -2)).float() * scale, softcap) + prefix.mask
        )
        m_prefix = scores.amax(dim=-1, keepdim=True)
        weights = torch.exp(scores - m_prefix)
        l_prefix = weights.sum(dim=-1, keepdim=True)
        o_prefix = torch.matmul(weights.to(value.dtype), prefix.values[layer]).float()

        def to_rows(t: torch.Tensor) -> torch.Tensor:
            """``[prompts, kv_heads, max_rows * group, x]`` back to ``[rows, kv_heads, group, x]``."""
            t = t.reshape(n_prompts, kv_heads, max_rows, group, t.shape[-1]).permute(0, 2, 1, 3, 4)
            return t[self.prompt, self.slot]

        scores_suffix = capped(suffix_scores(q, key).float() * scale, softcap)
        m_suffix = scores_suffix.amax(dim=-1, keepdim=True)
        weights_suffix = torch.exp(scores_suffix - m_suffix)
        l_suffix = weights_suffix.sum(dim=-1, keepdim=True)
        o_suffix = torch.einsum("bhgl,bhld->bhgd", weights_suffix.to(value.dtype), value).float()

        m_prefix, l_prefix, o_prefix = to_rows(m_prefix), to_rows(l_prefix), to_rows(o_prefix)
        m = torch.maximum(m_prefix, m_suffix)
        a, b = torch.exp(m_prefix - m), torch.exp(m_suffix - m)
        return ((o_prefix * a + o_suffix * b) / (l_prefix * a + l_suffix * b)).to(q.dtype)


# --------------------------------------------------------------------------------------------------------------------
# The kernel and its registration
# --------------------------------------------------------------------------------------------------------------------


def prefix_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    shared_prefix: PrefixLayout | None = None,
    packed_prompts: PackedPrompts | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Attention of each row's ``query`` over its prefix (read through the ``shared_prefix`` layout) and its own
    cached suffix ``key``/``value``; transformers' ``sdpa`` attention when no layout is given.

    Shapes: ``query [rows, q_heads, 1, d]``, ``key``/``value [rows, kv_heads, suffix_len, d]``; returns
    ``[rows, 1, q_heads, d]`` as transformers' attention functions do.
    """
    if packed_prompts is not None:
        return packed_prompts.attend(module, query, key, value, dropout, scaling, **kwargs), None
    if shared_prefix is None:
        return plain_attention(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
    rows, q_heads, q_len, dim = query.shape
    if q_len != 1:
        raise ValueError("shared-prefix attention takes one new position per row")
    kv_heads = key.shape[1]
    scale = scaling if scaling is not None else dim**-0.5
    window = kwargs.get("sliding_window")  # every row reads all its prefix: refused where the model would not
    if window is not None and shared_prefix.longest() + key.shape[2] > window:
        raise ValueError(f"a row longer than the sliding window ({window}): not implemented")
    layer = int(getattr(module, "layer_idx"))  # noqa: B009 - set by transformers on every attention layer
    # Query head h*group + r reads key/value head h (the grouping transformers' repeat_kv implements).
    q = query.reshape(rows, kv_heads, q_heads // kv_heads, dim)
    out = shared_prefix.attend(q, key, value, layer, scale, kwargs.get("softcap"))
    return out.reshape(rows, q_heads, 1, dim).transpose(1, 2), None


def enable(model: Any) -> bool:
    """Switch ``model`` to :func:`prefix_attention` if its family supports it; returns whether it did."""
    config = getattr(model, "config", None)
    if config is None or getattr(config, "model_type", None) not in SUPPORTED_MODEL_TYPES:
        return False
    if getattr(config, "_attn_implementation", None) not in (_plain_kernel(model), _name_for(model)):
        return False
    ensure(model)
    return True


def _soft_caps(model: Any) -> bool:
    return getattr(model.config, "attn_logit_softcapping", None) is not None


def _plain_kernel(model: Any) -> str:
    """The attention ``model`` runs without a layout, and whose mask builder it keeps: a soft-capping model (Gemma 2)
    runs eager attention, ``sdpa`` being unable to cap; the others ``sdpa``."""
    return "eager" if _soft_caps(model) else "sdpa"


def _name_for(model: Any) -> str:
    """The registered name of :func:`prefix_attention` for ``model``: one per mask builder (module docstring)."""
    return ATTENTION_NAME + "_eager" if _soft_caps(model) else ATTENTION_NAME


def ensure(model: Any) -> None:
    """Switch ``model`` back to :func:`prefix_attention` if something switched it away since :func:`enable`.

    The sampler and the generator pass their prefix layout as a keyword that only this function reads; under any
    other implementation (a benchmark that sets ``sdpa`` to time plain ``generate``, say) the keyword is silently
    ignored and every row would attend to its own suffix alone, never to its prompt. Called before every batch of
    requests, so that can never happen unnoticed.
    """
    name = _name_for(model)
    register_attention(name, prefix_attention, _plain_kernel(model))
    if getattr(model.config, "_attn_implementation", None) != name:
        model.set_attn_implementation(name)


def register_attention(name: str, function: Any, masks_of: str = "sdpa") -> None:
    """Register an attention function under ``name`` together with the mask builder of ``masks_of``.

    Transformers builds the attention mask by the implementation's name; a name it has no mask builder for gets
    the raw 2-D padding mask passed through, and ``sdpa`` then reads a forward pass over cached keys (a prompt
    continued after a cache, as the multiple-choice scorer runs) with the wrong causal alignment. The function here
    falls back to the model's plain attention when no prefix layout is given (:func:`plain_attention`: ``sdpa``, or
    the eager kernel of a soft-capping model), so it takes that attention's mask.
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    AttentionInterface.register(name, function)
    AttentionMaskInterface.register(name, ALL_MASK_ATTENTION_FUNCTIONS[masks_of])

"""The trie word sampler's prefix attention on a GPU: every row of a pass in one product, whatever contexts it reads.

:class:`harness.plugins.hf.shared.prefix_attention.PrefixBatch` computes the attention per *run* of rows that read the
same context tensors: about 17 small operations per run and layer. That is right on a CPU, where the operations are
calls into compiled code and their number matters little, and its results are recorded bit for bit. On a GPU every
operation is a kernel launch and the pass is launch-bound (docs/word-sampling.md, "Where a GPU run's time goes":
75 ms per pass at 30 layers, whatever its width). A block of 256 Provo contexts spans five or six passages, so a
pass holds five or six runs, and their attention launches outnumber the rest of the layer's.

:class:`RowPrefix` makes the attention of a pass one set of operations. The group's context tensors (one per
*carrier*, the longest context of a run of nested ones) are padded once per group to one length
(:class:`PaddedCarriers`); per layer each row's carrier keys and values are gathered (one ``index_select`` each)
and the scores ``[prefix; suffix]`` of all rows go through one float32 softmax, positions past a row's own context
masked to -inf, then the two value products are added in the value dtype: the arithmetic of :class:`PrefixBatch`,
in products of another shape, so equal up to float rounding (``tests/test_prefix_rows.py``). The gathered
keys/values are transient: 4,096 rows of a 150-position carrier at SmolLM2's shape are about 200 MB per layer in
bf16, which a GPU copies in a fraction of a millisecond.

The sampler uses this layout on a GPU and :class:`PrefixBatch` on a CPU (``TrieWordSampler(prefix_layout=...)``);
the layout in force is recorded in ``results.json`` (the adapter's ``prefix_layout``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from harness.plugins.hf.shared.device_copy import to_device
from harness.plugins.hf.shared.prefix_attention import GroupPrefix, SharedPrefix, capped, context_mask, suffix_scores

#: The layouts of the trie sampler's prefix attention, by name (``auto`` picks by device).
PREFIX_LAYOUTS = ("runs", "rows")


def layout_for(choice: str, device: torch.device) -> str:
    """The layout a sampler on ``device`` uses: ``rows`` on a GPU, ``runs`` on a CPU, unless named."""
    if choice == "auto":
        return "runs" if device.type == "cpu" else "rows"
    if choice not in PREFIX_LAYOUTS:
        raise ValueError(f"unknown prefix layout {choice!r}: expected auto, {' or '.join(PREFIX_LAYOUTS)}")
    return choice


class PaddedCarriers:
    """The context tensors of one ``sample_many`` group, one per carrier, padded to one length per layer (as
    :class:`~harness.plugins.hf.shared.prefix_attention.GroupPrefix` pads the generator's prompts):
    ``keys[layer]``/``values[layer]`` are ``[carriers, kv_heads, max_positions, head_dim]``; ``carrier[i]`` and
    ``length[i]`` say which carrier request ``i`` reads and how many of its positions are the request's own."""

    def __init__(self, prefixes: Sequence[SharedPrefix]) -> None:
        owners: list[SharedPrefix] = []
        index: dict[int, int] = {}
        self.carrier: list[int] = []
        self.length: list[int] = []
        for prefix in prefixes:
            if not prefix.keys:  # a request with n = 0 has no prefix and no rows
                self.carrier.append(0)
                self.length.append(0)
                continue
            key = id(prefix.keys)
            if key not in index:
                index[key] = len(owners)
                owners.append(prefix)
            self.carrier.append(index[key])
            self.length.append(prefix.length)
        # Each carrier's whole tensors (a nested context's view is shorter), padded by the generator's padding.
        padded = GroupPrefix([SharedPrefix(owner.keys, owner.values) for owner in owners])
        self.max_positions = padded.max_length
        self.device = padded.mask.device
        self.keys: list[torch.Tensor] = padded.keys
        self.values: list[torch.Tensor] = padded.values


class RowPrefix:
    """Which carrier each row of one pass reads, and up to which position: the :class:`PrefixLayout` of
    :mod:`harness.plugins.hf.shared.prefix_attention` for a GPU (module docstring)."""

    def __init__(self, carriers: PaddedCarriers, row_requests: Sequence[int]) -> None:
        device = carriers.device
        #: Per layer, the carriers' keys/values ``[carriers, kv_heads, positions, head_dim]``.
        self.keys, self.values = carriers.keys, carriers.values
        #: Which carrier each row reads: ``[rows]``.
        self.carrier = to_device([carriers.carrier[r] for r in row_requests], device, torch.long)
        lengths = to_device([carriers.length[r] for r in row_requests], device, torch.long)
        #: Additive mask ``[rows, 1, 1, positions]``: 0 on a row's own context, -inf past it (padding included).
        self.mask = context_mask(lengths, carriers.max_positions)
        #: Additive mask ``[suffix_len]`` on the suffix scores, or None: a pass at fixed shapes
        #: (:mod:`~harness.plugins.hf.trie.static_pass`) holds each row's suffix in fixed slots, the later ones empty.
        self.suffix_mask: torch.Tensor | None = None

    @classmethod
    def over(
        cls,
        keys: list[torch.Tensor],
        values: list[torch.Tensor],
        carrier: torch.Tensor,
        mask: torch.Tensor,
        suffix_mask: torch.Tensor | None,
    ) -> RowPrefix:
        """The layout over given tensors (a fixed-shape pass's buffers, filled before each pass)."""
        layout = cls.__new__(cls)
        layout.keys, layout.values, layout.carrier, layout.mask = keys, values, carrier, mask
        layout.suffix_mask = suffix_mask
        return layout

    def longest(self) -> int:
        return int(self.keys[0].shape[2])

    def attend(
        self,
        q: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        layer: int,
        scale: float,
        softcap: float | None = None,
    ) -> torch.Tensor:
        """``[prefix; suffix]`` scores of every row (soft-capped where the model caps), one float32 softmax, the two
        value products added."""
        keys = self.keys[layer].index_select(0, self.carrier)
        values = self.values[layer].index_select(0, self.carrier)
        positions = keys.shape[2]
        scores = torch.cat([torch.einsum("bhgd,bhld->bhgl", q, keys), suffix_scores(q, key)], dim=-1).float()
        capped(scores.mul_(scale), softcap)
        scores[..., :positions] += self.mask
        if self.suffix_mask is not None:
            scores[..., positions:] += self.suffix_mask
        weights = torch.softmax(scores, dim=-1).to(value.dtype)
        return torch.einsum("bhgl,bhld->bhgd", weights[..., :positions], values) + torch.einsum(
            "bhgl,bhld->bhgd", weights[..., positions:], value
        )

"""The generator's key/value cache for generated suffixes: one preallocated buffer per layer, written in place.

With :mod:`harness.plugins.hf.shared.prefix_attention` the prompt's keys/values are kept once, so a row's cache holds
only the tokens it generated. Transformers' ``DynamicLayer`` copies its whole cache with ``torch.cat`` on every appended
token; :class:`SuffixLayer` writes one slot in place, drops finished rows (compaction) and merges or splits the rows of
several passes, which is what the batched generator's loop needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers.cache_utils import DynamicLayer

#: First capacity (tokens) of a suffix cache buffer; it doubles when full, up to the group's ``max_new_tokens``.
_INITIAL_SUFFIX_CAPACITY = 32


class SuffixLayer(DynamicLayer):
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
        """Drop the rows not in ``rows`` (ascending: compaction after some rows stopped), in place.

        The rows before the first dropped one stay where they are; only the later live rows move up, and only their
        filled positions. This runs after most decoding steps: a fresh buffer per layer (two of up to 30 MB for 600
        rows) cost page faults and a copy of every live row each time."""
        if self._key_buffer is None or self._value_buffer is None:
            return
        kept = rows.tolist()
        first = next((i for i, row in enumerate(kept) if row != i), len(kept))
        buffers = []
        for buffer in (self._key_buffer, self._value_buffer):
            if first < len(kept):
                moved = buffer[:, :, : self.length].index_select(0, rows[first:])
                buffer[first : len(kept), :, : self.length] = moved
            buffers.append(buffer[: len(kept)])
        self._key_buffer, self._value_buffer = buffers
        self.keys = self._key_buffer[:, :, : self.length]
        self.values = self._value_buffer[:, :, : self.length]

    @classmethod
    def concatenate(cls, layers: Sequence[SuffixLayer]) -> SuffixLayer:
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

    def take(self, start: int, end: int) -> SuffixLayer:
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

"""The trie word sampler's per-level pass at fixed shapes and addresses, so that a GPU replays it as a CUDA graph.

Why: on a GPU the pass is launch-bound (``docs/word-sampling.md``, "Where a GPU run's time goes": about 2,000 kernel
launches and 75 ms per pass at 30 layers, whatever the pass's width). A CUDA graph replays every kernel of a pass
with one launch, but only at the shapes and addresses it recorded. A trie level's pass varies in three ways, each
made fixed here:

* **rows**: a pass's rows are padded up to a bucket (:func:`row_bucket`: 16, 24, 32, 48, 64, ... up to the
  sampler's rows per pass); padding rows hold whatever finite values the buffers had and their outputs are not read;
* **suffix depth**: every row's sampled suffix sits in a bucket of key/value slots (:func:`slot_bucket`: 4, 8, 16,
  ... up to the requests' ``max_new_tokens``); a pass writes its new position into slot ``depth - 1``, an index held
  in a tensor (:class:`SlotLayer`), and the attention masks the empty slots (``RowPrefix.suffix_mask``), so one graph
  serves every depth of its bucket. (One bucket of ``max_new_tokens`` slots for all depths would make every pass
  read and mask 32 slots where most rows hold one to four tokens.)
* **contexts**: the group's carriers (:class:`~harness.plugins.hf.trie.prefix_rows.PaddedCarriers`) are copied into
buffers of a
  bucketed number (a power of two) and length (a multiple of 16: every row reads all of it, so a power of two would
  nearly double the attention of Provo's 70-token passages), masked per row as the rows layout masks them.

Every input of a pass lives in buffers allocated once (:class:`PassBuffers`) and every bucket's pass reads views of
them, so the addresses a graph recorded stay valid; buffers that must grow are replaced and the recorded graphs
dropped. The pass is the model's own forward through transformers' cache and attention interfaces, so ``static``
(eager at these shapes, any device: what the CPU tests check) and ``graphs`` (CUDA, one graph per bucket and
temperature) run the same operations. The values equal the unpadded pass's up to float rounding: masked slots and
positions weigh exactly zero, but longer reductions and wider products are blocked differently
(``tests/test_static_pass.py``).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from transformers.cache_utils import DynamicLayer

from harness.plugins.hf.shared.device_copy import to_device
from harness.plugins.hf.shared.next_token_head import NextTokenHead
from harness.plugins.hf.shared.prefix_attention import context_mask
from harness.plugins.hf.trie.prefix_rows import PaddedCarriers, RowPrefix

#: How the trie sampler runs its per-level pass: ``off`` (the shapes of each pass, as recorded), ``static`` (fixed
#: shapes, eager) or ``graphs`` (fixed shapes, replayed as CUDA graphs). ``auto`` is ``off`` until a GPU
#: measurement says otherwise (``benchmarks/gpu_suite.sh``, step ``provo-graphs``).
PASS_CAPTURES = ("off", "static", "graphs")


def capture_for(choice: str, device: torch.device) -> str:
    """The capture a sampler on ``device`` uses for ``choice`` (``auto`` or one of :data:`PASS_CAPTURES`)."""
    if choice == "auto":
        return "off"
    if choice not in PASS_CAPTURES:
        raise ValueError(f"unknown pass capture {choice!r}: expected auto, {', '.join(PASS_CAPTURES)}")
    if choice == "graphs" and device.type != "cuda":
        raise ValueError(f"pass capture 'graphs' needs a CUDA device, not {device.type}")
    return choice


def row_bucket(rows: int, limit: int) -> int:
    """The rows a pass of ``rows`` rows is padded to: the smallest of 16, 24, 32, 48, 64, 96, ... (powers of two and
    their midpoints, so at most a third of a pass is padding) that holds them, at most ``limit`` (``rows <= limit``)."""
    size = 16
    while size < rows:
        if size + size // 2 >= rows:
            size += size // 2
            break
        size *= 2
    return max(rows, min(size, limit))


def slot_bucket(depth: int, limit: int) -> int:
    """The suffix slots a pass at trie depth ``depth`` reads: the power of two from 4 up that holds ``depth`` tokens,
    at most ``limit`` (the requests' ``max_new_tokens``, ``depth <= limit``)."""
    return max(depth, min(max(4, _power_of_two(depth)), limit))


def _power_of_two(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


class SlotLayer(DynamicLayer):
    """One layer's suffix keys/values ``[rows, kv_heads, slots, head_dim]`` in place: a forward pass writes its new
    position into slot ``slot`` (a one-element tensor, so replays at every depth share one graph) and reads all
    slots, the attention masking the empty ones."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, slot: torch.Tensor) -> None:
        super().__init__()
        self.keys, self.values, self.slot = keys, values, slot
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        assert self.keys is not None and self.values is not None
        self.keys.index_copy_(2, self.slot, key_states)
        self.values.index_copy_(2, self.slot, value_states)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        # Read only to number the new position and size a mask, both unused: positions are given, and the prefix
        # attention ignores the model's mask. The slot count keeps the mask's size fixed.
        assert self.keys is not None
        return int(self.keys.shape[2]) - 1


class PassBuffers:
    """Every input of a fixed-shape pass, allocated once: a bucket's pass reads the first rows of each.

    ``suffix`` holds, per layer and keys/values, room for ``[rows, kv_heads, slots, head_dim]``; a pass of a bucket
    reads it as that shape at the bucket's rows and slots (:meth:`suffix_view`, contiguous, at the same address for
    every bucket). ``prefix`` is ``[layers, 2, carriers, kv_heads, positions, head_dim]``. One tensor each, so
    gathering the parents' suffixes of all layers is one ``index_select`` and one copy per parent chunk."""

    def __init__(
        self, template: torch.Tensor, layers: int, rows: int, slots: int, carriers: int, positions: int
    ) -> None:
        self.kv_heads, self.head_dim = int(template.shape[-3]), int(template.shape[-1])
        device, dtype = template.device, template.dtype
        self.rows, self.slots, self.carriers, self.positions = rows, slots, carriers, positions
        room = rows * self.kv_heads * slots * self.head_dim
        self.suffix = torch.zeros((layers, 2, room), dtype=dtype, device=device)
        shape = (layers, 2, carriers, self.kv_heads, positions, self.head_dim)
        self.prefix = torch.zeros(shape, dtype=dtype, device=device)
        self.input_ids = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.position_ids = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.carrier = torch.zeros(rows, dtype=torch.long, device=device)
        self.prefix_mask = torch.zeros((rows, 1, 1, positions), device=device)
        self.suffix_mask = torch.full((slots,), -math.inf, device=device)
        self.slot = torch.zeros(1, dtype=torch.long, device=device)

    def suffix_view(self, rows: int, slots: int) -> torch.Tensor:
        """The suffix room read as ``[layers, 2, rows, kv_heads, slots, head_dim]`` (the first elements of each
        layer's keys and values, so a view of any bucket starts at the same address)."""
        size = rows * self.kv_heads * slots * self.head_dim
        layers = self.suffix.shape[0]
        return self.suffix[:, :, :size].view(layers, 2, rows, self.kv_heads, slots, self.head_dim)

    def sizes(self) -> tuple[int, int, int, int]:
        return self.rows, self.slots, self.carriers, self.positions

    def holds(self, rows: int, slots: int, carriers: int, positions: int) -> bool:
        return all(need <= have for need, have in zip((rows, slots, carriers, positions), self.sizes(), strict=True))


class StaticPass:
    """The fixed-shape pass of one trie sampler: its buffers, and per row bucket the forward pass, eager or a CUDA
    graph. Use: :meth:`begin_group` once per ``sample_many`` group, then per pass :meth:`run` and :meth:`take`."""

    def __init__(self, head: NextTokenHead, config: Any, max_rows: int, graphs: bool) -> None:
        self.head, self.config, self.max_rows, self.graphs = head, config, max_rows, graphs
        self.buffers: PassBuffers | None = None
        self.padded: PaddedCarriers | None = None
        #: Per ``(rows, slots, temperature)``: the recorded graph and the probabilities it writes.
        self._graphs: dict[tuple[int, int, float], tuple[Any, torch.Tensor]] = {}
        self._pool: Any = None
        #: Per ``(rows, slots)`` bucket: the cache and the layout over the current buffers (:meth:`_views`).
        self._bucket_views: dict[tuple[int, int], tuple[Any, RowPrefix]] = {}
        #: Where the head's buffers were when the graphs were recorded.
        self._head_addresses: tuple[int, ...] = ()
        #: The bucket of the last pass, whose suffixes :meth:`take` copies out.
        self._last: tuple[int, int] = (0, 0)
        #: How many graphs were recorded (a benchmark reports it; recording costs about two eager passes).
        self.recorded = 0

    def begin_group(self, padded: PaddedCarriers, slots: int) -> None:
        """Copy the group's carriers into the buffers, replacing them (and dropping recorded graphs) if too small."""
        carriers, positions = int(padded.keys[0].shape[0]), padded.max_positions
        need: tuple[int, ...] = (self.max_rows, slots, _power_of_two(carriers), -(-positions // 16) * 16)
        if self.buffers is None or not self.buffers.holds(*need):
            old = self.buffers
            if old is not None:  # grown to hold both, so groups that alternate do not replace them each time
                need = tuple(max(a, b) for a, b in zip(need, old.sizes(), strict=True))
            self.buffers = None
            self._graphs.clear()
            self._bucket_views.clear()
            self.buffers = PassBuffers(padded.keys[0], len(padded.keys), *need)
        buffers = self.buffers
        buffers.prefix.zero_()
        buffers.prefix[:, 0, :carriers, :, :positions] = torch.stack(padded.keys)
        buffers.prefix[:, 1, :carriers, :, :positions] = torch.stack(padded.values)
        self.padded = padded

    def run(
        self,
        tokens: list[int],
        positions: list[int],
        requests: list[int],
        parents: list[tuple[torch.Tensor, torch.Tensor]],
        depth: int,
        temperature: float,
    ) -> torch.Tensor:
        """Next-token probabilities ``[rows, vocab]`` (a buffer the next pass overwrites) of rows continuing
        ``tokens`` at ``positions``, for ``requests`` of the group, at trie depth ``depth``; ``parents`` are the
        previous level's suffixes (``take``'s tensors) and, per tensor, the rows to continue, in row order."""
        assert self.buffers is not None and self.padded is not None, "begin_group first"
        buffers, padded, rows = self.buffers, self.padded, len(tokens)
        columns = [tokens, positions, [padded.carrier[r] for r in requests], [padded.length[r] for r in requests]]
        ids = to_device(columns, buffers.slot.device, torch.long)  # one copy to the device
        buffers.input_ids[:rows, 0] = ids[0]
        buffers.position_ids[:rows, 0] = ids[1]
        buffers.carrier[:rows] = ids[2]
        buffers.prefix_mask[:rows] = context_mask(ids[3], buffers.positions)
        bucket = (row_bucket(rows, self.max_rows), slot_bucket(depth, buffers.slots))
        buffers.suffix_mask.fill_(-math.inf)
        buffers.suffix_mask[:depth] = 0.0
        buffers.slot.fill_(depth - 1)
        suffix = buffers.suffix_view(*bucket)
        start = 0
        for parent, which in parents:
            if depth > 1:
                suffix[:, :, start : start + len(which), :, : depth - 1] = parent.index_select(2, which)
            start += len(which)
        self._last = bucket
        return self._forward(bucket, temperature)[:rows]

    def take(self, rows: int, depth: int) -> torch.Tensor:
        """The suffixes of the last pass's first ``rows`` rows, ``depth`` slots: the parents of the next level."""
        assert self.buffers is not None
        return self.buffers.suffix_view(*self._last)[:, :, :rows, :, :depth].clone()

    def _forward(self, bucket: tuple[int, int], temperature: float) -> torch.Tensor:
        if not self.graphs:
            return self._pass(bucket, temperature)
        if self.head.addresses() != self._head_addresses:
            # A pass wider than the reserve (a group of more contexts than rows per pass) replaced the head's buffers,
            # which every recorded graph writes into.
            self.head.reserve(max(self.max_rows, self.head.capacity()))
            self._head_addresses = self.head.addresses()
            self._graphs.clear()
        key = (*bucket, temperature)
        if key not in self._graphs:
            self._graphs[key] = self._record(bucket, temperature)
        graph, probs = self._graphs[key]
        graph.replay()
        return probs

    def _pass(self, bucket: tuple[int, int], temperature: float) -> torch.Tensor:
        """The model's forward over the buffers at ``bucket`` (rows, slots), and the head's probabilities."""
        cache, layout = self._views(bucket)
        buffers = self.buffers
        assert buffers is not None
        rows = bucket[0]
        hidden, _ = self.head.hidden(
            buffers.input_ids[:rows], cache, position_ids=buffers.position_ids[:rows], shared_prefix=layout
        )
        return self.head.probabilities(hidden[:, -1], temperature)

    def _views(self, bucket: tuple[int, int]) -> tuple[Any, RowPrefix]:
        """The cache and the prefix layout of a pass at ``bucket`` (rows, slots), over the buffers: made once per
        buffers and bucket, outside any recording (a cache's constructor makes host tensors), and only read by the
        passes."""
        buffers = self.buffers
        assert buffers is not None
        if bucket not in self._bucket_views:
            from transformers import DynamicCache

            rows, slots = bucket
            suffix = buffers.suffix_view(rows, slots)
            layers = range(suffix.shape[0])
            cache = DynamicCache(config=self.config)
            cache.layers = [SlotLayer(suffix[i, 0], suffix[i, 1], buffers.slot) for i in layers]
            layout = RowPrefix.over(
                [buffers.prefix[i, 0] for i in layers],
                [buffers.prefix[i, 1] for i in layers],
                buffers.carrier[:rows],
                buffers.prefix_mask[:rows],
                buffers.suffix_mask[:slots],
            )
            self._bucket_views[bucket] = (cache, layout)
        return self._bucket_views[bucket]

    def _record(self, bucket: tuple[int, int], temperature: float) -> tuple[Any, torch.Tensor]:
        """One bucket's pass recorded as a CUDA graph (warmed up on a side stream first, as CUDA graphs require).

        The head's output buffers are reserved at full size first (:meth:`_forward`), so no graph records an address
        that a later, wider pass would free; all graphs share one memory pool, which is safe because they never run
        at once and nothing a graph leaves in the pool is read after the next replay."""
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                self._pass(bucket, temperature)
        torch.cuda.current_stream().wait_stream(stream)
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self._pool):
            probs = self._pass(bucket, temperature)
        self.recorded += 1
        return graph, probs

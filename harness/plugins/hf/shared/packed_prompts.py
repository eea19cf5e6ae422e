"""The generator's prompts, packed end to end into one forward pass, each attending only to its own tokens."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from harness.plugins.hf.shared.plain_attention import plain_attention


class PackedPrompts:
    """Prompts laid end to end in one row of one forward pass, each attending causally to its own tokens only.

    Encoding each prompt alone streams all the weights once per prompt (about 130 ms for a 40-token prompt of
    SmolLM2-135M on 2 CPU cores, 60 ms of it fixed); packed, the linear layers see one long matrix. The attention runs
    per prompt, as transformers' ``sdpa`` runs it for that prompt alone (same call, same shapes, the padding-free
    causal path). A prompt's keys and values then differ from encoding it alone only where the linear layers round a
    row differently in a longer product: on 2 CPU cores (MKL) prompts of a few dozen tokens came out bit for bit the
    same (all 64 of the ASSET benchmark's), prompts of one to a few tokens not always (``tests/test_generator.py``).
    The block-diagonal mask transformers builds from the restarting positions is not read.
    """

    def __init__(self, lengths: Sequence[int]) -> None:
        if not lengths or min(lengths) < 1:
            raise ValueError(f"packed prompts need at least one token each, got lengths {list(lengths)}")
        self.bounds: list[tuple[int, int]] = []
        start = 0
        for length in lengths:
            self.bounds.append((start, start + length))
            start += length
        self.total = start

    def position_ids(self, device: torch.device | None = None) -> torch.Tensor:
        """Positions restarting at 0 for every prompt, ``[1, total]`` (rotary embeddings read each prompt alone)."""
        return torch.tensor([[i for s, e in self.bounds for i in range(e - s)]], device=device)

    def attend(
        self,
        module: torch.nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        dropout: float,
        scaling: float | None,
        **kwargs: Any,
    ) -> torch.Tensor:
        """The model's plain attention (:func:`harness.plugins.hf.shared.plain_attention.plain_attention`: ``sdpa``, or
        its own eager kernel where it soft-caps) over each prompt's slice of ``query``/``key``/``value [1, heads, total,
        d]``, causal within the slice, joined along the positions: ``[1, total, q_heads, d]``."""
        if query.shape[0] != 1 or query.shape[2] != self.total or key.shape[2] != self.total:
            raise ValueError(
                f"packed prompts of {self.total} positions need one row of {self.total} new positions and no cache, "
                f"got queries {tuple(query.shape)} and keys {tuple(key.shape)}"
            )
        parts = [
            plain_attention(
                module,
                query[:, :, s:e],
                key[:, :, s:e],
                value[:, :, s:e],
                None,
                dropout=dropout,
                scaling=scaling,
                **kwargs,
            )[0]
            for s, e in self.bounds
        ]
        return torch.cat(parts, dim=1)

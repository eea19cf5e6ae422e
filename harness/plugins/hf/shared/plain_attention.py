"""The attention a model runs when no prefix layout applies: its context's own pass, the multiple-choice scorer's
passes, the generator's packed prompts. One place, because one family needs another kernel than the rest."""

from __future__ import annotations

import math
import sys
from typing import Any

import torch


def plain_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, Any]:
    """The attention the model would run without a prefix layout: transformers' ``sdpa``, or, for a model that
    soft-caps its scores (which ``sdpa`` cannot), the model's own eager kernel, with a causal mask where a pass of
    several new positions comes without one (packed prompts)."""
    if kwargs.get("softcap") is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    eager = sys.modules[type(module).__module__].eager_attention_forward
    if attention_mask is None and query.shape[2] > 1:
        q_len, k_len = query.shape[2], key.shape[2]
        attention_mask = torch.full((q_len, k_len), -math.inf, dtype=query.dtype, device=query.device)
        attention_mask = attention_mask.triu(k_len - q_len + 1)[None, None]
    return eager(module, query, key, value, attention_mask, **kwargs)

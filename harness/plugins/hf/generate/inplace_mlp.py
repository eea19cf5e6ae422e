"""The llama family's gated MLP with its activation and product written in place, for inference.

Transformers computes ``down(silu(gate(x)) * up(x))``, which allocates two fresh ``[rows, intermediate]`` tensors per
layer and pass (3 MB each for a 512-row pass of SmolLM2-135M) only to read them once. On a CPU, where these tensors
no longer sit in cache when the next operation reads them, writing the activation and the product into the gate's own
output instead saved about 17 ms of a 1,020 ms trie pass of 512 rows (1.6%; interleaved A/B on 2 cores,
``docs/word-sampling.md``, "Wider passes"). The operations are the same kernels on the same values, so the outputs
are identical bit for bit; ``tests/test_inplace_mlp.py`` checks that in float32 and bfloat16.

Only under no-grad or inference mode: with autograd recording, the in-place writes would destroy what the backward
pass needs, so the layer falls back to transformers' own forward.
"""

from __future__ import annotations

import types
from typing import Any

import torch
from torch import nn

#: Model types whose MLP is the gated SiLU ``down(silu(gate(x)) * up(x))`` (each layer is checked again by shape).
GATED_SILU_MODEL_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3", "olmo2"})
#: Set on every MLP switched to :func:`_forward_in_place`, so switching twice is a no-op.
_MARK = "_harness_inplace_mlp"


def _silu_types() -> tuple[type, ...]:
    """The activation modules that are exactly ``torch.nn.functional.silu`` (transformers' own and torch's)."""
    from transformers.activations import SiLUActivation

    return (SiLUActivation, nn.SiLU)


def _forward_in_place(self: Any, x: torch.Tensor) -> torch.Tensor:
    if torch.is_grad_enabled():
        return type(self).forward(self, x)
    hidden = self.gate_proj(x)
    nn.functional.silu(hidden, inplace=True)
    hidden.mul_(self.up_proj(x))
    return self.down_proj(hidden)


def enable(model: Any) -> int:
    """Switch every gated SiLU MLP of ``model`` (:data:`GATED_SILU_MODEL_TYPES`) to the in-place forward; returns how
    many.

    A layer is switched only if it is exactly ``down_proj(act_fn(gate_proj(x)) * up_proj(x))`` with a plain SiLU (a
    hub kernel or another activation keeps transformers' forward), and only once."""
    config = getattr(model, "config", None)
    if getattr(config, "model_type", None) not in GATED_SILU_MODEL_TYPES:
        return 0
    silu = _silu_types()
    switched = 0
    for module in model.modules():
        if getattr(module, _MARK, False):
            switched += 1
            continue
        parts = [getattr(module, name, None) for name in ("gate_proj", "up_proj", "down_proj")]
        if not all(isinstance(part, nn.Linear) for part in parts):
            continue
        act = getattr(module, "act_fn", None)
        if type(act) not in silu or "forward" in vars(module) or "forward" in vars(act):
            continue
        module.forward = types.MethodType(_forward_in_place, module)
        setattr(module, _MARK, True)
        switched += 1
    return switched

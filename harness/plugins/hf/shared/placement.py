"""Where an engine runs and how many rows one pass may take: the two arguments every ``hf`` engine's constructor
reads (the trie samplers, the generator, the query scorer, the token-level capability), checked in one place so
that they refuse a bad batch size alike and find the model's device alike."""

from __future__ import annotations

from typing import Any

import torch


def engine_placement(model: Any, batch_size: int, device: torch.device | None) -> tuple[int, torch.device]:
    """``(batch_size, device)`` for an engine over ``model``: the batch size checked (at least 1; the adapter's
    ``batch_size`` model argument is checked before this, so this guards direct use), and the device given, else
    the device of the model's first parameter."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    return batch_size, device if device is not None else next(model.parameters()).device

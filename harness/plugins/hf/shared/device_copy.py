"""Host values copied to the model's device without making the host wait for the device.

A plain ``tensor.to("cuda")`` (or ``torch.tensor(values, device="cuda")``) from ordinary, pageable host memory is
synchronous in PyTorch: it waits for the stream to finish every kernel queued before it. The trie sampler copies a
few small arrays per forward pass (the rows' tokens, their parents' rows, the draws' uniforms), so each copy made the
host wait for the pass it had just queued, and the GPU then idled while the host prepared the next one. Staged in
page-locked memory and copied with ``non_blocking=True``, a copy is queued like a kernel; PyTorch's pinned-memory
allocator keeps the staging buffer until the copy has run, so the host may drop or reuse its own values at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch


def to_device(
    values: np.ndarray | torch.Tensor | Sequence[Any], device: torch.device, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """``values`` as a tensor on ``device`` (of ``dtype`` if given), queued without a wait on a GPU."""
    host = values if isinstance(values, torch.Tensor) else torch.as_tensor(values, dtype=dtype)
    if dtype is not None and host.dtype != dtype:
        host = host.to(dtype)
    if device.type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)

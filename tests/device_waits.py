"""Spotting, on a CPU, the operations that would make the host wait for a GPU.

On a GPU a few operations cannot be queued: reading a value to the host (``.item()``, ``bool(t)``, ``.tolist()``),
and those whose output shape depends on the values (``nonzero``, boolean-mask indexing, ``unique``,
``repeat_interleave`` without its ``output_size``). Each waits for every kernel queued before it. The trie sampler
queues a level's pass and its draws without one (``torch.cuda.set_sync_debug_mode`` checks that on a GPU, in
``tests/test_static_pass.py``); this mode sees the same operations on a CPU, so CI keeps them out without a GPU.
Two ways to wait cannot be seen on a CPU, where no copy is made: ``.tolist()`` or ``.numpy()`` of a device tensor,
and host-to-device copies (``plugins/hf/shared/device_copy.py`` owns those).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

#: Operations that read a value back (under ``torch.inference_mode`` a CPU tensor's ``item`` and ``bool`` arrive as
#: ``item`` and ``is_nonzero``, elsewhere as ``_local_scalar_dense``) or size their output by the values.
_WAITING = frozenset(
    {
        *("_local_scalar_dense", "item", "is_nonzero", "equal"),
        *("nonzero", "masked_select", "unique_consecutive", "_unique2", "unique_dim"),
    }
)


def _boolean_index(args: Any) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in indices or ())


class DeviceWaits(TorchDispatchMode):
    """Records the name of every operation run under it that would wait for a GPU (:data:`_WAITING`, boolean-mask
    indexing, ``repeat_interleave`` without ``output_size``)."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in _WAITING:
            self.waits.append(name)
        elif name in ("index", "index_put", "index_put_") and _boolean_index(args):
            self.waits.append(f"{name} with a boolean mask")
        elif name == "repeat_interleave" and kwargs.get("output_size") is None:
            self.waits.append("repeat_interleave without output_size")
        return func(*args, **kwargs)

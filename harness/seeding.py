"""Seeds derived from the run seed and a name, so every instance has its own random stream.

Per-instance streams make results independent of order, batching and resumption: the instance answered after a
restart draws exactly what it would have drawn in an uninterrupted run.
"""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from the parts' string forms (stable across processes, unlike ``hash``)."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


def derive_rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(derive_seed(*parts))

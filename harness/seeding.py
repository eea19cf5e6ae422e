"""Seeds derived from the run seed and a name, so every instance has its own random stream.

Per-instance streams make results independent of order, batching and resumption: the instance answered after a
restart draws exactly what it would have drawn in an uninterrupted run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from the parts' string forms (stable across processes, unlike ``hash``)."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


def derive_rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(derive_seed(*parts))


def metric_rngs(rng: np.random.Generator) -> Callable[[str], np.random.Generator]:
    """One independent bootstrap generator per metric name, all derived from one draw of ``rng``.

    It draws one integer from ``rng`` and returns a function: ``rngs = metric_rngs(rng)``, then ``rngs("ttr_gap")``
    is that metric's generator (a fresh one on each call, seeded from the draw and the name, so one name always
    gives the same stream). A scorer's ``aggregate`` passes ``rngs(name)`` to ``mean_metric`` for each metric.

    Keying the bootstrap by metric name (rather than drawing every metric from one shared stream) makes a
    human metric's CI identical in a human-only run and in a model run, where model metrics come first.
    """
    root = int(rng.integers(0, 2**63 - 1))
    return lambda name: derive_rng(root, name)

"""Sentence-transformers models: loaded on first use, once per (model, device) and process, and texts encoded as
unit-length vectors.

Why its own module: the semantic probe (``harness.scorers.probes.semantic``) and the embedding answer classifier
(``harness.scorers.choice.classify``) embed texts with the same models. One owner of the loaded models means one
copy of a model per process whoever asked first, and one way of encoding (batches, L2 normalisation, numpy), so
the probe and the classifier cannot drift apart; neither touches the other's state. The callers resolve their
model names (aliases, packaged copies) and say in their own words what could not be loaded.

``sentence_transformers`` (the ``probes`` extra) and torch are imported only when a model loads or ``auto`` is
resolved, so importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from harness.errors import HarnessError

#: Loaded models by (model name or path, device), shared per process. Embeddings are not cached here: a batch's
#: composition changes its vectors in the last float bits (about 1e-7), so a process-wide cache of vectors would make
#: a run's numbers depend on what the process embedded before; each caller keeps its own.
_MODELS: dict[tuple[str, str], Any] = {}


class EncoderLoadError(HarnessError):
    """A sentence-transformers model could not be loaded: the extra is not installed, its files are missing, a hub
    id without network, a bad device; all mean "cannot embed". The message is the cause's type and text
    (``ModuleNotFoundError: No module named 'sentence_transformers'``), the cause its ``__cause__``."""


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; anything else as given."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load(model: str, device: str) -> Any:
    """The ``SentenceTransformer`` of ``model`` (a local path or a hub id) on ``device`` (resolved: not ``auto``),
    loaded on the first call for that pair and shared by every later caller in this process.

    Raises :class:`EncoderLoadError` when it cannot load (nothing is cached then, so a later call tries again)."""
    key = (model, device)
    if key not in _MODELS:
        try:
            from sentence_transformers import SentenceTransformer

            _MODELS[key] = SentenceTransformer(model, device=device)
        except Exception as exc:  # missing files, no network for a hub id, bad device: all mean "cannot embed"
            raise EncoderLoadError(f"{type(exc).__name__}: {exc}") from exc
    return _MODELS[key]


def loaded(model: str, device: str) -> Any | None:
    """The model :func:`load` loaded for that pair, or None if none was (never loads)."""
    return _MODELS.get((model, device))


def loaded_info(model: str, device: str) -> dict[str, int]:
    """``dimension`` (of an embedding) and ``max_seq_length`` (tokens the model reads of a text) of the model loaded
    for that pair, for a caller's ``describe``; empty when none was loaded (never loads)."""
    encoder = loaded(model, device)
    if encoder is None:
        return {}
    # ``get_embedding_dimension`` since sentence-transformers 6; the old name before.
    dimension = getattr(encoder, "get_embedding_dimension", None) or encoder.get_sentence_embedding_dimension
    return {"dimension": dimension(), "max_seq_length": encoder.max_seq_length}


def encode(encoder: Any, texts: Sequence[str], *, batch_size: int, dtype: DTypeLike) -> np.ndarray:
    """The unit-length embeddings of ``texts`` by ``encoder`` (what :func:`load` returned), ``batch_size`` texts per
    batch, as a ``[len(texts), dim]`` array of ``dtype`` (the model computes in float32; float64 only widens)."""
    vectors = encoder.encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=dtype)


def clear() -> None:
    """Forget every loaded model (for tests)."""
    _MODELS.clear()

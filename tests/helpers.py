"""Shared test helpers: where the real data lives, and how to run the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The real data sets: ``HARNESS_DATA_DIR`` if set, else ``../shared/data`` beside the repository."""
    env = os.environ.get("HARNESS_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


def require_provo() -> Path:
    data = shared_data_dir()
    if not (data / "provo" / "provo_positions.jsonl").is_file():
        pytest.skip(f"Provo data not found under {data}")
    return data


def run_cli(
    *args: str, env: dict[str, str] | None = None, check: bool = True, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HARNESS_NO_PROGRESS": "1", **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=REPO,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"harness {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc

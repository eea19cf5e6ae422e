#!/usr/bin/env bash
# Build llama-cpp-python 0.3.36 from source once per machine and print the folder holding the wheel.
# The build takes about 9 minutes on 2 cores, so the wheel is kept outside the repository
# (${HARNESS_WHEEL_CACHE:-~/.cache/variability-harness/wheels}) and reused by every later setup.
# GGML_NATIVE=OFF: a native build uses every instruction the compiler sees on this CPU, AMX included, and on the
# project's machines the kernel refuses AMX tile instructions (ldtilecfg: general protection fault), so the server
# crashes on its first request. Without native, ggml uses AVX2/FMA/F16C, which every x86-64 machine here has.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=0.3.36
FLAGS="-DGGML_NATIVE=OFF"
DIR="${HARNESS_WHEEL_CACHE:-$HOME/.cache/variability-harness/wheels}/llama-cpp-python-$VERSION-native-off"
if ! ls "$DIR"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
  mkdir -p "$DIR"
  echo "building llama-cpp-python $VERSION (about 9 minutes, once per machine) into $DIR" >&2
  CMAKE_ARGS="$FLAGS" .venv/bin/python -m pip wheel --quiet --no-deps --no-cache-dir -w "$DIR.tmp" \
    "llama-cpp-python==$VERSION" >&2
  mv "$DIR.tmp"/llama_cpp_python-*.whl "$DIR"/
  rmdir "$DIR.tmp"
fi
echo "$DIR"

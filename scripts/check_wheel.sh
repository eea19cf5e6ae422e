#!/usr/bin/env bash
# The wheel a user installs, checked as a user meets it: built from this checkout, installed alone (the light core,
# no extras) into a new virtual environment, and run from outside the repository, so that nothing is found in the
# checkout by accident. Proves that the wheel holds one top-level package (harness: no plugins, scorers or tasks),
# carries the task files, the collect pages and the leaderboard assets, and that the light core runs without torch,
# transformers, spaCy or sentence-transformers, while --model hf: names the extra to install in one line.
# Usage: bash scripts/check_wheel.sh [DATA_DIR]   (default ../shared/data beside the repository). About 1 to 2 minutes;
# the environment's packages come from the package index (pip's cache makes a second run fast). .ci/run runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
DATA="$(cd "${1:-../shared/data}" && pwd)"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1
say() { echo "check_wheel: $*"; }

# 1. Build it (with this checkout's setuptools; no build environment to download).
.venv/bin/python -m pip wheel --quiet --no-deps --no-build-isolation -w "$WORK/dist" . >/dev/null
WHEEL="$(ls "$WORK"/dist/variability_harness-*.whl)"
say "built $(basename "$WHEEL")"

# 2. What it holds.
"$PYTHON" - "$WHEEL" <<'EOF'
import sys
import zipfile

names = zipfile.ZipFile(sys.argv[1]).namelist()
top = sorted({n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))})
assert top == ["harness"], f"top-level entries besides harness: {top}"
needed = [
    "harness/tasks/provo.yaml",
    "harness/tasks/asset-valid.yaml",
    "harness/collect/templates/base.html",
    "harness/collect/static/study.js",
    "harness/collect/static/study.css",
    "harness/leaderboard/page.js",
    "harness/leaderboard/page.css",
    "harness/plugins/builtin.py",
    "harness/scorers/builtin.py",
]
missing = [n for n in needed if n not in names]
assert not missing, f"missing from the wheel: {missing}"
print(f"check_wheel: {len(names)} files, one top-level package, task files, collect pages and leaderboard assets in it")
EOF

# 3. Installed alone into a new environment: the light core, no extras.
"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet "$WHEEL" 2>&1 | grep -v "^WARNING: Location" || true
"$WORK/venv/bin/python" -c "import harness" 2>/dev/null || { say "the wheel did not install"; exit 1; }
"$WORK/venv/bin/python" - <<'EOF'
import importlib.util

present = [m for m in ("torch", "transformers", "spacy", "sentence_transformers", "sklearn", "matplotlib")
           if importlib.util.find_spec(m) is not None]
assert not present, f"the light install pulled in {present}"
for old in ("plugins", "scorers", "tasks"):
    spec = importlib.util.find_spec(old)
    assert spec is None or "site-packages" not in str(spec.origin or spec.submodule_search_locations), old
print("check_wheel: installed without torch, transformers, spaCy, sentence-transformers, scikit-learn, matplotlib")
EOF

# 4. Used from outside the repository.
cd "$WORK"
H="$WORK/venv/bin/harness"
export HARNESS_NO_PROGRESS=1 HARNESS_OFFLINE=1
"$H" ls tasks | grep -q "^provo	harness.plugins.builtin	$WORK/venv/" || { say "provo is not registered from the wheel"; exit 1; }
"$H" run --tasks provo --model mock:x --limit 3 --data-dir "$DATA" --output-dir runs | tail -n 3
"$H" run --tasks provo --human-only --limit 3 --data-dir "$DATA" --output-dir runs | tail -n 3
"$H" score runs/mock__x --data-dir "$DATA" --output-dir rescored >/dev/null
"$H" export runs/mock__x --format lm-eval -o export >/dev/null
"$H" leaderboard runs/mock__x runs/human -o board
grep -q "<script" board/index.html && grep -q "<style" board/index.html || { say "the page has no assets"; exit 1; }
cp -r "$REPO/examples/collect" study
"$H" collect check study/sentence-completion.yaml >/dev/null
cp -r "$REPO/examples/raw-shapes" raw
"$H" validate raw/*.yaml --data-dir raw/data >/dev/null
"$H" data inspect provo/provo_cloze_responses.csv --data-dir "$DATA" > inspected.yaml
grep -q "group_by: \[text_id, word_num\]" inspected.yaml || { say "data inspect did not find Provo's key"; exit 1; }
set +e
ERR="$("$H" run --tasks provo --model hf:smollm2-135m --limit 1 --data-dir "$DATA" --output-dir hf 2>&1 >/dev/null)"
CODE=$?
set -e
[ "$CODE" = 2 ] && [ "$(printf '%s\n' "$ERR" | wc -l)" = 1 ] && [[ "$ERR" == *"variability-harness[hf]"* ]] || {
  say "--model hf: on the light install gave ($CODE): $ERR"; exit 1; }
say "ok: run (mock and human-only), score, export, leaderboard, collect check, validate of the raw-shape examples and data inspect from outside the repository; $ERR"

#!/usr/bin/env bash
# Regenerates leaderboards/smollm2-cpu/: every landed task with its data here, run with the packaged
# SmolLM2-135M-Instruct (dequantised from its Q4_1 GGUF) on CPU (the only causal LM available offline), beside the
# human control of each task, then folded into one leaderboard. Limits keep the whole thing near an hour on 2 CPU
# cores; they are recorded in every results.json.
# Usage: bash leaderboards/smollm2-cpu.sh [DATA_DIR]   (from the repository root, after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-${HARNESS_DATA_DIR:-../shared/data}}"
RUNS=runs/leaderboard
run() { .venv/bin/harness run --data-dir "$DATA" "$@"; }

# Next-word prediction (Provo): 200 contexts, 1000 samples each, at two sampling temperatures.
run --human-only --tasks provo --limit 200 --output-dir "$RUNS/provo"
run --model hf:smollm2-135m --tasks provo --limit 200 --output-dir "$RUNS/provo"
run --model hf:smollm2-135m --tasks provo --limit 200 --task-args temperature=0.7 --output-dir "$RUNS/provo-t0.7"

# Open-ended generation: 20 inputs each, 10 samples per input; simplification under two decoders.
GEN=asset-valid,wmt14-en-de,wmt14-en-fr,dailydialog-pp
run --human-only --tasks "$GEN" --limit 20 --output-dir "$RUNS/generation"
run --model hf:smollm2-135m --tasks asset-valid --limit 20 --task-args "decoding=ancestral;top_p=0.9" \
  --output-dir "$RUNS/generation-asset"
run --model hf:smollm2-135m --tasks wmt14-en-de,wmt14-en-fr,dailydialog-pp --limit 20 --output-dir "$RUNS/generation"

# Pragmatic multiple choice: the first 35 items, every way of asking, 5 option orders.
run --human-only --tasks pragmatics-mcq --limit 35 --output-dir "$RUNS/mcq"
run --model hf:smollm2-135m --tasks pragmatics-mcq --limit 35 --output-dir "$RUNS/mcq"

.venv/bin/harness leaderboard "$RUNS"/*/*/results.json -o leaderboards/smollm2-cpu

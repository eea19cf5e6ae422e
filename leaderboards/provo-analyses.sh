#!/usr/bin/env bash
# Regenerates leaderboards/provo-analyses/: the Provo study's further analyses (docs/metrics.md) for SmolLM2-135M on
# the first 200 positions (n = 1,000 samples each, as the README's main job) beside the human control: how many
# samples are enough (sample_size), syntactic and semantic TVD (pos_tvd, semantic_tvd), the k% replacement
# experiment (replacement) and the predictors of the gap (gap_predictors), with their figures on the page.
# Usage: bash leaderboards/provo-analyses.sh [DATA_DIR]   (from the repository root, after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-${HARNESS_DATA_DIR:-../shared/data}}"
RUNS=runs/provo-analyses

# The model (about 4 minutes on a 2-core CPU; a finished run is only scored again) and the human-only row.
.venv/bin/harness run --model hf:smollm2-135m --tasks provo --limit 200 --data-dir "$DATA" --output-dir "$RUNS"
.venv/bin/harness run --human-only --tasks provo --limit 200 --data-dir "$DATA" --output-dir "$RUNS"
# The analyses, from the saved outputs (about 2 minutes: tagging words for pos_tvd, embedding them for semantic_tvd).
.venv/bin/harness score "$RUNS/hf__smollm2-135m" --scorers +sample_size,+pos_tvd,+semantic_tvd,+replacement,+gap_predictors \
  --data-dir "$DATA"
.venv/bin/harness leaderboard "$RUNS/hf__smollm2-135m/rescored" "$RUNS/human" -o leaderboards/provo-analyses

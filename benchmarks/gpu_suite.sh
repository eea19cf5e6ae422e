#!/usr/bin/env bash
# The GPU checks and timings of docs/word-sampling.md ("On a GPU"), in one script for a short lease on a CUDA machine.
#
#   bash benchmarks/gpu_suite.sh OUT_DIR [MODEL] [SECONDS]
#
# MODEL is an hf model name (default: the packaged smollm2-135m); SECONDS is the wall-clock budget (default 570): the
# full Provo run takes what is left after the other steps, and runs on fewer contexts (said in its log) if the rate
# of the 200-context run says the whole corpus would not fit. Needs HARNESS_DATA_DIR with provo/ and asset/. Every
# step writes its own log under OUT_DIR; a step that fails is reported and the next one runs. SUITE_QUICK=1 shrinks
# every step (a smoke test of the code paths on a tiny model). SUITE_SKIP="NAME ..." skips the named steps (the names
# the log prints after "##"), e.g. to spend a short lease on what an earlier one did not reach.
#
# Steps, in order of what matters most:
#   1. the device, and torch/transformers versions;
#   2. the fixed-shape pass replayed as CUDA graphs against the same passes run eagerly (tests/test_static_pass.py);
#      provo, first 200 contexts, n = 1000, bfloat16 on CUDA (runs/gpu-bf16): tested afterwards against the CPU's
#      float32 runs with benchmarks/validate_bf16.py --compare; the same 200 with each level's passes replayed as CUDA
#      graphs (runs/gpu-bf16-graphs, --model-args pass_capture=graphs); the faster of the two runs the steps after;
#   3. the block shape: the first SWEEP_LIMIT (512) contexts in blocks of 64 x 1,024, 256 x 4,096 and 512 x 8,192
#      (contexts per pass x rows per pass; SUITE_SWEEP="CxR ..." picks others), runs/sweep-CxR;
#   4. the full provo task in bfloat16 on CUDA (runs/gpu-bf16-full) in the fastest shape, timed; it leaves
#      SUITE_RESERVE seconds (default 360) for the steps after it; then a cProfile of the host's Python over
#      SWEEP_LIMIT contexts (profile.txt), and the same contexts' time split into passes, draws, cache gathers and
#      the host's own work (bench_trie_host.py, trie_host.json);
#   5. the statistical tests of the sampler and the generator against plain generate, on CUDA (pytest), and the
#      bulk counting of decided children against decoding every child;
#   6. the trie replay: the first contexts' tries recorded with the model, replayed at SmolLM2's shape in both layouts
#      of the trie attention (runs of contexts, a CPU's; all rows at once, a GPU's) and as CUDA graphs, then through
#      1B-class models of
#      every family served and 8B-class llama and qwen2 (benchmarks/bench_trie_replay.py);
#   7. bench_generate (batched against per-prompt generate, both on the same first 64 ASSET inputs);
#   8. provo, first 200 contexts, float32 on CUDA (runs/gpu-fp32), then the full task in float32 (runs/gpu-fp32-full);
#   9. bench_word_sampler (trie against generate and vLLM, on the same 32 contexts, also answered together);
#  10. CUDA against CPU in float32 on the same contexts (benchmarks/check_cuda_matches_cpu.py).
set -u
out=${1:?usage: gpu_suite.sh OUT_DIR [MODEL] [SECONDS]}
model=${2:-smollm2-135m}
budget=${3:-570}
quick=${SUITE_QUICK:-0}
device=${SUITE_DEVICE:-cuda}  # cpu only to try the script itself on a machine without a GPU
mkdir -p "$out/runs"
py=${PYTHON:-python3}
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }
step() {  # step NAME LIMIT_SECONDS COMMAND...: run with a time limit, log to OUT/NAME.log, report in one line
  local name=$1 limit=$2
  shift 2
  if [[ " ${SUITE_SKIP:-} " == *" $name "* ]]; then echo "## $name: skipped (SUITE_SKIP)"; return; fi
  if [ "$limit" -le 5 ]; then echo "## $name: skipped (no time left)"; return; fi
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "## $name: exit $rc in $((SECONDS - t0)) s (limit $limit s)"
  tail -n 4 "$out/$name.log" | sed 's/^/   /'
}
export HARNESS_NO_PROGRESS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HARNESS_OFFLINE=1 PYTHONUNBUFFERED=1
if [ "$quick" = 1 ]; then limit=12 n=100 ctx=2 gen=8 tokens=8 wsctx=2; else limit=200 n=1000 ctx=8 gen=64 tokens=100 wsctx=32; fi
# harness run of provo on the device; each use adds --limit, --output-dir and its own options.
provo=("$py" -m harness run --tasks provo --model "hf:$model" --device "$device" --task-args "n_samples=$n")
rate_of() {  # seconds answering per context of a finished run
  "$py" - "$out/runs/$1" <<'EOF'
import json, sys, pathlib
(path,) = pathlib.Path(sys.argv[1]).glob("*/results.json")
r = json.loads(path.read_text())
print(r["timing"]["provo"]["requests_seconds"] / r["metrics"]["provo"]["tvd"]["n"])
EOF
}

step env 60 bash -c "nvidia-smi; $py -c 'import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name(0))'"
step pytest-graphs 120 "$py" -m pytest -q -p no:cacheprovider tests/test_static_pass.py
step provo-bf16-200 240 "${provo[@]}" --limit "$limit" --output-dir "$out/runs/gpu-bf16" --model-args dtype=bfloat16
rate=$(rate_of gpu-bf16 2>/dev/null || echo 1)
# The same contexts with every trie level's passes replayed as CUDA graphs; the faster capture runs the steps after.
capture=off
step provo-graphs-200 180 "${provo[@]}" --limit "$limit" --output-dir "$out/runs/gpu-bf16-graphs" \
  --model-args dtype=bfloat16,pass_capture=graphs
if graphs_rate=$(rate_of gpu-bf16-graphs 2>/dev/null); then
  echo "## 200 contexts: $rate s/context eager, $graphs_rate s/context as CUDA graphs"
  if "$py" -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$graphs_rate" "$rate"; then
    capture=graphs rate=$graphs_rate
  fi
fi
echo "## pass capture for the steps after: $capture"
# Leave SUITE_RESERVE seconds for the steps after the full run; the full corpus is 2,687 contexts.
reserve=${SUITE_RESERVE:-360}
[ "$quick" = 1 ] && reserve=${SUITE_RESERVE:-30}
full=$("$py" -c "import sys; r, t = float(sys.argv[1]), float(sys.argv[2]); print(max(0, min(2687, int(t / max(r, 1e-3)))))" "$rate" "$(( $(left) - reserve - 20 ))")
[ "$quick" = 1 ] && full=$((limit * 2))
echo "## provo bf16 rate $rate s/context: full run on $full contexts"
# Contexts answered together and rows per pass: each group's deep trie levels are a pass each, whatever their width,
# so on a GPU (host-bound) fewer, wider groups mean fewer passes. Timed on the first SWEEP_LIMIT contexts; the full
# run below uses the fastest.
sweep_limit=${SWEEP_LIMIT:-512}
[ "$quick" = 1 ] && sweep_limit=$((limit * 2))
best_args="dtype=bfloat16,pass_capture=$capture"
best_rows=auto
if [[ " ${SUITE_SKIP:-} " != *" sweep "* ]]; then
  best_rate=""
  for shape in ${SUITE_SWEEP:-64x1024 256x4096 512x8192}; do
    contexts=${shape%x*} rows=${shape#*x}
    step "sweep-$shape" $(( $(left) < 120 ? $(left) : 120 )) "${provo[@]}" --limit "$sweep_limit" \
      --output-dir "$out/runs/sweep-$shape" --model-args "dtype=bfloat16,contexts_per_pass=$contexts,pass_capture=$capture" --batch-size "$rows"
    r=$(rate_of "sweep-$shape" 2>/dev/null) || continue
    echo "## sweep $shape: $r s/context"
    if [ -z "$best_rate" ] || "$py" -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$r" "$best_rate"; then
      best_rate=$r best_args="dtype=bfloat16,contexts_per_pass=$contexts,pass_capture=$capture" best_rows=$rows rate=$r
    fi
  done
  echo "## fastest: --model-args $best_args --batch-size $best_rows"
  full=$("$py" -c "import sys; r, t = float(sys.argv[1]), float(sys.argv[2]); print(max(0, min(2687, int(t / max(r, 1e-3)))))" "$rate" "$(( $(left) - reserve - 20 ))")
  [ "$quick" = 1 ] && full=$((limit * 2))
  echo "## full run on $full contexts"
fi
step provo-bf16-full $(( $(left) - reserve )) "${provo[@]}" --limit "$full" --output-dir "$out/runs/gpu-bf16-full" \
  --model-args "$best_args" --batch-size "$best_rows"
# Where a GPU run's time goes: a profile of the host's Python (the GPU is asynchronous: its time shows as waits).
step profile $(( $(left) < 90 ? $(left) : 90 )) "$py" -m cProfile -o "$out/profile.out" -m harness run --tasks provo \
  --model "hf:$model" --device "$device" --task-args "n_samples=$n" --limit "$sweep_limit" --output-dir "$out/runs/profile" \
  --model-args "$best_args" --batch-size "$best_rows"
[ -f "$out/profile.out" ] && "$py" -c "import pstats, sys; pstats.Stats(sys.argv[1]).sort_stats('tottime').print_stats(30)" \
  "$out/profile.out" >"$out/profile.txt" 2>&1
# The host's share measured apart (each part synchronised, so the parts add up; bench_trie_host.py): passes, draws,
# cache gathers, and the host's own work per open child, in the chosen capture and the GPU's block shape.
step trie-host $(( $(left) < 90 ? $(left) : 90 )) "$py" benchmarks/bench_trie_host.py --device "$device" \
  --dtype bfloat16 --limit "$sweep_limit" --contexts-per-pass 256 --batch-size 4096 --pass-capture "$capture" \
  --json "$out/trie_host.json"
stat="(plain_generate or determinism or exact_distribution_on_smollm2 or grouping or bulk_counting_on_smollm2) and not tiny"
[ "$quick" = 1 ] || step pytest-bf16 $(( $(left) < 90 ? $(left) : 90 )) env HARNESS_TEST_DEVICE=cuda HARNESS_TEST_DTYPE=bfloat16 \
  "$py" -m pytest -q -p no:cacheprovider tests/test_word_sampler.py tests/test_generator.py tests/test_word_distribution.py tests/test_word_boundaries.py -k "$stat"
# The trie of the first contexts recorded with the model, replayed through 1B- and 8B-class models of every family
# served (random weights; docs/word-sampling.md, "Any family, any size: replaying a recorded trie").
step trie-record $(( $(left) < 60 ? $(left) : 60 )) "$py" benchmarks/bench_trie_replay.py record --model "$model" \
  --device "$device" --limit "$limit" --out "$out/trie_trace.json"
# The trie attention's two layouts on the recorded trie at SmolLM2's shape: runs of contexts (a CPU's) against all
# rows at once (a GPU's default), with their times per position.
for layout in runs rows; do
  step "trie-layout-$layout" $(( $(left) < 60 ? $(left) : 60 )) "$py" benchmarks/bench_trie_replay.py replay "$out/trie_trace.json" \
    --size 135m --families llama --groups 2 --device "$device" --dtype bfloat16 --prefix-layout "$layout" \
    --json "$out/trie_layout_$layout.json"
done
step trie-graphs $(( $(left) < 60 ? $(left) : 60 )) "$py" benchmarks/bench_trie_replay.py replay "$out/trie_trace.json" \
  --size 135m --families llama --groups 2 --device "$device" --dtype bfloat16 --pass-capture graphs \
  --json "$out/trie_graphs.json"
step trie-replay-1b $(( $(left) < 180 ? $(left) : 180 )) "$py" benchmarks/bench_trie_replay.py replay "$out/trie_trace.json" \
  --size 1b --groups 2 --device "$device" --dtype bfloat16 --pass-capture "$capture" --json "$out/trie_replay_1b.json"
step trie-replay-8b $(( $(left) < 120 ? $(left) : 120 )) "$py" benchmarks/bench_trie_replay.py replay "$out/trie_trace.json" \
  --size 8b --groups 1 --device "$device" --dtype bfloat16 --families llama,qwen2 --pass-capture "$capture" \
  --json "$out/trie_replay_8b.json"
step bench-generate-bf16 $(( $(left) < 150 ? $(left) : 150 )) "$py" benchmarks/bench_generate.py --model "$model" --device "$device" \
  --dtype bfloat16 --limit "$gen" --n 10 --max-new-tokens "$tokens" --baseline-limit "$gen"
step provo-fp32-200 $(( $(left) < 60 ? $(left) : 60 )) "${provo[@]}" --limit "$limit" --output-dir "$out/runs/gpu-fp32"
[ "$quick" = 1 ] && fp32_full=(--limit "$full") || fp32_full=()
step provo-fp32-full $(( $(left) - 60 )) "${provo[@]}" "${fp32_full[@]}" --output-dir "$out/runs/gpu-fp32-full"
step bench-word-sampler-bf16 $(( $(left) < 90 ? $(left) : 90 )) "$py" benchmarks/bench_word_sampler.py --model "$model" --device "$device" \
  --dtype bfloat16 --contexts "$wsctx" --n "$n" --generate-contexts "$wsctx" --lockstep --vllm
step cuda_vs_cpu $(( $(left) < 60 ? $(left) : 60 )) "$py" benchmarks/check_cuda_matches_cpu.py --model "$model" --contexts "$ctx"
echo "## suite done in $((SECONDS - start)) s"

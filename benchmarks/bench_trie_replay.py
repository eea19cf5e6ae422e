"""Replay a real Provo run's trie through a model of any family and size: time per position, the matrix-product
floor, and the projected full Provo time.

Why a replay: the packaged SmolLM2-135M is the only real model here, but the time of a forward pass depends on the
architecture and the shapes of the pass, not on the weights. So a real run records the shape of every trie it grew
(``TrieWordSampler.trace``: the contexts' lengths, which context's pass serves which, and per level every node's
parent row, request and sample count), and the same passes are replayed, with random tokens, through a model built
from a config (random weights) of any family at any size. The replay runs the sampler's own code: the contexts'
passes (``_encode_contexts``), every level's passes (``_run_level``, the shared-prefix attention, the same row
slicing) and the draws on the device (``draw_counts`` with each node's recorded sample count); what it leaves out is
the host's decoding of the drawn tokens into words, which does not depend on the model.

Reported per family and size: the positions evaluated (context tokens plus trie rows), the time, microseconds per
position, the matrix-product floor (the pass's multiply-adds over the device's measured dense matmul rate) and the
time over the floor, and the full Provo time projected over the 1,056,571 positions a full run ran.

    # 1. record (the packaged model, fp32 on CPU; about 90 s for 128 contexts on 2 cores)
    .venv/bin/python benchmarks/bench_trie_replay.py record --limit 128 --data-dir ../shared/data
    # 2. replay through families and sizes (135m: SmolLM2-135M's shape, 1b: Llama-3.2-1B's, 8b: Llama-3-8B's)
    .venv/bin/python benchmarks/bench_trie_replay.py replay runs/trie_trace.json --size 135m --families llama,gpt2
    .venv/bin/python benchmarks/bench_trie_replay.py replay runs/trie_trace.json --size 1b --device cuda \\
        --dtype bfloat16
    # 3. the operations (kernel launches on a GPU) per pass of each layout of the trie attention, on a CPU
    .venv/bin/python benchmarks/bench_trie_replay.py replay runs/trie_trace.json --families llama --groups 1 \\
        --count-ops --prefix-layout rows
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.bench_model_families import FAMILIES, SIZES, config_for  # noqa: E402
from harness.plugins.hf.trie.prefix_rows import PREFIX_LAYOUTS  # noqa: E402
from harness.plugins.hf.trie.static_pass import PASS_CAPTURES  # noqa: E402

#: Positions a full Provo run of SmolLM2-135M-Instruct ran through the model (n = 1,000, exact mode: context tokens of
#: the passes that encoded them plus every trie node; ``benchmarks/count_positions.py`` on a finished run, LOG.md):
#: the projection's count. Projecting by positions, not by contexts, keeps a sample of short or long contexts from
#: skewing it.
PROVO_POSITIONS = 1_056_571


def record(args: argparse.Namespace) -> int:
    """Run the ``provo`` task's first ``--limit`` contexts with the packaged model, recording every trie."""
    from harness.models import ModelSpec
    from harness.plugins.hf.trie.word_sampler import TrieWordSampler
    from harness.run.options import RunOptions
    from harness.run.runner import run

    traces: list[dict[str, Any]] = []
    TrieWordSampler.trace = traces
    model_args = {"contexts_per_pass": str(args.contexts_per_pass)} if args.contexts_per_pass else {}
    spec = ModelSpec("hf", args.model, args=model_args, device=args.device)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        run(RunOptions(tasks=["provo"], model=spec, limit=args.limit, output_dir=Path(tmp), data_dir=args.data_dir))
    seconds = time.perf_counter() - started
    TrieWordSampler.trace = None
    n_contexts = sum(len(group["contexts"]) for group in traces)
    summary = {"model": args.model, "device": args.device, "contexts": n_contexts, "groups": len(traces),
               "seconds_of_the_real_run": round(seconds, 1), "groups_data": traces}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary))
    positions = sum(_positions(group) for group in traces)
    print(f"recorded {n_contexts} contexts in {len(traces)} groups, {positions} positions, {seconds:.1f} s: {args.out}")
    return 0


def _positions(group: dict[str, Any]) -> int:
    """Positions a group evaluates: the tokens of the contexts' passes, and one per trie node run."""
    context_tokens = sum(group["contexts"][carrier] for carrier, _ in group["carriers"])
    return context_tokens + sum(len(level["parents"]) for level in group["levels"])


def _multiply_adds(model: Any, group: dict[str, Any]) -> float:
    """Multiply-adds of a group's passes: every position through the non-embedding weights, plus the output layer
    at each trie row and each context's last position (attention's own products are small at Provo's lengths and
    left out, so the floor is a lower bound)."""
    embedding = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    total = sum(p.numel() for p in model.parameters())  # a tied head is the embedding's tensor, counted once
    body = total - embedding.numel() - (0 if head is embedding else head.numel())
    position_table = getattr(getattr(model, "transformer", None), "wpe", None)  # GPT-2's learned positions
    if position_table is not None:
        body -= position_table.weight.numel()
    params, head_params = body, head.numel()
    rows = sum(len(level["parents"]) for level in group["levels"]) + len(group["contexts"])
    return float(params) * _positions(group) + float(head_params) * rows


def matmul_rate(device: torch.device, dtype: torch.dtype, size: int = 2048) -> float:
    """The device's dense matrix-product rate in multiply-adds per second (best of 5, ``size`` cubed)."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(6):
        _sync(device)
        t0 = time.perf_counter()
        torch.mm(a, b)
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return size**3 / best


#: Operations that only make a view or an empty tensor: no kernel runs for them on a GPU.
_NO_KERNEL = frozenset(
    {
        *("view", "_unsafe_view", "_reshape_alias", "permute", "transpose", "t", "expand", "slice", "select"),
        *("unsqueeze", "squeeze", "alias", "detach", "as_strided", "split", "split_with_sizes", "unbind"),
        *("lift_fresh", "empty", "empty_like", "new_empty", "empty_strided", "_local_scalar_dense", "is_same_size"),
        *("sym_size", "sym_stride", "sym_numel"),
    }
)


class OpCounter(TorchDispatchMode):
    """Counts the operations that reach a kernel (views and empty allocations left out), over the whole replay: the
    context passes, the level passes and the draws (``ops_per_pass`` divides them by the level passes). On a GPU
    each is a kernel launch, which is what a pass of a small model costs there (docs/word-sampling.md, "Where a GPU
    run's time goes"). Counted on a CPU it approximates a GPU's count: a cast that a bf16 model makes is a no-op in
    fp32, and the draws count their tokens on the host there.

    With ``--pass-capture static`` the operations inside each fixed-shape forward pass (what a CUDA graph replays
    with one launch) are counted apart (``inside``), so ``ops`` is what a GPU still launches one by one."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.inside = 0
        self.in_pass = False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func.overloadpacket.__name__ not in _NO_KERNEL:
            if self.in_pass:
                self.inside += 1
            else:
                self.ops += 1
        return func(*args, **(kwargs or {}))

    def apart(self, static: Any) -> None:
        """Count the operations of ``static``'s forward passes in ``inside``, not ``ops``."""
        forward = static._pass

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.in_pass = True
            try:
                return forward(*args, **kwargs)
            finally:
                self.in_pass = False

        static._pass = counted


def _count_passes(sampler: Any) -> list[int]:
    """A one-element counter of the level passes ``sampler`` runs from now on (its ``_step`` calls, or its
    fixed-shape pass's ``run`` calls)."""
    count = [0]
    owner = sampler._static if sampler._static is not None else sampler
    name = "run" if sampler._static is not None else "_step"
    step = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return step(*args, **kwargs)

    setattr(owner, name, counted)
    return count


def _compile_passes(sampler: Any) -> dict[str, Any]:
    """Compile ``sampler``'s fixed-shape pass with ``torch.compile`` (inductor, one graph per row bucket); the
    returned dict fills in, as the replay runs, the buckets compiled and the seconds their first calls took (the
    compile time, less one eager pass each)."""
    static = sampler._static
    if static is None:
        raise SystemExit("--compile needs --pass-capture static")
    compiled = torch.compile(static._pass, fullgraph=True, dynamic=False)
    report: dict[str, Any] = {"compiled_buckets": 0, "first_call_seconds": 0.0}
    seen: set[tuple[int, int, float]] = set()

    def run(bucket: tuple[int, int], temperature: float) -> torch.Tensor:
        static._views(bucket)  # made outside the compiled function, as before a CUDA graph's recording
        if (*bucket, temperature) in seen:
            return compiled(bucket, temperature)
        seen.add((*bucket, temperature))
        started = time.perf_counter()
        out = compiled(bucket, temperature)
        seconds = time.perf_counter() - started
        report["compiled_buckets"] += 1
        report["first_call_seconds"] = round(report["first_call_seconds"] + seconds, 2)
        print(f"compiled bucket {bucket} at temperature {temperature}: first call {seconds:.1f} s", flush=True)
        return out

    static.head.reserve(static.max_rows)
    static._pass = run
    return report


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def replay_group(sampler: Any, group: dict[str, Any], vocab: int, rng: np.random.Generator) -> None:
    """One recorded group's passes through ``sampler``'s model, in the recorded order, with random tokens."""
    from harness.plugins.hf.shared.draws import draw_counts
    from harness.plugins.hf.trie.nodes import PassChunk, TrieNode

    contexts: list[list[int]] = [[] for _ in group["contexts"]]
    for carrier, served in group["carriers"]:
        ids = rng.integers(100, vocab, group["contexts"][carrier]).tolist()
        for k in served:
            contexts[k] = ids[: group["contexts"][k]]
    probs, prefixes, token_bytes = sampler._encode_contexts(contexts, 1.0)
    sampler.begin_group(prefixes, group.get("max_new_tokens", 32))
    draw_counts(probs, [rng.random(n) for n in group["n"]])
    chunks = [PassChunk(None, 0, len(contexts))]
    for level in group["levels"]:
        depth = level["depth"]
        tokens = rng.integers(100, vocab, len(level["parents"])).tolist()
        nodes = [
            TrieNode(tokens=(0,) * (depth - 1) + (token,), count=count, parent_row=parent, text="", req=req)
            for token, parent, req, count in zip(tokens, level["parents"], level["reqs"], level["counts"], strict=True)
        ]
        next_chunks = []
        for chunk, level_probs in sampler._run_level(nodes, chunks, token_bytes * depth, 1.0, prefixes):
            draw_counts(level_probs, [rng.random(n.count) for n in nodes[chunk.start : chunk.end]])
            next_chunks.append(chunk)
        chunks = next_chunks


class _NoTokenizer:
    """The sampler reads only the end-of-sequence ids from a tokenizer outside ``sample_many``."""

    eos_token_id = 0
    pad_token_id = 0


def replay(args: argparse.Namespace) -> int:
    from transformers import AutoModelForCausalLM

    from harness.plugins.hf.trie.word_sampler import TrieWordSampler

    trace = json.loads(args.trace.read_text())
    groups = trace["groups_data"][: args.groups] if args.groups else trace["groups_data"]
    n_contexts = sum(len(g["contexts"]) for g in groups)
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    rate = matmul_rate(device, dtype)
    print(f"trace: {n_contexts} contexts in {len(groups)} groups ({trace['model']}); device {device}, {args.dtype}; "
          f"dense matmul {rate / 1e9:.1f} G multiply-adds/s", flush=True)  # fmt: skip
    rows = []
    for family in args.families.split(","):
        torch.manual_seed(0)
        try:
            with device:
                model = AutoModelForCausalLM.from_config(config_for(family, args.size), dtype=dtype).eval()
            sampler = TrieWordSampler(
                model,
                _NoTokenizer(),
                batch_size=args.batch_size,
                device=device,
                prefix_layout=args.prefix_layout,
                pass_capture=args.pass_capture,
            )
        except Exception as exc:  # a family this transformers cannot build: reported, the others still run
            rows.append({"family": family, "error": f"{type(exc).__name__}: {exc}"[:200]})
            print(json.dumps(rows[-1]), flush=True)
            continue
        vocab = model.config.vocab_size
        with torch.inference_mode():
            # Warm-up (kernels, allocator, the first pass's one-off costs): the first group's contexts and first level.
            replay_group(sampler, {**groups[0], "levels": groups[0]["levels"][:1]}, vocab, np.random.default_rng(1))
            _sync(device)
            compiled = _compile_passes(sampler) if args.compile else None
            counter = OpCounter() if args.count_ops else None
            if counter is not None and sampler._static is not None:
                counter.apart(sampler._static)
            passes = _count_passes(sampler)
            started = time.perf_counter()
            with counter if counter is not None else contextlib.nullcontext():
                for k, group in enumerate(groups):
                    replay_group(sampler, group, vocab, np.random.default_rng(k))
                _sync(device)
            seconds = time.perf_counter() - started
        positions = sum(_positions(g) for g in groups)
        floor = sum(_multiply_adds(model, g) for g in groups) / rate
        row = {
            "family": family,
            "size": args.size,
            "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
            "fast_path": sampler.shared_prefix,
            "prefix_layout": sampler.prefix_layout,
            "pass_capture": sampler.pass_capture,
            **({"graphs_recorded": sampler._static.recorded} if sampler._static is not None else {}),
            **(compiled if compiled is not None else {}),
            "passes": passes[0],
            **({"ops_per_pass": round(counter.ops / max(1, passes[0]))} if counter is not None else {}),
            **({"ops_inside_pass": round(counter.inside / max(1, passes[0]))} if counter and counter.inside else {}),
            "positions": positions,
            "seconds": round(seconds, 2),
            "us_per_position": round(seconds * 1e6 / positions, 1),
            "floor_seconds": round(floor, 2),
            "over_floor": round(seconds / floor, 2),
            "projected_full_provo_s": round(seconds / positions * PROVO_POSITIONS, 1),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
        del model, sampler
        if device.type == "cuda":
            torch.cuda.empty_cache()
    print(f"\n{'family':<12} {'params':>8} {'fast':>5} {'us/position':>12} {'x floor':>8} {'full Provo':>11} ops/pass")
    for r in rows:
        if "error" in r:
            print(f"{r['family']:<12} {r['error']}")
            continue
        print(f"{r['family']:<12} {r['params_m']:>7}M {'yes' if r['fast_path'] else 'no':>5} "
              f"{r['us_per_position']:>12} {r['over_floor']:>8} {r['projected_full_provo_s']:>10}s "
              f"{r.get('ops_per_pass', '-')}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, indent=1))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the provo task with the packaged model and record its tries")
    rec.add_argument("--limit", type=int, default=128, help="Provo contexts to run (default 128)")
    rec.add_argument("--model", default="smollm2-135m")
    rec.add_argument("--device", default="cpu")
    rec.add_argument("--data-dir", default=None)
    rec.add_argument("--out", type=Path, default=Path("runs/trie_trace.json"))
    rec.add_argument("--contexts-per-pass", type=int, default=None, help="block size (default: the device's auto)")
    rep = sub.add_parser("replay", help="replay a recorded trace through models built from configs")
    rep.add_argument("trace", type=Path)
    rep.add_argument("--size", choices=sorted(SIZES), default="135m")
    rep.add_argument("--families", default=",".join(f for f in FAMILIES if f != "falcon"))
    rep.add_argument("--groups", type=int, default=0, help="replay only the first N groups (0: all)")
    rep.add_argument("--batch-size", type=int, default=None, help="rows per pass (default: the adapter's auto)")
    rep.add_argument("--device", default="cpu")
    rep.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    rep.add_argument(
        "--prefix-layout",
        choices=("auto", *PREFIX_LAYOUTS),
        default="auto",
        help="the trie attention's layout (auto: runs on a CPU, rows on a GPU)",
    )
    rep.add_argument(
        "--pass-capture",
        choices=PASS_CAPTURES,
        default="off",
        help="run each level's pass at fixed shapes (static), replayed as CUDA graphs (graphs, GPU only)",
    )
    rep.add_argument(
        "--compile",
        action="store_true",
        help="with --pass-capture static: compile each row bucket's pass with torch.compile (inductor, fixed shapes) "
        "and report the compile time apart",
    )
    rep.add_argument(
        "--count-ops",
        action="store_true",
        help="also count the operations dispatched per level pass, context passes and draws included (each a kernel "
        "launch on a GPU; slower)",
    )
    rep.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.command == "record":
        return record(args)
    if args.batch_size is None:
        from harness.plugins.hf.loading.options import AUTO_STEP_ROWS

        args.batch_size = AUTO_STEP_ROWS["cuda" if args.device.startswith("cuda") else "cpu"]
    return replay(args)


if __name__ == "__main__":
    sys.exit(main())

"""Time of one trie pass per model family, on the shared-prefix path and on the plain per-row cache, at a given size.

Why synthetic passes on random weights: the time of a forward pass does not depend on the weights, only on the
architecture, its size and the shapes of the pass, and the packaged model is the only real one here. Each family is
built from its config at about the same size (``--size``: 135m is SmolLM2-135M's shape, 1b Llama-3.2-1B's), and one
trie level is replayed on it: ``--rows`` rows continuing a ``--context``-token context by ``--suffix`` tokens (a
Provo level: ~40 context tokens, rows one to a few tokens past it). Reported per family: milliseconds per pass on
each path, milliseconds per evaluated position (row) on the fast path, and its ratio to llama's (SmolLM2's family)
at the same size. Families the shared-prefix attention does not serve (``harness.plugins.hf.shared.prefix_attention``)
show only the plain path.

    .venv/bin/python benchmarks/bench_model_families.py --size 135m --rows 256
    .venv/bin/python benchmarks/bench_model_families.py --size 1b --rows 512 --device cuda --dtype bfloat16
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.plugins.hf.shared import prefix_attention as pa  # noqa: E402

#: hidden, layers, heads, kv heads, intermediate, vocabulary.
SIZES = {
    "135m": (576, 30, 9, 3, 1536, 49152),  # SmolLM2-135M
    "1b": (2048, 16, 32, 8, 8192, 128256),  # Llama-3.2-1B
    "8b": (4096, 32, 32, 8, 14336, 128256),  # Llama-3-8B
}
FAMILIES = ("llama", "gpt2", "gpt_neox", "opt", "phi3", "olmo2", "gemma3_text", "qwen2", "falcon", "gemma2")


def config_for(family: str, size: str) -> Any:
    from transformers import AutoConfig

    hidden, layers, heads, kv, inter, vocab = SIZES[size]
    head_dim = hidden // heads
    # SmolLM2-135M and Llama-3.2-1B share their embedding with the output layer; Llama-3-8B does not.
    tied = size != "8b"
    common: dict[str, Any] = {
        "vocab_size": vocab, "hidden_size": hidden, "num_hidden_layers": layers, "tie_word_embeddings": tied
    }  # fmt: skip
    by_family: dict[str, dict[str, Any]] = {
        "llama": {**common, "num_attention_heads": heads, "num_key_value_heads": kv, "intermediate_size": inter},
        "qwen2": {**common, "num_attention_heads": heads, "num_key_value_heads": kv, "intermediate_size": inter},
        "olmo2": {**common, "num_attention_heads": heads, "num_key_value_heads": kv, "intermediate_size": inter},
        "phi3": {**common, "num_attention_heads": heads, "num_key_value_heads": kv, "intermediate_size": inter},
        "gemma3_text": {
            **common,
            "num_attention_heads": heads,
            "num_key_value_heads": kv,
            "intermediate_size": inter,
            "head_dim": head_dim,
        },
        "gemma2": {
            **common,
            "num_attention_heads": heads,
            "num_key_value_heads": kv,
            "intermediate_size": inter,
            "head_dim": head_dim,
        },
        "gpt_neox": {**common, "num_attention_heads": heads, "intermediate_size": inter},
        "opt": {**common, "num_attention_heads": heads, "ffn_dim": inter, "word_embed_proj_dim": hidden},
        "gpt2": {
            "vocab_size": vocab, "n_embd": hidden, "n_layer": layers, "n_head": heads, "n_inner": inter,
            "tie_word_embeddings": tied,
        },  # fmt: skip
        "falcon": {**common, "num_attention_heads": heads, "num_kv_heads": kv, "new_decoder_architecture": True},
    }
    return AutoConfig.for_model(family, **by_family[family])


def timed(step: Any, repeats: int, device: torch.device) -> float:
    """Median milliseconds of ``step()`` over ``repeats`` runs, after one warm-up."""
    step()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1000)
    return sorted(times)[len(times) // 2]


def bench(family: str, args: argparse.Namespace, device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
    from transformers import AutoModelForCausalLM, DynamicCache

    torch.manual_seed(0)
    attn = "eager" if family == "gemma2" else "sdpa"
    with device:  # initialised where it runs: a 1B model's random init on the host took minutes of a GPU lease
        model = AutoModelForCausalLM.from_config(config_for(family, args.size), attn_implementation=attn, dtype=dtype)
    model = model.eval()
    vocab = model.config.vocab_size
    context = torch.randint(100, vocab, (1, args.context), device=device)
    suffix = torch.randint(100, vocab, (args.rows, args.suffix), device=device)
    out: dict[str, Any] = {"family": family, "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)}
    with torch.inference_mode():
        ctx = model(context, past_key_values=DynamicCache(config=model.config), use_cache=True).past_key_values

        def plain() -> None:
            # The plain path: every row has its own copy of the context's cache, extended by its suffix.
            cache = DynamicCache(config=model.config)
            for layer, src in enumerate(ctx.layers):
                cache.update(
                    src.keys.expand(args.rows, -1, -1, -1).contiguous(),
                    src.values.expand(args.rows, -1, -1, -1).contiguous(),
                    layer,
                )
            for step in range(args.suffix):
                cache = model(suffix[:, step : step + 1], past_key_values=cache, use_cache=True).past_key_values

        out["plain_ms"] = timed(plain, args.repeats, device) / args.suffix
        if pa.enable(model):
            prefix = pa.SharedPrefix.from_cache(ctx)
            layout = pa.PrefixBatch([prefix], [(0, 0, args.rows)])

            def fast() -> None:
                cache = DynamicCache(config=model.config)
                for step in range(args.suffix):
                    positions = torch.full((args.rows, 1), args.context + step, device=device)
                    cache = model(
                        suffix[:, step : step + 1],
                        past_key_values=cache,
                        use_cache=True,
                        position_ids=positions,
                        shared_prefix=layout,
                    ).past_key_values

            out["fast_ms"] = timed(fast, args.repeats, device) / args.suffix
            out["fast_us_per_position"] = round(out["fast_ms"] * 1000 / args.rows, 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="135m")
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--context", type=int, default=40)
    parser.add_argument("--suffix", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    rows = []
    for family in args.families.split(","):
        try:
            row = bench(family, args, device, dtype)
        except Exception as exc:  # a family this transformers cannot build: reported, the others still run
            row = {"family": family, "error": f"{type(exc).__name__}: {exc}"[:200]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    base = next((r.get("fast_ms") for r in rows if r["family"] == "llama"), None)
    print(f"\n{'family':<12} {'params':>8} {'plain ms':>9} {'fast ms':>9} {'us/position':>12} {'vs llama':>9}")
    for r in rows:
        if "error" in r:
            print(f"{r['family']:<12} {r['error']}")
            continue
        fast = r.get("fast_ms")
        ratio = f"{fast / base:.2f}x" if fast and base else "-"
        print(
            f"{r['family']:<12} {r['params_m']:>7}M {r['plain_ms']:>9.1f} {fast or float('nan'):>9.1f} "
            f"{r.get('fast_us_per_position', float('nan')):>12} {ratio:>9}"
        )
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

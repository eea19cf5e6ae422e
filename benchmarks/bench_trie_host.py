"""Where a trie sampler run's time goes between the model and the host: the model's passes, the draws, and the
host's handling of the drawn children (decoding, word decisions, the next level's bookkeeping: everything else).

On a GPU the passes are fast and the host's work per drawn child is what is left, so this is the number to watch
there; on a CPU it is a few percent of a run. It answers the first Provo contexts (as ``harness run`` does: exact
mode, n = 1,000, in blocks of ``--contexts-per-pass``) with the sampler's methods wrapped by timers, and prints the
seconds of each part, the open children (trie nodes run through the model) and the host's microseconds per open
child, of which ``children_s`` is the deciding of drawn children one by one. The parents' cache rows gathered per
pass (``cache gathers``) are copies on a CPU and the device's own kernels on a GPU, so they are counted apart.
``--no-fold`` decodes every drawn child on the host, as before bulk counting (``plugins/hf/word_boundaries``);
``--classify`` does the same and counts the drawn children that bulk counting would have folded (a space-initial
token after a prefix whose word a space closes).

    .venv/bin/python benchmarks/bench_trie_host.py --data-dir ../shared/data --limit 64
    .venv/bin/python benchmarks/bench_trie_host.py --data-dir ../shared/data --limit 64 --no-fold
    .venv/bin/python benchmarks/bench_trie_host.py --data-dir ../shared/data --limit 64 --classify
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.plugins.hf.loading.model import load_hf_model  # noqa: E402
from harness.plugins.hf.shared import draws  # noqa: E402
from harness.plugins.hf.trie import word_sampler  # noqa: E402
from harness.requests import SampleWordsRequest  # noqa: E402


def _timed(owner: Any, name: str, key: str, seconds: dict[str, float], sync: Callable[[], None]) -> None:
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            sync()
            seconds[key] += time.perf_counter() - started

    setattr(owner, name, wrapper)


def _classify(sampler: Any) -> dict[str, int]:
    """Counts, as ``sampler`` decodes every child, the drawn children and those bulk counting would fold: the
    criterion of ``TrieWordSampler._draw`` (its own ``_word_on_space`` and ``_space_mask``) applied one by one."""
    from harness.plugins.hf.shared.word_boundaries import word_on_space

    counts = {"drawn_children": 0, "foldable_children": 0}
    child = sampler._child

    def classified(parent: Any, row: int, token: int, count: int, decoder: Any, request: Any) -> Any:
        counts["drawn_children"] += 1
        mask = sampler._space_mask(sampler.model.config.vocab_size)
        if parent.tokens and bool(mask[token]) and word_on_space(parent.text, request.mode) is not None:
            counts["foldable_children"] += 1
        return child(parent, row, token, count, decoder, request)

    sampler._child = classified
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="folder holding provo/ (default $HARNESS_DATA_DIR)")
    parser.add_argument("--limit", type=int, default=64, help="first N Provo contexts (default 64)")
    parser.add_argument("--contexts-per-pass", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=1024, help="rows per pass (default 1024)")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--pass-capture", default=None, help="off, static or graphs (default: the sampler's own)")
    parser.add_argument("--no-fold", action="store_true", help="decode every drawn child on the host")
    parser.add_argument("--classify", action="store_true", help="--no-fold, counting the children it would fold")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    import os

    root = args.data_dir or Path(os.environ.get("HARNESS_DATA_DIR", ""))
    positions = [json.loads(line) for line in (root / "provo" / "provo_positions.jsonl").open()][: args.limit]
    loaded = load_hf_model(args.model, device=args.device, dtype=args.dtype)
    device = loaded.device

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    seconds: dict[str, float] = defaultdict(float)
    cls = word_sampler.TrieWordSampler
    _timed(cls, "_step", "model passes", seconds, sync)
    if hasattr(word_sampler, "StaticPass"):  # a level's passes at fixed shapes (pass_capture static or graphs)
        _timed(word_sampler.StaticPass, "run", "model passes", seconds, sync)
        _timed(word_sampler.StaticPass, "take", "model passes", seconds, sync)
    _timed(cls, "_encode_contexts", "context passes", seconds, sync)
    # The draws as each version of the code makes them, so the same script measures older commits: one call per
    # pass before bulk counting (draw_counts), then with it (draw_counts_folded), now launched and collected.
    for name in ("draw_counts", "draw_counts_folded", "launch_flat"):
        if hasattr(word_sampler, name):
            _timed(word_sampler, name, "draws", seconds, sync)
    if hasattr(draws, "PendingCounts"):
        _timed(draws.PendingCounts, "collect", "draws", seconds, sync)
    if hasattr(cls, "_vocabulary"):
        _timed(cls, "_vocabulary", "vocabulary (once)", seconds, sync)
    # The parents' cache rows gathered for each pass: copies on a CPU, the device's own kernels on a GPU, so apart
    # from the host's work. And, within the host's work, the drawn children decided one by one (part of host_s).
    _timed(word_sampler, "gather_rows", "cache gathers", seconds, sync)
    within_host: dict[str, float] = defaultdict(float)
    if hasattr(cls, "_children"):
        _timed(cls, "_children", "children_s", within_host, sync)
    can_fold = hasattr(word_sampler, "draw_counts_folded") or hasattr(word_sampler, "launch_flat")
    fold: dict[str, Any] = {"fold_word_ends": not (args.no_fold or args.classify)} if can_fold else {}
    capture: dict[str, Any] = {"pass_capture": args.pass_capture} if args.pass_capture else {}
    sampler = cls(loaded.model, loaded.tokenizer, batch_size=args.batch_size, device=device, **fold, **capture)
    children = _classify(sampler) if args.classify else None
    requests = [
        SampleWordsRequest(context=p["context"], n=1000, seed=k, mode="exact", max_new_tokens=32)
        for k, p in enumerate(positions)
    ]
    evaluated = 0
    started = time.perf_counter()
    for first in range(0, len(requests), args.contexts_per_pass):
        for response in sampler.sample_many(requests[first : first + args.contexts_per_pass]):
            evaluated += response.tokens_evaluated
    sync()
    total = time.perf_counter() - started
    host = total - sum(seconds.values())
    contexts_tokens = sum(len(loaded.tokenizer(r.context)["input_ids"]) for r in requests)
    open_children = evaluated - contexts_tokens
    result = {
        "model": args.model, "device": str(device), "dtype": args.dtype, "contexts": len(requests),
        "pass_capture": getattr(sampler, "pass_capture", "off"),
        "fold": bool(fold.get("fold_word_ends")), "total_s": round(total, 2),
        **{k: round(v, 3) for k, v in seconds.items()}, "host_s": round(host, 3), "open_children": open_children,
        "host_us_per_open_child": round(host * 1e6 / max(1, open_children), 1),
        **{k: round(v, 3) for k, v in within_host.items()},
        "children_us_per_open_child": round(within_host["children_s"] * 1e6 / max(1, open_children), 1),
        **(children or {}),
    }  # fmt: skip
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

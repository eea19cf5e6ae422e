"""Speed of the three variability probes on the human references of ASSET (the human-only part of a run).

For each of the first ``--limit`` ASSET sources the script takes its 10 references, prepares every probe on all
of them (each distinct text tagged / embedded once, in batches) and computes the full pairwise distance matrix among
each source's references for every probe, which is what the variability scorer needs for the human-human (H)
distribution. It prints wall seconds per stage:

* ``load``: loading the spaCy pipeline / embedding model (one text prepared);
* ``tagging``: the syntactic probe's ``prepare`` (spaCy tagger over all distinct references);
* ``lexical prep``: the lexical probe's ``prepare`` (tokens come from the tagging cache; n-gram ids and counts);
* ``embedding``: the semantic probe's ``prepare``;
* ``distances <probe>``: one ``distances(refs, refs)`` call per source.

Example (what the probes' report quotes)::

    python benchmarks/bench_probes.py --limit 200
    python benchmarks/bench_probes.py            # all 2,000 validation sources

Every number printed is measured; nothing is extrapolated.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.scorers.probes import semantic, spacy_docs  # noqa: E402
from harness.scorers.probes.base import Probe  # noqa: E402
from harness.scorers.probes.lexical import NgramProbe  # noqa: E402
from harness.scorers.probes.semantic import EmbeddingProbe  # noqa: E402
from harness.scorers.probes.syntactic import PosNgramProbe  # noqa: E402


def load_references(data_dir: Path, split: str, limit: int | None) -> list[list[str]]:
    path = data_dir / "asset" / f"asset_{split}.jsonl"
    if not path.is_file():
        sys.exit(f"ASSET data not found: {path} (set --data-dir or HARNESS_DATA_DIR)")
    groups = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                groups.append(list(json.loads(line)["references"]))
            if limit is not None and len(groups) >= limit:
                break
    return groups


def main() -> None:
    default_data = os.environ.get("HARNESS_DATA_DIR") or str(REPO.parent / "shared" / "data")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=Path(default_data))
    parser.add_argument("--split", default="valid", choices=["valid", "test"])
    parser.add_argument("--limit", type=int, default=None, help="first N sources (default: all)")
    parser.add_argument("--probes", default="lexical,syntactic,semantic")
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--truncate-tokenizer", default=None)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--embed-batch-size", type=int, default=64)
    parser.add_argument("--tag-batch-size", type=int, default=spacy_docs.DEFAULT_BATCH_SIZE)
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    args = parser.parse_args()

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    groups = load_references(args.data_dir, args.split, args.limit)
    texts = [t for g in groups for t in g]
    names = [p.strip() for p in args.probes.split(",") if p.strip()]
    trunc = {"max_tokens": args.max_tokens, "truncate_tokenizer": args.truncate_tokenizer}
    probes: dict[str, Probe] = {}
    # Syntactic first: its tagging fills the token cache the lexical probe then reuses.
    if "syntactic" in names:
        probes["syntactic"] = PosNgramProbe(batch_size=args.tag_batch_size, **trunc)
    if "lexical" in names:
        probes["lexical"] = NgramProbe(batch_size=args.tag_batch_size, **trunc)
    if "semantic" in names:
        probes["semantic"] = EmbeddingProbe(device=args.device, batch_size=args.embed_batch_size, **trunc)

    print(f"ASSET {args.split}: {len(groups)} sources, {len(texts)} references, {len(set(texts))} distinct")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs visible")
    stages: list[tuple[str, float]] = []

    def timed(label: str, fn: object, *fargs: object) -> None:
        start = time.perf_counter()
        fn(*fargs)  # type: ignore[operator]
        stages.append((label, time.perf_counter() - start))
        print(f"  {label:<24} {stages[-1][1]:8.2f} s", flush=True)

    stage_names = {"syntactic": "tagging", "lexical": "lexical prep", "semantic": "embedding"}
    for name, probe in probes.items():
        timed(f"load {name}", probe.prepare, ["Loading the model."], "en")
        timed(stage_names[name], probe.prepare, texts, "en")

    results: dict[str, dict[str, list[np.ndarray]]] = {}
    for name, probe in probes.items():

        def all_pairs(probe: Probe = probe, name: str = name) -> None:
            out: dict[str, list[np.ndarray]] = {m: [] for m in probe.measures}
            for refs in groups:
                upper = np.triu_indices(len(refs), k=1)
                for measure, matrix in probe.distances(refs, refs, "en").items():
                    out[measure].append(matrix[upper])
            results[name] = out

        timed(f"distances {name}", all_pairs)

    total = sum(s for _, s in stages)
    print(f"  {'total':<24} {total:8.2f} s")
    print(f"counts: {dict(spacy_docs.COUNTS)} {dict(semantic.COUNTS)}")
    print("mean human-human distance (NaN pairs left out):")
    for name, measures in results.items():
        for measure, parts in measures.items():
            values = np.concatenate(parts) if parts else np.empty(0)
            n_nan = int(np.isnan(values).sum())
            mean = float(np.nanmean(values)) if values.size > n_nan else float("nan")
            print(f"  {name:<10} {measure:<8} {mean:.4f}  ({values.size} pairs, {n_nan} NaN)")
    for name, probe in probes.items():
        print(f"{name}: {json.dumps(probe.describe(), default=str)}")


if __name__ == "__main__":
    main()

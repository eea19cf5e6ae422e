"""Is ``--model-args dtype=bfloat16`` the same model, as far as the Provo metrics can tell? (issue: faster next words)

bfloat16 weights and activations make the matrix products about 3x faster on CPUs with AVX512-BF16, but they give
a numerically different model, so this script validates it as a *distribution*, the way the sampler was validated
against ``generate``. Four ``harness run``s of the ``provo`` task on the same contexts: fp32 with seed 0, fp32 with
seed 1, bf16 with seed 0, and a positive control, fp32 at temperature 0.9 with seed 0 (a model that truly differs a
little: the tests must tell it apart, or passing them would mean nothing). Then, context by context:

* a chi-square test of homogeneity between each run and fp32 (seed 1); fp32 (seed 0) against fp32 (seed 1) is the
  reference: under "same distribution" the p-values are uniform, so the share below 0.01
  should be about 1% for both, and a Kolmogorov-Smirnov test of the p-values against the uniform says whether they
  are. (bf16 is compared with the *other* seed: with the same seed both runs consume the same random numbers, which
  makes their samples alike whatever their distributions are, and the test would pass too easily.)
* the TVD between each run's word distribution and fp32 seed 1's, beside fp32 seed 0's (what two samples of the same
  model differ by), with the paired mean difference and its bootstrap interval;
* every metric of the task for the four runs, with the bf16 - fp32 difference beside the seed-to-seed and the
  temperature differences.

Runs go to ``--out-dir``; a finished run is reused (the harness resumes it: nothing is asked again), so the analysis
can be repeated for free. Times are the runs' own records of answering the requests
(``timing.provo.requests_seconds`` of each invocation's results file, summed over a resumed run's invocations: the
model's work, without the load and the scoring); run them on a quiet machine.

Example (what ``docs/word-sampling.md`` reports)::

    python benchmarks/validate_bf16.py --limit 200 --out-dir runs/bf16-validation
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.scoring.stats import homogeneity_pvalue  # noqa: E402

HARNESS = str(Path(sys.executable).parent / "harness")
#: Each configuration: extra ``harness run`` arguments and extra task arguments.
RUNS: dict[str, tuple[list[str], str]] = {
    "fp32-seed0": (["--seed", "0"], ""),
    "fp32-seed1": (["--seed", "1"], ""),
    "bf16-seed0": (["--seed", "0", "--model-args", "dtype=bfloat16"], ""),
    # The positive control: a model that truly differs a little (temperature 0.9), so the tests show their power.
    "fp32-t0.9-seed0": (["--seed", "0"], ",temperature=0.9"),
}


def run(name: str, args: argparse.Namespace) -> None:
    """``harness run`` of one configuration (a finished one resumes with nothing to ask)."""
    out = Path(args.out_dir) / name
    command = [HARNESS, "run", "--tasks", "provo", "--model", f"hf:{args.model}", "--limit", str(args.limit)]
    extra, task_args = RUNS[name]
    command += ["--task-args", f"n_samples={args.n}{task_args}", "--output-dir", str(out), *extra]
    if args.data_dir:
        command += ["--data-dir", args.data_dir]
    result = subprocess.run(command, env={**os.environ, "HARNESS_NO_PROGRESS": "1"}, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")


def read_run(out: Path) -> tuple[dict[str, dict[str, int]], dict[str, Any], float]:
    """Word counts per instance id, the task's metrics and the run's timing, of a finished run folder."""
    (results_path,) = out.glob("*/results.json")
    results = json.loads(results_path.read_text())
    (samples_path,) = sorted(results_path.parent.glob("samples_provo_*.jsonl"))[-1:]
    counts = {}
    for line in samples_path.read_text().splitlines():
        record = json.loads(line)
        counts[str(record["id"])] = {str(w): int(c) for w, c in record["response"]["counts"].items()}
    # Each invocation records its own time; a resumed run's total is their sum (one that found nothing to ask has none).
    seconds = 0.0
    for invocation in results_path.parent.glob("results_*.json"):
        timing = json.loads(invocation.read_text()).get("timing", {}).get("provo", {})
        seconds += float(timing.get("requests_seconds", 0.0))
    return counts, results["metrics"]["provo"], round(seconds, 1)


def tvd(a: dict[str, int], b: dict[str, int]) -> float:
    na, nb = sum(a.values()), sum(b.values())
    return 0.5 * sum(abs(a.get(w, 0) / na - b.get(w, 0) / nb) for w in set(a) | set(b))


def pvalue_summary(pvalues: list[float]) -> dict[str, Any]:
    values = np.array(pvalues)
    return {
        "contexts": len(values),
        "share_below_0.01": float(np.mean(values < 0.01)),
        "share_below_0.05": float(np.mean(values < 0.05)),
        "ks_uniform_pvalue": float(stats.kstest(values, "uniform").pvalue),
    }


def compare_extra(
    extra: dict[str, Path], data: dict[str, tuple[dict[str, dict[str, int]], dict[str, Any], float]], ids: list[str]
) -> dict[str, Any]:
    """Runs made elsewhere, each tested against fp32 seed 1 exactly as bf16 is, on the contexts they share."""
    fp0, fp1 = data["fp32-seed0"][0], data["fp32-seed1"][0]
    out: dict[str, Any] = {}
    for label, folder in extra.items():
        counts, metrics, seconds = read_run(folder)
        shared = [i for i in ids if counts.get(i) and fp0[i] and fp1[i]]
        pvalues = []
        for i in shared:
            p_value, reference = homogeneity_pvalue(counts[i], fp1[i]), homogeneity_pvalue(fp0[i], fp1[i])
            if p_value is not None and reference is not None:
                pvalues.append(p_value)
        diff = np.array([tvd(counts[i], fp1[i]) - tvd(fp0[i], fp1[i]) for i in shared])
        ci = stats.bootstrap((diff,), np.mean, n_resamples=10000, random_state=np.random.default_rng(0))
        entry: dict[str, Any] = {
            "folder": str(folder),
            "contexts": len(shared),
            "requests_seconds": seconds,
            "homogeneity_vs_fp32_seed1": pvalue_summary(pvalues),
            "tvd_minus_fp32_seed0": float(diff.mean()),
            "tvd_minus_fp32_seed0_ci": [float(ci.confidence_interval.low), float(ci.confidence_interval.high)],
            # Metrics are only comparable over the same contexts.
            "metrics_minus_fp32_seed0": {
                name: float(row["value"]) - float(base["value"])
                for name, base in data["fp32-seed0"][1].items()
                if (row := metrics.get(name)) and row.get("value") is not None and base.get("value") is not None
            }
            if len(shared) == len(ids)
            else {},
        }
        out[label] = entry
        h = entry["homogeneity_vs_fp32_seed1"]
        low, high = entry["tvd_minus_fp32_seed0_ci"]
        moved = entry["metrics_minus_fp32_seed0"]
        print(
            f"{label} vs fp32-seed1 ({len(shared)} contexts, {seconds} s answering): "
            f"p<0.01: {h['share_below_0.01']:.3f}  KS vs uniform p = {h['ks_uniform_pvalue']:.3g}; "
            f"TVD minus fp32-seed0's: {entry['tvd_minus_fp32_seed0']:+.4f} [{low:+.4f}, {high:+.4f}]; "
            f"vs fp32-seed0: tvd {moved.get('tvd', float('nan')):+.4f}, "
            f"entropy_model {moved.get('entropy_model', float('nan')):+.4f}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m", help="hf model (default: the packaged smollm2-135m)")
    p.add_argument("--limit", type=int, default=200, help="the first N Provo contexts (default 200)")
    p.add_argument("--n", type=int, default=1000, help="samples per context (default 1000)")
    p.add_argument("--out-dir", default="runs/bf16-validation", help="where the three runs go (reused if finished)")
    p.add_argument("--data-dir", help="data root holding provo/ (default: $HARNESS_DATA_DIR)")
    p.add_argument("--json", help="also write the numbers to this JSON file")
    p.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="also test a finished provo run made elsewhere (another device or dtype, e.g. a GPU's bf16 run of the "
        "same contexts) against fp32 seed 1, like bf16; repeatable",
    )
    args = p.parse_args(argv)
    extra: dict[str, Path] = {}
    for item in args.compare:
        label, sep, folder = item.partition("=")
        if not sep or not label or not Path(folder).is_dir():
            p.error(f"--compare {item!r}: expected LABEL=DIR with an existing run folder")
        extra[label] = Path(folder)

    for name in RUNS:
        run(name, args)
    data = {name: read_run(Path(args.out_dir) / name) for name in RUNS}
    times = {name: data[name][2] for name in RUNS}
    fp1 = data["fp32-seed1"][0]
    ids = sorted(set.intersection(*(set(data[name][0]) for name in RUNS)))
    # Every run against fp32 seed 1: fp32 seed 0 is the reference (same model), the others are tested against it.
    pvalues: dict[str, list[float]] = {name: [] for name in RUNS if name != "fp32-seed1"}
    tvds: dict[str, list[float]] = {name: [] for name in pvalues}
    for i in ids:
        if not all(data[name][0][i] for name in RUNS):
            continue
        found = {name: homogeneity_pvalue(data[name][0][i], fp1[i]) for name in pvalues}
        if all(p is not None for p in found.values()):
            for name, p_value in found.items():
                pvalues[name].append(float(p_value))  # type: ignore[arg-type]
        for name in tvds:
            tvds[name].append(tvd(data[name][0][i], fp1[i]))
    reference = np.array(tvds["fp32-seed0"])
    report: dict[str, Any] = {
        "model": args.model,
        "contexts": len(ids),
        "n": args.n,
        "requests_seconds": times,
        "homogeneity": {f"{name} vs fp32-seed1": pvalue_summary(values) for name, values in pvalues.items()},
        "tvd_between_runs": {},
        "metrics": {},
    }
    for name, values in tvds.items():
        diff = np.array(values) - reference
        entry: dict[str, Any] = {"mean_tvd_to_fp32_seed1": float(np.mean(values))}
        if name != "fp32-seed0":
            boot = stats.bootstrap((diff,), np.mean, n_resamples=10000, random_state=np.random.default_rng(0))
            ci = boot.confidence_interval
            entry.update({"minus_reference": float(diff.mean()), "ci": [float(ci.low), float(ci.high)]})
        report["tvd_between_runs"][name] = entry
    for name, base in data["fp32-seed0"][1].items():
        rows: dict[str, dict[str, Any]] = {run_name: data[run_name][1].get(name) or {} for run_name in RUNS}
        if any(r.get("value") is None for r in rows.values()):
            continue
        value = {run_name: float(r["value"]) for run_name, r in rows.items()}
        report["metrics"][name] = {
            **value,
            "bf16 - fp32": value["bf16-seed0"] - value["fp32-seed0"],
            "seed1 - seed0": value["fp32-seed1"] - value["fp32-seed0"],
            "t0.9 - t1": value["fp32-t0.9-seed0"] - value["fp32-seed0"],
            "fp32_ci": base.get("ci"),
            "bf16_ci": rows["bf16-seed0"].get("ci"),
        }

    print(f"# bf16 against fp32: {args.model}, first {len(ids)} Provo contexts, n = {args.n}")
    print(f"# seconds answering the requests: {times}")
    for label, summary in report["homogeneity"].items():
        print(
            f"{label:26s} p<0.01: {summary['share_below_0.01']:.3f}  p<0.05: {summary['share_below_0.05']:.3f}  "
            f"KS vs uniform p = {summary['ks_uniform_pvalue']:.3g}  ({summary['contexts']} contexts tested)"
        )
    for name, entry in report["tvd_between_runs"].items():
        line = f"TVD to fp32-seed1 per context: {name:16s} {entry['mean_tvd_to_fp32_seed1']:.4f}"
        if "ci" in entry:
            line += (
                f"  minus fp32-seed0's: {entry['minus_reference']:+.4f} [{entry['ci'][0]:+.4f}, {entry['ci'][1]:+.4f}]"
            )
        print(line)
    header = f"{'metric':28s} {'fp32 s0':>8s} {'fp32 s1':>8s} {'bf16 s0':>8s} {'T0.9 s0':>8s}"
    print(header + f" {'bf16-fp32':>10s} {'s1-s0':>8s} {'T0.9-T1':>8s}")
    for name, row in report["metrics"].items():
        shown = [row[k] for k in RUNS]
        print(
            f"{name:28s} "
            + " ".join(f"{v:8.4f}" for v in shown)
            + f" {row['bf16 - fp32']:+10.4f} {row['seed1 - seed0']:+8.4f} {row['t0.9 - t1']:+8.4f}"
        )
    if extra:
        report["compared"] = compare_extra(extra, data, ids)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The light core: with the ``hf``, ``probes`` and ``plots`` extras not installed (torch, transformers, spaCy,
sentence-transformers, scikit-learn, matplotlib ...), what ``pip install variability-harness`` promises still works
(a human-only run, a mock-model run, ``score``, ``export``, ``leaderboard``, ``validate``, ``ls``), and what needs a
missing extra says which one, in one line, before any work starts.

Each command runs in a subprocess that sees this environment's packages without those extras: ``python -S`` (no
site-packages) over a folder of links to every entry of site-packages but theirs, so that, as on a light install,
``import torch`` raises ``ModuleNotFoundError`` and ``importlib.util.find_spec("torch")`` is None (scipy and datasets
ask the latter). Slow: subprocesses. ``scripts/check_wheel.sh`` checks the same on a real install of the built wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from harness.extras import EXTRAS
from tests.helpers import REPO, require_provo

pytestmark = pytest.mark.slow

#: The extras a light install lacks, and the import names they bring.
ABSENT_EXTRAS = ("hf", "probes", "plots")
BLOCKED = sorted({module for extra in ABSENT_EXTRAS for module in EXTRAS[extra]})
#: Site-packages entries of those extras' distributions beyond their import names (metadata, helper packages).
BLOCKED_ENTRIES = ("scikit_learn", "functorch", "torchgen", "mpl_toolkits", "pylab", "spacy_legacy", "spacy_loggers")


def _blocked(entry: str) -> bool:
    stem = entry.split("-")[0].split(".")[0].lower()
    return stem in BLOCKED or stem in BLOCKED_ENTRIES


@pytest.fixture(scope="module")
def light_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of links to this environment's site-packages, less the absent extras' entries."""
    site = Path(sysconfig.get_paths()["purelib"])
    folder = tmp_path_factory.mktemp("light-site")
    for entry in site.iterdir():
        if not _blocked(entry.name) and not entry.name.endswith(".pth") and "__editable__" not in entry.name:
            (folder / entry.name).symlink_to(entry)
    return folder


def light(site: Path, *args: str, code: str = "") -> subprocess.CompletedProcess[str]:
    """``harness ARGS`` in a subprocess that sees ``site`` for site-packages and the repository for ``harness``."""
    env = {**os.environ, "HARNESS_NO_PROGRESS": "1", "PYTHONPATH": os.pathsep.join([str(REPO), str(site)])}
    program = code or "import sys\nfrom harness.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run(
        [sys.executable, "-S", "-c", program, *args], capture_output=True, text=True, env=env, timeout=300
    )


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args[4:]} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, f"{proc.args[4:]}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_the_light_site_lacks_the_extras_and_nothing_else(light_site: Path) -> None:
    names = [*BLOCKED, "numpy", "datasets"]
    probe = f"import importlib.util as u, json\nprint(json.dumps({{m: bool(u.find_spec(m)) for m in {names!r}}}))"
    found = json.loads(ok(light(light_site, code=probe)))
    assert found == {**{m: False for m in BLOCKED}, "numpy": True, "datasets": True}


def test_the_light_core_runs_scores_exports_and_builds_a_leaderboard(light_site: Path, tmp_path: Path) -> None:
    data = str(require_provo())
    runs = tmp_path / "runs"
    common = ("--limit", "3", "--data-dir", data, "--output-dir", str(runs))
    ok(light(light_site, "run", "--tasks", "provo", "--human-only", *common))
    ok(light(light_site, "run", "--tasks", "provo", "--model", "mock:light", "--task-args", "n_samples=40", *common))
    model_run = runs / "mock__light"
    results = json.loads((model_run / "results.json").read_text())
    assert results["headline"]["provo"][0] == "tvd" and results["n-samples"]["provo"]["effective"] == 3
    assert results["metrics"]["provo"]["tvd"]["n"] == 3

    ok(light(light_site, "score", str(model_run), "--data-dir", data, "--output-dir", str(tmp_path / "rescored")))
    rescored = json.loads((tmp_path / "rescored" / "results.json").read_text())
    tvd = rescored["metrics"]["provo"]["tvd"]["value"]
    assert tvd == pytest.approx(results["metrics"]["provo"]["tvd"]["value"], abs=1e-12)

    ok(light(light_site, "export", str(model_run), "--format", "lm-eval", "-o", str(tmp_path / "export")))
    assert any((tmp_path / "export").rglob("*.json"))

    board = light(light_site, "leaderboard", str(model_run), str(runs / "human"), "-o", str(tmp_path / "board"))
    assert ok(board).splitlines()[-1].endswith("and 0 plots")
    assert board.stderr.strip() == (
        "note: no figures: the 'plots' extra is not installed (no matplotlib): "
        "pip install 'variability-harness[plots]' (--no-plots leaves them out without this note)"
    )
    assert (tmp_path / "board" / "index.html").is_file()
    assert json.loads((tmp_path / "board" / "leaderboard.json").read_text())["tasks"]["provo"]

    assert "provo" in ok(light(light_site, "ls", "tasks"))
    models = ok(light(light_site, "ls", "models", "--options")).splitlines()
    hf = models.index("hf\tharness.plugins.builtin")
    assert models[hf + 1].startswith("    (options not shown: model kind 'hf' needs the 'hf' extra, which is not")
    assert "mock\tharness.plugins.builtin" in models
    assert ok(light(light_site, "validate", "asset-valid")).startswith("ok: asset-valid")


def test_the_light_core_imports_outputs_and_checks_a_study(light_site: Path, tmp_path: Path) -> None:
    data = require_provo()
    outputs = "provo/reference_outputs/TVD/BLOOM/Generations"
    if not (data / outputs).is_dir():
        pytest.skip(f"{outputs} not found under {data}")
    out = tmp_path / "imported"
    ok(
        light(
            light_site,
            "import",
            outputs,
            "--task",
            "provo",
            "--name",
            "bloom",
            "--data-dir",
            str(data),
            "--output-dir",
            str(out),
        )
    )
    results = json.loads((out / "replay__bloom" / "results.json").read_text())
    assert results["n-samples"]["provo"]["effective"] == results["metrics"]["provo"]["tvd"]["n"] > 0

    study = tmp_path / "study"
    shutil.copytree(REPO / "examples" / "collect", study)
    ok(light(light_site, "collect", "check", str(study / "sentence-completion.yaml")))


def test_what_needs_a_missing_extra_names_it_in_one_line_before_any_work(light_site: Path, tmp_path: Path) -> None:
    data = str(require_provo())
    out = tmp_path / "out"
    common = ("--limit", "1", "--data-dir", data, "--output-dir", str(out))
    hf = light(light_site, "run", "--tasks", "provo", "--model", "hf:smollm2-135m", *common)
    assert one_line_error(hf) == (
        "error: model kind 'hf' needs the 'hf' extra, which is not installed (no torch, transformers, accelerate, "
        "gguf): pip install 'variability-harness[hf]'"
    )
    probes = light(light_site, "run", "--tasks", "asset-valid", "--human-only", *common)
    assert one_line_error(probes) == (
        "error: scorer 'lexical' of task 'asset-valid' needs the 'probes' extra, which is not installed (no spacy, "
        "sentence_transformers, sklearn): pip install 'variability-harness[probes]'"
    )
    assert not out.exists()  # refused before any output was written

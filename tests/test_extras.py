"""The extras (``harness/extras.py``): which modules each brings, the one line when one is missing, and who declares
which. In-process, with a module made unimportable by ``sys.modules[name] = None`` (Python's own way of saying "not
installed"); ``tests/test_light_install.py`` runs the whole light core in subprocesses."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.extras import (
    EXTRAS,
    MissingExtraError,
    extra_of,
    missing_modules,
    require_extras,
    reraise_missing_module,
)
from harness.registry.manager import get_registry
from tests.conftest import CliResult


def test_every_extra_is_installed_here_and_named_in_pyproject() -> None:
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    for extra in EXTRAS:
        assert missing_modules(extra) == [], extra
        assert f"\n{extra} = [" in pyproject, extra
    assert '\nall = ["variability-harness[hf,probes,plots,collect,ray,zh,ja]"]' in pyproject


def test_a_missing_module_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)
    assert missing_modules("probes") == ["sklearn"]
    with pytest.raises(MissingExtraError) as caught:
        require_extras(("plots", "probes"), "scorer 'x' of task 'y'")
    assert str(caught.value) == (
        "scorer 'x' of task 'y' needs the 'probes' extra, which is not installed (no sklearn): "
        "pip install 'variability-harness[probes]'"
    )
    with pytest.raises(MissingExtraError, match="^model kind 'k' needs the 'probes' extra, .*no sklearn"):
        reraise_missing_module(ModuleNotFoundError("x", name="sklearn.linear_model"), "model kind 'k'")
    with pytest.raises(Exception, match="^model kind 'k' needs the Python module 'foo', which is not installed$"):
        reraise_missing_module(ModuleNotFoundError("x", name="foo"), "model kind 'k'")
    with pytest.raises(Exception, match="^unknown extra 'gpu' \\(known: hf, probes, plots, collect, ray, zh, ja\\)$"):
        missing_modules("gpu")


def test_extra_of_maps_import_names_only() -> None:
    assert [extra_of(m) for m in ("torch.nn", "spacy", "uvicorn", "ray.util", "numpy", "torchvision")] == [
        "hf",
        "probes",
        "collect",
        "ray",
        None,
        None,
    ]


def test_which_builtins_declare_which_extras() -> None:
    registry = get_registry()
    probes = sorted(name for name, reg in registry.scorers.items() if "probes" in reg.obj.extras)
    assert probes == ["gap_predictors", "lexical", "pos_tvd", "semantic", "semantic_tvd", "syntactic"]
    assert all(reg.obj.extras in ((), ("probes",)) for reg in registry.scorers.values())
    assert registry.classifier("match_similarity").extras == ("probes",)
    assert registry.model("hf").extras == ("hf",)
    assert [registry.model(kind).extras for kind in ("mock", "replay", "openai")] == [(), (), ()]


def test_run_and_score_refuse_a_scorer_whose_extra_is_missing_before_any_data_loads(
    cli: Callable[..., CliResult], saved_mock_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "spacy", None)
    out = tmp_path / "out"
    result = cli("run", "--tasks", "asset-test", "--human-only", "--limit", "1", "--output-dir", str(out), check=False)
    assert result.returncode == 2 and not out.exists()
    assert result.stderr.strip() == (
        "error: scorer 'lexical' of task 'asset-test' needs the 'probes' extra, which is not installed (no spacy): "
        "pip install 'variability-harness[probes]'"
    )
    # Re-scoring the saved generation run asks the same of its scorers; the Provo run needs no extra.
    gen = saved_mock_runs / "gen" / "mock__test"
    rescore = cli("score", str(gen), "--output-dir", str(tmp_path / "r"), check=False)
    assert rescore.returncode == 2 and "needs the 'probes' extra" in rescore.stderr
    assert len(rescore.stderr.strip().splitlines()) == 1 and not (tmp_path / "r").exists()
    cli("score", str(saved_mock_runs / "cloze" / "mock__test"), "--output-dir", str(tmp_path / "cloze"))


def test_free_generation_adds_its_classifiers_extras() -> None:
    from harness.scorers.choice.free_generation import FreeGenerationScorer

    assert FreeGenerationScorer.extras == ()
    assert FreeGenerationScorer().required_extras() == ("probes",)

"""Plugin discovery: built-ins come through the hooks, every hook is documented, duplicates are refused."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from harness import hookspecs
from harness.errors import HarnessError
from harness.hookspecs import hookimpl
from harness.registry.manager import _collect, get_plugin_manager, get_registry
from tests.helpers import REPO


def hookspec_names() -> list[str]:
    tree = ast.parse((REPO / "harness" / "hookspecs.py").read_text())
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and any(ast.unparse(d) == "hookspec" for d in node.decorator_list)
    ]


def test_the_hooks_exist() -> None:
    assert hookspec_names() == [
        "register_tasks",
        "register_scorers",
        "register_models",
        "register_loaders",
        "register_answer_classifiers",
        "register_request_kinds",
        "register_data_sets",
    ]
    assert sorted(hookspecs.HOOKS) == sorted(hookspec_names())


def hook_signatures() -> dict[str, tuple[str, str]]:
    """Each hook's signature and its callback type's definition, as written in ``harness/hookspecs.py``."""
    tree = ast.parse((REPO / "harness" / "hookspecs.py").read_text())
    aliases = {
        node.targets[0].id: ast.unparse(node.value).replace("'", "")
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in hookspec_names():
            assert node.returns is not None and len(node.args.args) == 1
            callback = ast.unparse(node.args.args[0].annotation)
            signature = f"{node.name}({ast.unparse(node.args)}) -> {ast.unparse(node.returns)}"
            out[node.name] = (signature, f"{callback} = {aliases[callback]}")
    return out


def test_docs_cover_every_hookspec_with_its_signature() -> None:
    docs = (REPO / "docs" / "plugins.md").read_text()
    sections = dict(re.findall(r"^### (\w+)$\n(.*?)(?=^##|\Z)", docs, flags=re.M | re.S))
    for name, (signature, callback) in hook_signatures().items():
        assert name in sections, f"docs/plugins.md has no section for hook {name}"
        assert getattr(hookspecs, name).__doc__, f"hook {name} has no docstring"
        text = " ".join(sections[name].split())
        assert f"`{signature}`" in text, f"docs/plugins.md: {name} is not documented as `{signature}`"
        assert f"`{callback}`" in text, f"docs/plugins.md: {name}'s callback is not documented as `{callback}`"
    assert set(sections) <= set(hookspec_names()), "docs/plugins.md documents a hook that does not exist"


def test_builtin_kinds_are_registered_and_own_their_parameters() -> None:
    registry = get_registry()
    assert registry.task_kinds() == ["sample_words", "word_distribution", "generate", "multiple_choice"]
    assert set(registry.kinds) == {
        "sample_words",
        "word_distribution",
        "generate",
        "multiple_choice",
        "loglikelihood",
        "next_token",
        "similarity",
        "option_probs",
    }
    kind = registry.kind("sample_words")
    assert kind.adapter_method == "sample_words_many" and kind.view == "cloze"
    assert kind.params.parse({"n_samples": "40"}, "t")["n_samples"] == 40
    assert registry.kinds["generate"].plugin == "harness.plugins.builtin"


def test_builtins_are_registered_through_the_hooks() -> None:
    registry = get_registry()
    assert {"provo", "provo-paper"} <= set(registry.tasks)
    assert {"tvd", "human_control", "ece", "top1", "entropy"} <= set(registry.scorers)
    assert "hf" in registry.models and "provo" in registry.loaders
    assert registry.tasks["provo"].plugin == "harness.plugins.builtin"
    assert registry.scorers["tvd"].plugin == "harness.scorers.builtin"
    names = {p["name"]: p for p in registry.plugins}
    assert names["harness.plugins.builtin"]["hooks"] == [
        "register_data_sets",
        "register_loaders",
        "register_models",
        "register_request_kinds",
        "register_tasks",
    ]
    assert names["harness.scorers.builtin"]["distribution"] == "built-in"
    assert "register_answer_classifiers" in names["harness.scorers.builtin"]["hooks"]
    assert registry.classifiers["match_similarity"].plugin == "harness.scorers.builtin"


def test_model_adapter_is_imported_lazily() -> None:
    registry = get_registry(refresh=True)
    assert registry.models["hf"].obj == "harness.plugins.hf.adapter:HFAdapter"
    assert "sample_words" in registry.model("hf").supported_requests


class _Duplicate:
    @staticmethod
    @hookimpl
    def register_loaders(register: Callable[[str, Any], None]) -> None:
        register("provo", lambda options, data_dir: None)


def test_a_name_registered_twice_names_both_plugins() -> None:
    pm = get_plugin_manager(load_entry_points=False)
    pm.register(_Duplicate, name="dup-plugin")
    with pytest.raises(
        HarnessError, match="data loader 'provo' is registered twice: by harness.plugins.builtin and by dup-plugin"
    ):
        _collect(pm)


def test_cli_lists(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["ls", "tasks"]) == 0
    out = capsys.readouterr().out
    assert "provo\tharness.plugins.builtin" in out and "provo-paper\tharness.plugins.builtin" in out
    assert main(["ls", "scorers"]) == 0
    assert "human_control\tharness.scorers.builtin" in capsys.readouterr().out
    assert main(["ls", "classifiers"]) == 0
    assert "match_similarity\tharness.scorers.builtin" in capsys.readouterr().out


def test_unknown_model_kind(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["run", "--tasks", "provo", "--model", "nope:x", "--limit", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown model kind 'nope'") and "\n" not in err


def test_the_core_imports_no_plugin_package() -> None:
    """``harness/`` outside the built-in plugin packages is the core: plugins import it (through ``harness.api``),
    never the reverse; and nothing imports the old top-level names ``plugins``, ``scorers`` or ``tasks``, which the
    wheel does not install (the repository's top-level folders of those names are links into ``harness/``)."""
    builtin = ("harness.plugins", "harness.scorers", "harness.tasks")
    roots = ("harness", "tests", "benchmarks", "scripts", "examples")
    for path in sorted(p for root in roots for p in (REPO / root).rglob("*.py") if ".venv" not in p.parts):
        relative = path.relative_to(REPO)
        core = relative.parts[0] == "harness" and relative.parts[1] not in ("plugins", "scorers", "tasks")
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in ("plugins", "scorers", "tasks"), f"{relative} imports {name}"
                if core:
                    assert not name.startswith(builtin), f"{relative} imports {name}"


def test_ls_options_prints_every_option_with_type_and_default(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["ls", "kinds", "--options"]) == 0
    out = capsys.readouterr().out
    assert "sample_words\tharness.plugins.builtin" in out
    assert "    n_samples\tint >= 1\tdefault 1000\tnext words drawn per context" in out
    assert main(["ls", "tasks", "--options"]) == 0
    out = capsys.readouterr().out
    # provo-paper's own values are shown as its defaults.
    paper = re.split(r"\n(?=\S)", out.split("provo-paper\t")[1])[0]
    assert "    mode\texact | paper | whole\tdefault paper" in paper
    assert main(["ls", "models", "--options"]) == 0
    out = capsys.readouterr().out
    assert "    block_size\tint >= 1\tdefault 4" in out and "    trust_remote_code\tbool\tdefault false" in out
    assert main(["ls", "scorers", "--options"]) == 0
    assert "    n_bins\tint >= 1\tdefault 10" in capsys.readouterr().out
    assert main(["ls", "loaders", "--options"]) == 0
    assert "    text_ids\t" in capsys.readouterr().out


@pytest.mark.parametrize("what", ["tasks", "scorers", "models", "loaders", "classifiers", "kinds"])
def test_ls_options_prints_each_default_as_a_task_file_writes_it(what: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every default is one line of YAML that reads back as the value (a generic loader's field default as the
    text a task file gives it, not a Python repr)."""
    from harness.cli import main

    assert main(["ls", what, "--options"]) == 0
    out = capsys.readouterr().out
    rows = [line.split("\t") for line in out.splitlines() if line.startswith("    ") and line.count("\t") >= 2]
    assert rows
    for row in rows:
        text = row[2].removeprefix("default ")
        assert not re.search(r"\w\(|^None$|^True$|^False$|^\(", text), row
        yaml.safe_load(text)
    if what == "loaders":
        assert "    language\ttext | template\tdefault en\t" in out
        assert "    description\ttext | template\tdefault ''\t" in out


def test_yaml_text_reads_back_as_the_value() -> None:
    from harness.options import yaml_text

    values = [None, True, False, 0, 0.95, 1e-05, "paper", "", "{source}", "{context}\n", "yes", "1", [], {}]
    values += [["\n"], ("ancestral",), {"a": 1, "b": [None, "x: y"]}]
    for value in values:
        back = yaml.safe_load(yaml_text(value))
        assert back == (list(value) if isinstance(value, tuple) else value), (value, yaml_text(value))
    assert [yaml_text(v) for v in (None, False, "{context}\n", ("a", "b"))] == [
        "null",
        "false",
        '"{context}\\n"',
        "[a, b]",
    ]

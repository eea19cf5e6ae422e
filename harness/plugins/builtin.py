"""Built-in model adapters, data loaders and tasks, registered through the same hooks a third-party plugin uses."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

from harness.api import hookimpl


@hookimpl
def register_request_kinds(register: Callable[[Any], None]) -> None:
    from harness.kinds import BUILTIN_KINDS

    for kind in BUILTIN_KINDS:
        register(kind)


@hookimpl
def register_models(register: Callable[[str, Any], None]) -> None:
    register("hf", "harness.plugins.hf.adapter:HFAdapter")
    register("openai", "harness.plugins.openai_api.adapter:OpenAIAdapter")
    register("mock", "harness.plugins.mock.adapter:MockAdapter")
    register("replay", "harness.plugins.replay.adapter:ReplayAdapter")


@hookimpl
def register_loaders(register: Callable[[str, Any], None]) -> None:
    from harness.plugins.loaders.asset import load_asset
    from harness.plugins.loaders.dailydialog import load_dailydialog_pp
    from harness.plugins.loaders.generic.choice import load_generic_choice
    from harness.plugins.loaders.generic.cloze import load_generic_cloze
    from harness.plugins.loaders.generic.generation import load_generic_generation
    from harness.plugins.loaders.pragmatics import load_pragmatics_mcq
    from harness.plugins.loaders.provo import load_provo
    from harness.plugins.loaders.wmt14 import load_wmt14_multiref
    from harness.plugins.loaders.writingprompts import load_writingprompts

    register("provo", load_provo)
    register("wmt14_multiref", load_wmt14_multiref)
    register("asset", load_asset)
    register("dailydialog_pp", load_dailydialog_pp)
    register("writingprompts", load_writingprompts)
    register("pragmatics_mcq", load_pragmatics_mcq)
    register("generic_cloze", load_generic_cloze)
    register("generic_generation", load_generic_generation)
    register("generic_choice", load_generic_choice)


@hookimpl
def register_tasks(register: Callable[[Any], None]) -> None:
    for entry in sorted(resources.files("harness.tasks").iterdir(), key=lambda e: e.name):
        if entry.name.endswith((".yaml", ".yml")):
            register(entry)


@hookimpl
def register_data_sets(register: Callable[[Any], None]) -> None:
    from harness.plugins.loaders.catalog import DATA_SETS

    for data_set in DATA_SETS:
        register(data_set)

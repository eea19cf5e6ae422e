"""Built-in model adapters, data loaders and tasks, registered through the same hooks a third-party plugin uses."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

from harness.hookspecs import hookimpl


@hookimpl
def register_models(register: Callable[[str, Any], None]) -> None:
    register("hf", "plugins.hf.adapter:HFAdapter")


@hookimpl
def register_loaders(register: Callable[[str, Any], None]) -> None:
    from plugins.loaders.provo import load_provo

    register("provo", load_provo)


@hookimpl
def register_tasks(register: Callable[[Any], None]) -> None:
    for entry in sorted(resources.files("tasks").iterdir(), key=lambda e: e.name):
        if entry.name.endswith((".yaml", ".yml")):
            register(entry)

"""The plugin manager and the registry it fills.

Built-in plugins are registered by module, third-party plugins through the ``harness`` entry-point group; both
go through the same hooks, so a built-in is no different from a plugin anyone can write. Each hook gets its own
typed ``register`` function, which checks what it is given and records which plugin gave it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from harness import hookspecs
from harness.data.loaders import Loader
from harness.data.sets import DataSet
from harness.errors import HarnessError
from harness.extras import require_extras, reraise_missing_module
from harness.files import same_file
from harness.kinds.base import RequestKind
from harness.models import ModelAdapter
from harness.scoring.base import Scorer
from harness.scoring.classifiers import AnswerClassifier

ENTRY_POINT_GROUP = "harness"
BUILTIN_PLUGINS = ("harness.plugins.builtin", "harness.scorers.builtin")


@dataclass
class Registered:
    """A registered object and the plugin that registered it (shown by ``harness plugins`` and ``harness ls``)."""

    obj: Any
    plugin: str


@dataclass
class Registry:
    kinds: dict[str, Registered] = field(default_factory=dict)
    tasks: dict[str, Registered] = field(default_factory=dict)
    scorers: dict[str, Registered] = field(default_factory=dict)
    models: dict[str, Registered] = field(default_factory=dict)
    loaders: dict[str, Registered] = field(default_factory=dict)
    classifiers: dict[str, Registered] = field(default_factory=dict)
    data_sets: dict[str, Registered] = field(default_factory=dict)
    plugins: list[dict[str, Any]] = field(default_factory=list)
    _kind_instances: dict[str, RequestKind] = field(default_factory=dict, repr=False)

    def kind(self, name: str) -> RequestKind:
        """The kind's one instance in this registry (kinds are stateless, so every run shares it), bound to this
        registry's lookup of the other kinds."""
        if name not in self._kind_instances:
            self._kind_instances[name] = self._get(self.kinds, name, "request kind").obj().bind(self.kind)
        return self._kind_instances[name]

    def task_kinds(self) -> list[str]:
        """The kinds a task YAML can name in ``request:``."""
        return [name for name in self.kinds if self.kind(name).is_task_kind]

    def scorer(self, name: str) -> type[Scorer]:
        return self._get(self.scorers, name, "scorer").obj

    def model(self, kind: str) -> type[ModelAdapter]:
        """The adapter class for ``kind``; a ``"module:Class"`` string is imported now (keeps start-up light)."""
        entry = self._get(self.models, kind, "model kind")
        if isinstance(entry.obj, str):
            module_name, _, attr = entry.obj.partition(":")
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:  # an extra (or a plugin's own dependency) that is not installed
                reraise_missing_module(exc, f"model kind '{kind}'")
            entry.obj = getattr(module, attr)
        if not (isinstance(entry.obj, type) and issubclass(entry.obj, ModelAdapter)):
            raise HarnessError(f"model kind '{kind}' from {entry.plugin} is not a ModelAdapter subclass")
        require_extras(entry.obj.extras, f"model kind '{kind}'")
        return entry.obj

    def loader(self, name: str) -> Loader:
        return self._get(self.loaders, name, "data loader").obj

    def classifier(self, name: str) -> type[AnswerClassifier]:
        return self._get(self.classifiers, name, "answer classifier").obj

    def data_set(self, name: str) -> DataSet:
        return self._get(self.data_sets, name, "data set").obj

    @staticmethod
    def _get(table: dict[str, Registered], name: str, what: str) -> Registered:
        if name not in table:
            known = ", ".join(sorted(table)) or "none"
            raise HarnessError(f"unknown {what} '{name}' (registered: {known}; see `harness plugins`)")
        return table[name]


def _same_registration(old: Any, new: Any) -> bool:
    """Task files are registered as a new ``Path`` each time: two registrations of one file are one task."""
    if isinstance(old, Path) and isinstance(new, Path):
        return same_file(old, new)
    return old is new


def _add(table: dict[str, Registered], name: str, obj: Any, plugin: str, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise HarnessError(f"plugin {plugin} registered a {what} without a name")
    if name in table and not _same_registration(table[name].obj, obj):
        raise HarnessError(f"{what} '{name}' is registered twice: by {table[name].plugin} and by {plugin}")
    table.setdefault(name, Registered(obj, plugin))


def _subclass(obj: Any, base: Any, plugin: str) -> Any:
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise HarnessError(f"plugin {plugin} registered {obj!r}, which is not a subclass of {base.__name__}")
    return obj


def _registrars(registry: Registry, plugin: str) -> dict[str, Callable[..., None]]:
    """One typed register function per hook, for one plugin (so each registration is attributed to it)."""

    def register_request_kind(kind_class: type[RequestKind]) -> None:
        cls = _subclass(kind_class, RequestKind, plugin)
        _add(registry.kinds, cls.name, cls, plugin, "request kind")

    def register_task(path: Any) -> None:
        from harness.task_config import read_task_name

        task_path = Path(str(path))
        _add(registry.tasks, read_task_name(task_path), task_path, plugin, "task")

    def register_scorer(scorer_class: type[Scorer]) -> None:
        cls = _subclass(scorer_class, Scorer, plugin)
        _add(registry.scorers, cls.name, cls, plugin, "scorer")

    def register_model(kind: str, adapter: type[ModelAdapter] | str) -> None:
        if not isinstance(adapter, str):
            _subclass(adapter, ModelAdapter, plugin)
        _add(registry.models, kind, adapter, plugin, "model kind")

    def register_loader(name: str, loader: Loader) -> None:
        if not callable(loader):
            raise HarnessError(f"plugin {plugin} registered loader '{name}', which is not callable")
        _add(registry.loaders, name, loader, plugin, "data loader")

    def register_classifier(classifier_class: type[AnswerClassifier]) -> None:
        cls = _subclass(classifier_class, AnswerClassifier, plugin)
        _add(registry.classifiers, cls.name, cls, plugin, "answer classifier")

    def register_data_set(data_set: DataSet) -> None:
        if not isinstance(data_set, DataSet):
            raise HarnessError(f"plugin {plugin} registered {data_set!r} as a data set, which is not a DataSet")
        _add(registry.data_sets, data_set.name, data_set, plugin, "data set")

    return {
        "register_request_kinds": register_request_kind,
        "register_tasks": register_task,
        "register_scorers": register_scorer,
        "register_models": register_model,
        "register_loaders": register_loader,
        "register_answer_classifiers": register_classifier,
        "register_data_sets": register_data_set,
    }


def _collect(pm: pluggy.PluginManager) -> Registry:
    registry = Registry()
    for plugin in pm.get_plugins():
        plugin_name = pm.get_name(plugin) or repr(plugin)
        dist = next((d for p, d in pm.list_plugin_distinfo() if p is plugin), None)
        registry.plugins.append(
            {
                "name": plugin_name,
                "module": getattr(plugin, "__name__", repr(plugin)),
                "distribution": f"{dist.project_name} {dist.version}" if dist else "built-in",
                "hooks": sorted(h.name for h in pm.get_hookcallers(plugin) or []),
            }
        )
    for hook_name in hookspecs.HOOKS:
        hook = getattr(pm.hook, hook_name)
        for impl in hook.get_hookimpls():
            plugin_name = pm.get_name(impl.plugin) or repr(impl.plugin)
            impl.function(register=_registrars(registry, plugin_name)[hook_name])
    return registry


def get_plugin_manager(load_entry_points: bool = True) -> pluggy.PluginManager:
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    for module_name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(module_name), name=module_name)
    if load_entry_points:
        pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    return pm


_REGISTRY: Registry | None = None


def get_registry(refresh: bool = False) -> Registry:
    """The registry of everything every installed plugin provides (built once per process)."""
    global _REGISTRY
    if _REGISTRY is None or refresh:
        _REGISTRY = _collect(get_plugin_manager())
    return _REGISTRY

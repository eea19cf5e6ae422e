"""The plugin hooks. Every extension point of the harness is one of these register-callback hooks.

A plugin is a module with functions named like the hooks below, decorated with ``harness.api.hookimpl``; each
gets a ``register`` callback and calls it once per thing it provides. Built-ins are registered through exactly
these hooks (``plugins/builtin.py``, ``scorers/builtin.py``), and third-party packages are found through the
entry-point group ``harness``. ``docs/plugins.md`` documents every hook with its signature; a test keeps the two
in step.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from harness.data.loaders import Loader
    from harness.data.sets import DataSet
    from harness.kinds.base import RequestKind
    from harness.models import ModelAdapter
    from harness.scoring.base import Scorer
    from harness.scoring.classifiers import AnswerClassifier

hookspec = pluggy.HookspecMarker("harness")
hookimpl = pluggy.HookimplMarker("harness")

#: The callback each hook gets, one type per hook.
RegisterTask = Callable[["str | Path | Traversable"], None]
RegisterScorer = Callable[["type[Scorer]"], None]
RegisterModel = Callable[["str", "type[ModelAdapter] | str"], None]
RegisterLoader = Callable[["str", "Loader"], None]
RegisterClassifier = Callable[["type[AnswerClassifier]"], None]
RegisterRequestKind = Callable[["type[RequestKind]"], None]
RegisterDataSet = Callable[["DataSet"], None]


@hookspec
def register_tasks(register: RegisterTask) -> None:
    """Register task definitions.

    Call ``register(path)`` with the path of a task YAML file (``str`` or ``pathlib.Path``; an
    ``importlib.resources`` traversable works for files shipped inside a package). The file is validated against
    the task schema when it is used, before any model loads.
    """


@hookspec
def register_scorers(register: RegisterScorer) -> None:
    """Register scorers.

    Call ``register(scorer_class)`` with a subclass of ``harness.api.Scorer`` (or ``harness.api.ArgsScorer``,
    which checks its ``options``); its ``name`` class attribute is the name task YAML files use in ``scorers:``.
    """


@hookspec
def register_models(register: RegisterModel) -> None:
    """Register model adapters.

    Call ``register(kind, adapter_class)`` where ``kind`` is the part before the colon in ``--model KIND:NAME``
    and ``adapter_class`` is a subclass of ``harness.api.ModelAdapter``, constructed with a
    ``harness.api.ModelSpec``. Its ``supported_requests`` are checked against the tasks before it is built, and
    its ``options`` describe its ``--model-args``. ``adapter_class`` may also be an import string
    ``"package.module:ClassName"``, imported only when that kind is used, so that listing plugins does not import
    heavy libraries such as torch.
    """


@hookspec
def register_loaders(register: RegisterLoader) -> None:
    """Register data loaders.

    Call ``register(name, loader)`` where ``loader(options, data_dir) -> harness.api.LoadedData`` reads a data
    set's release format into normalised instances; ``data_dir`` is the resolved data root (``--data-dir``,
    ``HARNESS_DATA_DIR`` or the user cache directory). Decorate the loader with
    ``harness.api.takes_options(Options(...))``: the task YAML's ``data`` mapping is checked before the loader runs
    (an unknown option or a bad value is one line naming it), and ``options`` is what ``Options.parse`` returns,
    every declared option converted and at its default when not given, so the loader reads ``options["name"]`` and
    repeats neither defaults nor checks.
    """


@hookspec
def register_answer_classifiers(register: RegisterClassifier) -> None:
    """Register answer classifiers, which map a free-generation answer to one of an item's options.

    Call ``register(classifier_class)`` with a subclass of ``harness.api.AnswerClassifier``; its ``name`` class
    attribute is what the free-generation scorer's ``classifier`` argument takes, and the scorer's
    ``classifier_args`` are passed to its constructor.
    """


@hookspec
def register_request_kinds(register: RegisterRequestKind) -> None:
    """Register request kinds.

    Call ``register(kind_class)`` with a subclass of ``harness.api.RequestKind``; its ``name`` is what a task
    YAML names in ``request:`` (when it has an ``instance_type``) and what adapters list in
    ``supported_requests``. The kind owns its task parameters, request building, the batched adapter method that
    answers it (``<name>_many``), reading stored responses, and its part of the run summary.
    """


@hookspec
def register_data_sets(register: RegisterDataSet) -> None:
    """Register data sets that ``harness data list|fetch|verify`` can show, download and check.

    Call ``register(data_set)`` with a ``harness.data.sets.DataSet``: its name (what ``harness data fetch NAME``
    takes), official source, license, and the files its loader reads, each a ``DataFile`` with its path under the
    data root, its official URL and, where it could be pinned, its SHA-256 and size. A file without a pinned
    SHA-256 is downloaded only when its data set is named, and is never reported as verified.
    """


#: Every hook, in the order the registry calls them (request kinds first: tasks are checked against them).
HOOKS: tuple[str, ...] = (
    "register_request_kinds",
    "register_tasks",
    "register_scorers",
    "register_models",
    "register_loaders",
    "register_answer_classifiers",
    "register_data_sets",
)

__all__ = ["HOOKS", "hookimpl", "hookspec"]

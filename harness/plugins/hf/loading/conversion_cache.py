"""The local cache of packaged aliases converted into ordinary fp32 checkpoints.

Loading a GGUF makes transformers dequantise every tensor (30-40 s for SmolLM2 on 2 cores), so an alias is converted
once into a local cache of fp32 safetensors plus the tokenizer; later loads take about a second. The conversion is
written to a temporary directory beside the cache entry and renamed into place, so a killed conversion never leaves a
half-written cache that a later run would trust.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import platformdirs
import torch

from harness.api import ModelLoadError
from harness.plugins.hf.loading.packaged_aliases import PACKAGED_ALIASES, packaged_gguf_path, unknown_alias_message

#: Written last into a converted cache entry; its presence (with matching source facts) marks the entry complete.
MARKER_FILE = "harness-conversion.json"

#: Bumped when the conversion recipe changes, so old cache entries are rebuilt instead of trusted.
CONVERSION_FORMAT = 1


def default_cache_dir() -> Path:
    """The harness cache root: ``$HARNESS_CACHE_DIR`` if set, else the platform's user cache directory."""
    env = os.environ.get("HARNESS_CACHE_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("harness"))


def _source_facts(alias: str, gguf: Path) -> dict[str, Any]:
    """What a cache entry was built from; a mismatch (package upgraded, recipe changed) triggers reconversion."""
    distribution = PACKAGED_ALIASES[alias][0]
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {
        "alias": alias,
        "format": CONVERSION_FORMAT,
        "distribution": distribution,
        "distribution_version": version,
        "gguf_file": gguf.name,
        "gguf_size": gguf.stat().st_size,
    }


def _cache_entry_valid(entry: Path, facts: dict[str, Any]) -> bool:
    marker = entry / MARKER_FILE
    if not marker.is_file():
        return False
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(recorded, dict) and all(recorded.get(k) == v for k, v in facts.items())


def convert_atomically(entry: Path, facts: dict[str, Any], write: Callable[[Path], None]) -> Path:
    """Run ``write(tmp_dir)`` and move ``tmp_dir`` to ``entry`` in one rename, with a marker written last.

    If ``write`` raises (or the process is killed) only a ``.tmp-*`` directory is left, which is removed here on an
    exception and ignored by every reader. If another process finished the same entry first, its copy is kept and ours
    is discarded: both were built from the same source.
    """
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{entry.name}-", dir=entry.parent))
    try:
        # mkdtemp makes the directory private (0700); give the entry the permissions a plain mkdir would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)
        write(tmp)
        (tmp / MARKER_FILE).write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if entry.exists() and not _cache_entry_valid(entry, facts):
            # A stale or incomplete entry (older package, older recipe): move it aside, then delete it.
            stale = Path(tempfile.mkdtemp(prefix=f".stale-{entry.name}-", dir=entry.parent))
            os.replace(entry, stale / "old")
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.replace(tmp, entry)
        except OSError:
            if not _cache_entry_valid(entry, facts):
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process won the race with an equivalent entry
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return entry


def _convert_gguf(gguf: Path, out_dir: Path) -> None:
    """Dequantise ``gguf`` into fp32 safetensors plus tokenizer files in ``out_dir`` (needs ``gguf``, ``accelerate``).

    The dequantised weights are plain fp32 tensors; dropping the quantizer and its config entry makes
    ``save_pretrained`` write them as an ordinary checkpoint that loads without ``gguf``.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory, filename = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=filename)
    model: Any = AutoModelForCausalLM.from_pretrained(directory, gguf_file=filename, dtype=torch.float32)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


def ensure_packaged_model(
    alias: str,
    cache_dir: Path | None = None,
    *,
    converter: Callable[[Path, Path], None] = _convert_gguf,
) -> Path:
    """Return the directory of the converted cache entry for ``alias``, converting it first if needed.

    The entry lives at ``<cache root>/models/<alias>``. ``converter(gguf_path, out_dir)`` is a parameter so tests can
    check reuse and atomicity without spending 30 s on a real conversion.
    """
    if alias not in PACKAGED_ALIASES:
        raise ModelLoadError(unknown_alias_message(alias))
    gguf = packaged_gguf_path(alias)
    facts = _source_facts(alias, gguf)
    entry = (cache_dir if cache_dir is not None else default_cache_dir()) / "models" / alias
    if _cache_entry_valid(entry, facts):
        return entry
    try:
        return convert_atomically(entry, facts, lambda tmp: converter(gguf, tmp))
    except ModelLoadError:
        raise
    except Exception as exc:
        raise ModelLoadError(f"model alias '{alias}': converting {gguf} into {entry} failed: {exc}") from exc

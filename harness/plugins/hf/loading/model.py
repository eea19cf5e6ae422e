"""Load a Hugging Face model (causal LM, or sequence-to-sequence) for ``--model hf:NAME``, placed and ready.

What ``NAME`` means is decided by :func:`harness.plugins.hf.loading.source.resolve_model_name` (a packaged alias, a
local directory or a hub id); a packaged alias is read from its conversion cache
(:mod:`harness.plugins.hf.loading.conversion_cache`), and a hub id from the local hub cache only when offline or when
the hub does not answer (:mod:`harness.plugins.hf.loading.hub_access`). This module loads tokenizer and model from
there, moves the model to its device in eval mode, and reports what was loaded (:class:`LoadedModel`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from harness.api import ModelLoadError
from harness.plugins.hf.loading.conversion_cache import ensure_packaged_model
from harness.plugins.hf.loading.hub_access import hub_cache_only_reason
from harness.plugins.hf.loading.options import AUTO_STEP_ROWS, resolve_batch_size, resolve_device, resolve_dtype
from harness.plugins.hf.loading.packaged_aliases import unknown_alias_message
from harness.plugins.hf.loading.source import ResolvedSource, resolve_model_name


@dataclass
class LoadedModel:
    """A loaded model with the facts the adapter reports in ``info()``."""

    model: Any
    tokenizer: Any
    source: ResolvedSource
    #: The directory or hub id ``from_pretrained`` was called with (the conversion cache for an alias).
    path: str
    device: torch.device
    dtype: torch.dtype
    #: Rows of one forward pass of full sequences (the query scorer, the exact word search).
    batch_size: int
    #: Rows of one forward pass of the one-token engines (the trie word sampler, the batched generator).
    step_rows: int
    revision: str | None = None


def load_hf_model(
    name: str,
    *,
    device: str = "auto",
    dtype: str = "float32",
    batch_size: int | str = "auto",
    max_batch: int | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    cache_dir: Path | None = None,
) -> LoadedModel:
    """Resolve ``name`` (see the module docstring), load model and tokenizer, move to ``device``, set eval mode.

    Local directories and the packaged alias are read with ``local_files_only=True`` so no network is touched. A hub
    id goes through plain ``from_pretrained``, except in offline mode (``HF_HUB_OFFLINE``, ``TRANSFORMERS_OFFLINE`` or
    ``HARNESS_OFFLINE`` set) or when the hub does not accept a TCP connection within
    :data:`~harness.plugins.hf.loading.hub_access.HUB_PROBE_TIMEOUT` seconds
    (:func:`~harness.plugins.hf.loading.hub_access.hub_unreachable`): then only the local hub cache is read, so a cached
    model still loads and a missing one fails at once. When it fails, the error names every interpretation that was
    tried (alias, directory, hub id) and, for the hub, why it was not asked.
    """
    source = resolve_model_name(name)
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype)
    size = resolve_batch_size(batch_size, torch_device, max_batch)
    step_rows = resolve_batch_size(batch_size, torch_device, max_batch, AUTO_STEP_ROWS)

    cache_only: str | None = None
    if source.kind == "alias":
        path = str(ensure_packaged_model(source.name, cache_dir))
        local_only = True
    elif source.kind == "local":
        path, local_only = source.location, True
    else:
        # Offline, or the hub does not answer: read the hub cache only, so a cached model still loads and a missing
        # one fails at once instead of after the hub client's retries.
        cache_only = hub_cache_only_reason()
        path, local_only = source.location, cache_only is not None

    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    common: dict[str, Any] = {"trust_remote_code": trust_remote_code, "local_files_only": local_only}
    if revision and source.kind == "hub":
        common["revision"] = revision
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **common)
        # Encoder-decoder checkpoints (T5, Marian) have no causal-LM class; they answer ``generate`` requests only.
        config = AutoConfig.from_pretrained(path, **common)
        auto = AutoModelForSeq2SeqLM if getattr(config, "is_encoder_decoder", False) else AutoModelForCausalLM
        model: Any = auto.from_pretrained(path, config=config, dtype=torch_dtype, **common)
    except Exception as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if source.kind == "hub":
            alias_note = unknown_alias_message(source.name)
            hub_note = f"{cache_only}, so only the local hub cache was tried: " if cache_only else ""
            raise ModelLoadError(
                f"could not load model '{source.name}': {alias_note}; no local directory '{source.name}' "
                f"(looked in {Path.cwd()}); hub id '{source.name}' failed: {hub_note}{first_line}"
            ) from exc
        raise ModelLoadError(f"could not load model '{source.name}' from {path}: {first_line}") from exc

    model.to(torch_device)
    model.eval()
    with contextlib.suppress(AttributeError):
        model.requires_grad_(False)
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        source=source,
        path=path,
        device=torch_device,
        dtype=next(model.parameters()).dtype,
        batch_size=size,
        step_rows=step_rows,
        revision=revision if source.kind == "hub" else None,
    )

"""The ``device``, ``dtype`` and batch-size model arguments, read into what the loader and the engines use.

Each is checked before any weight is read, so a typo fails at once with the accepted values named.
"""

from __future__ import annotations

from typing import Literal

import torch

from harness.api import ModelLoadError

#: Batch size used when the user asks for ``auto``. Fixed per device type, never derived from free memory, because
#: the batch composition changes floating-point rounding and results must be a function of the configuration only.
#: (The sampler also lowers rows per pass for long contexts, from the model and request alone.)
AUTO_BATCH_SIZE: dict[str, int] = {"cpu": 512, "cuda": 1024}

#: Rows of one forward pass of the engines that advance every row by one token (the trie word sampler, the batched
#: generator) when the user asks for ``auto``. Their rows are cheap (one position each, the context read once), so
#: each pass's fixed cost (streaming every weight, about 60 ms for SmolLM2-135M on 2 CPU cores, plus a level's last,
#: partly filled pass) is worth spreading wider than the full sequences the query scorer batches: on the first 64
#: Provo contexts in float32, 1,024 rows answered in 55.8 and 55.0 s against 63.9 and 58.8 s at 512, the same counts
#: (``docs/word-sampling.md``, "Wider passes").
#: On a GPU the pass is host-bound (each pass costs the launches of every layer's kernels, whatever its width), so
#: wider passes and wider blocks (:data:`AUTO_CONTEXTS_PER_PASS`) mean fewer passes: on an H100 in bf16, the first
#: 512 Provo contexts took 31.5 s in blocks of 64 contexts and 1,024 rows, 21.1 s in 256 and 4,096, 20.5 s in 512
#: and 8,192 (``benchmarks/gpu_suite.sh``, docs/word-sampling.md). 4,096 holds the next-token probabilities of a
#: 128k-token vocabulary in 2 GB; 8,192 gained 3% for twice that.
AUTO_STEP_ROWS: dict[str, int] = {"cpu": 1024, "cuda": 4096}

#: Requests answered together (``--model-args contexts_per_pass``) under ``auto``, per device type: every trie level
#: of a block, however narrow, is a pass of its own, so on a host-bound GPU a wider block shares each deep level's
#: pass among more contexts (the measurement is at :data:`AUTO_STEP_ROWS`). On 2 CPU cores 64 took 11% less time
#: than 16 on the first 200 Provo contexts and 27% less on 64 ASSET prompts.
AUTO_CONTEXTS_PER_PASS: dict[str, int] = {"cpu": 64, "cuda": 256}

_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}
#: The ``dtype`` names :func:`resolve_dtype` accepts (any case); ``auto`` keeps what the checkpoint declares.
DTYPE_NAMES: tuple[str, ...] = (*_DTYPES, "auto")


def resolve_device(device: str) -> torch.device:
    """``auto`` means CUDA when available, else CPU; an explicit ``cuda`` without a GPU is an error, not a fallback."""
    device = (device or "auto").strip().lower()
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda" or device.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ModelLoadError(f"device '{device}' requested but CUDA is not available (use --device cpu)")
        return torch.device(device)
    raise ModelLoadError(f"unknown device '{device}': expected cpu, cuda, cuda:N or auto")


def resolve_dtype(dtype: str) -> torch.dtype | Literal["auto"]:
    """Map the ``dtype`` model argument to a torch dtype; ``auto`` keeps what the checkpoint's config declares."""
    key = (dtype or "float32").strip().lower()
    if key == "auto":
        return "auto"
    if key not in _DTYPES:
        raise ModelLoadError(f"unknown dtype '{dtype}': expected float32, bfloat16, float16 or auto")
    return _DTYPES[key]


def resolve_batch_size(
    batch_size: int | str,
    device: torch.device,
    max_batch: int | None = None,
    auto: dict[str, int] = AUTO_BATCH_SIZE,
) -> int:
    """An explicit positive integer, or ``auto``: a fixed per-device default (from the ``auto`` table: the query
    scorer's :data:`AUTO_BATCH_SIZE`, the one-token engines' :data:`AUTO_STEP_ROWS`) capped by ``max_batch``."""
    if isinstance(batch_size, str):
        text = batch_size.strip().lower()
        if text in ("", "auto"):
            size = auto.get(device.type, auto["cpu"])
            return max(1, min(size, max_batch)) if max_batch else size
        try:
            batch_size = int(text)
        except ValueError:
            raise ModelLoadError(f"batch size '{batch_size}' is neither a positive integer nor 'auto'") from None
    if batch_size < 1:
        raise ModelLoadError(f"batch size must be at least 1, got {batch_size}")
    return min(batch_size, max_batch) if max_batch else batch_size

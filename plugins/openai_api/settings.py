"""``--model-args`` of the ``openai`` adapter, read and checked before anything is sent.

Every key is validated up front with an error that names it, because a typo found after an hour of API calls is
an hour lost. The API key itself is never a model argument: ``api_key_env`` names the environment variable that
holds it, so it cannot end up in ``results.json``, the stored responses or a shell history.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from harness.errors import ModelLoadError
from plugins.openai_api.cloze import CLOZE_STYLES

OPENAI_BASE_URL = "https://api.openai.com/v1"

#: Server families whose sampling defaults differ (see ``neutral_sampling``); ``auto`` asks the server.
SERVERS: tuple[str, ...] = ("auto", "openai", "llama-cpp", "vllm", "other")

#: Keys understood, with what each takes (shown in the error for an unknown key and in docs/api-models.md).
MODEL_ARGS: dict[str, str] = {
    "base_url": f"server URL up to /v1 (default {OPENAI_BASE_URL})",
    "api_key_env": "environment variable holding the API key (default OPENAI_API_KEY)",
    "chat": "true: /chat/completions; false: /completions (default true)",
    "server": "auto | openai | llama-cpp | vllm | other (default auto: asked from the server)",
    "concurrency": "requests in flight at once (default 8)",
    "timeout": "seconds to wait for one response (default 60)",
    "max_attempts": "attempts per request before the run stops (default 8)",
    "retry_budget": "retries allowed over the whole run (default 200)",
    "backoff": "first backoff wait in seconds, doubled per retry up to backoff_max (default 0.5)",
    "backoff_max": "longest backoff wait in seconds (default 30)",
    "use_n": "true: ask for all samples of a prompt in one request with n= (default: true on OpenAI and vLLM)",
    "seed": "true: send a per-sample seed (default true)",
    "cloze": "independent | list: how sample_words asks (default independent)",
    "top_logprobs": "alternatives per position for next-token label scores on chat (default 20)",
    "echo_logprobs": "alternatives per prompt position asked from a server with shifted echo (default 100)",
    "price_input": "USD per million prompt tokens",
    "price_output": "USD per million completion tokens",
    "price_table": "YAML/JSON file: {model: {input: USD per 1M, output: USD per 1M}}",
    "instances_per_block": "instances whose requests are sent together (default 16)",
    "cache_dir": "where API responses are stored (default: the run's output directory, api-cache/)",
}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class OpenAISettings:
    model: str
    base_url: str
    api_key_env: str
    chat: bool
    server: str
    concurrency: int
    timeout: float
    max_attempts: int
    retry_budget: int
    backoff: float
    backoff_max: float
    use_n: bool | None
    send_seed: bool
    cloze: str
    top_logprobs: int
    echo_logprobs: int
    price_input: float | None
    price_output: float | None
    instances_per_block: int
    cache_dir: Path | None

    @property
    def is_openai(self) -> bool:
        return urlparse(self.base_url).hostname == "api.openai.com"

    def api_key(self) -> str:
        """The key from the environment. Local servers need none; OpenAI does, and says which variable is empty."""
        key = os.environ.get(self.api_key_env, "")
        if not key:
            if self.is_openai:
                raise ModelLoadError(
                    f"--model-args api_key_env={self.api_key_env}: the environment variable is not set "
                    f"(export {self.api_key_env}=... before the run)"
                )
            return "no-key"
        return key

    @property
    def prices(self) -> dict[str, float] | None:
        if self.price_input is None and self.price_output is None:
            return None
        return {"input_per_million": self.price_input or 0.0, "output_per_million": self.price_output or 0.0}


def _bool(key: str, value: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ModelLoadError(f"--model-args {key}={value}: expected true or false")


def _number(key: str, value: str, *, integer: bool, minimum: float) -> Any:
    try:
        number: float = int(value) if integer else float(value)
    except ValueError:
        number = minimum - 1
    if not number >= minimum:
        what = "an integer" if integer else "a number"
        raise ModelLoadError(f"--model-args {key}={value}: expected {what} >= {minimum:g}")
    return number


def _price_from_table(path: str, model: str) -> tuple[float, float]:
    file = Path(path).expanduser()
    try:
        table = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ModelLoadError(f"--model-args price_table={path}: cannot read it ({exc})") from None
    if not isinstance(table, dict) or model not in table:
        known = ", ".join(sorted(table)) if isinstance(table, dict) else "none"
        raise ModelLoadError(f"{file}: no prices for model '{model}' (models in the table: {known})")
    entry = table[model]
    try:
        return float(entry["input"]), float(entry["output"])
    except (TypeError, KeyError, ValueError):
        raise ModelLoadError(
            f"{file}: model '{model}': expected {{input: USD per 1M tokens, output: USD per 1M tokens}}, "
            f"got {json.dumps(entry, default=str)}"
        ) from None


def parse_settings(model: str, args: dict[str, str]) -> OpenAISettings:
    unknown = sorted(set(args) - set(MODEL_ARGS))
    if unknown:
        raise ModelLoadError(f"unknown --model-args for openai: {', '.join(unknown)} (known: {', '.join(MODEL_ARGS)})")
    base_url = args.get("base_url", OPENAI_BASE_URL).rstrip("/")
    if urlparse(base_url).scheme not in ("http", "https"):
        raise ModelLoadError(f"--model-args base_url={base_url}: expected an http:// or https:// URL")
    server = args.get("server", "auto")
    if server not in SERVERS:
        raise ModelLoadError(f"--model-args server={server}: expected one of {', '.join(SERVERS)}")
    cloze = args.get("cloze", "independent")
    if cloze not in CLOZE_STYLES:
        raise ModelLoadError(f"--model-args cloze={cloze}: expected one of {', '.join(CLOZE_STYLES)}")
    prices = {
        key: _number(key, args[key], integer=False, minimum=0) if key in args else None
        for key in ("price_input", "price_output")
    }
    price_input, price_output = prices["price_input"], prices["price_output"]
    if "price_table" in args:
        price_input, price_output = _price_from_table(args["price_table"], model)
    return OpenAISettings(
        model=model,
        base_url=base_url,
        api_key_env=args.get("api_key_env", "OPENAI_API_KEY"),
        chat=_bool("chat", args.get("chat", "true")),
        server=server,
        concurrency=_number("concurrency", args.get("concurrency", "8"), integer=True, minimum=1),
        timeout=_number("timeout", args.get("timeout", "60"), integer=False, minimum=0.001),
        max_attempts=_number("max_attempts", args.get("max_attempts", "8"), integer=True, minimum=1),
        retry_budget=_number("retry_budget", args.get("retry_budget", "200"), integer=True, minimum=0),
        backoff=_number("backoff", args.get("backoff", "0.5"), integer=False, minimum=0),
        backoff_max=_number("backoff_max", args.get("backoff_max", "30"), integer=False, minimum=0),
        use_n=_bool("use_n", args["use_n"]) if "use_n" in args else None,
        send_seed=_bool("seed", args.get("seed", "true")),
        cloze=cloze,
        top_logprobs=_number("top_logprobs", args.get("top_logprobs", "20"), integer=True, minimum=1),
        echo_logprobs=_number("echo_logprobs", args.get("echo_logprobs", "100"), integer=True, minimum=1),
        price_input=price_input,
        price_output=price_output,
        instances_per_block=_number(
            "instances_per_block", args.get("instances_per_block", "16"), integer=True, minimum=1
        ),
        cache_dir=Path(args["cache_dir"]).expanduser() if args.get("cache_dir") else None,
    )

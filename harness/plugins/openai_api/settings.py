"""``--model-args`` of the ``openai`` adapter, declared once (``OPTIONS``) and checked before anything is sent.

Every key is checked up front with an error that names it, because a typo found after an hour of API calls is an
hour lost (``harness.options``: unknown keys, booleans and numbers read with the project's one grammar). The API
key itself is never a model argument: ``api_key_env`` names the environment variable that holds it, so it cannot end
up in ``results.json``, the stored responses or a shell history.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from harness.api import (
    HarnessError,
    ModelLoadError,
    Option,
    Options,
    boolean,
    int_range,
    load_yaml,
    non_negative_float,
    non_negative_int,
    number_range,
    one_of,
    optional,
    positive_int,
    read_utf8,
    shorten,
    shorten_repr,
    text,
    yaml_problem,
)
from harness.plugins.openai_api.cloze import CLOZE_STYLES

OPENAI_BASE_URL = "https://api.openai.com/v1"

#: Server families whose sampling defaults differ (``harness.plugins.openai_api.endpoint``); ``auto`` asks the server.
SERVERS: tuple[str, ...] = ("auto", "openai", "llama-cpp", "vllm", "other")


#: Requests in flight at once, at most (each is a connection; thousands only get the client refused or killed).
MAX_CONCURRENCY = 1024
#: The longest wait, in seconds, for one response or between two attempts.
MAX_WAIT_S = 86_400.0


def http_url(value: Any) -> str:
    """An ``http://`` or ``https://`` URL with a host (and a numeric port, if any), without a trailing slash."""
    url = text(value).strip().rstrip("/")
    try:
        parsed = urlparse(url)
        ok = parsed.scheme in ("http", "https") and bool(parsed.hostname) and not any(c.isspace() for c in url)
        parsed.port  # noqa: B018 - raises ValueError for a port that is not a number from 0 to 65535
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"expected an http:// or https:// URL, got {shorten_repr(value)}")
    return url


def directory(value: Any) -> Path | None:
    """A directory (``~`` expanded); the empty string means none given."""
    path = text(value)
    return Path(path).expanduser() if path else None


#: The ``--model-args`` of ``openai:MODEL`` (``harness ls models --options``; the table in docs/api-models.md).
OPTIONS = Options(
    Option("base_url", http_url, OPENAI_BASE_URL, "server URL up to /v1", type="http(s) URL"),
    Option("api_key_env", text, "OPENAI_API_KEY", "environment variable holding the API key"),
    Option("chat", boolean, True, "true: /chat/completions; false: /completions"),
    Option(
        "server",
        one_of(*SERVERS),
        "auto",
        "server family, whose sampling defaults are neutralised (auto: asked from the server)",
        type=" | ".join(SERVERS),
    ),
    Option("concurrency", int_range(1, MAX_CONCURRENCY), 8, "requests in flight at once", type="int >= 1"),
    Option(
        "timeout",
        number_range(0, MAX_WAIT_S, low_open=True, as_float=True),
        60.0,
        "seconds to wait for one response",
        "float > 0",
    ),
    Option("max_attempts", positive_int, 8, "attempts per request before the run stops"),
    Option("retry_budget", non_negative_int, 200, "retries allowed over the whole run", type="int >= 0"),
    Option(
        "backoff",
        number_range(0, MAX_WAIT_S, as_float=True),
        0.5,
        "first backoff wait in seconds, doubled per retry up to backoff_max",
        type="float >= 0",
    ),
    Option(
        "backoff_max",
        number_range(0, MAX_WAIT_S, as_float=True),
        30.0,
        "longest backoff wait in seconds",
        type="float >= 0",
    ),
    Option(
        "use_n",
        optional(boolean),
        None,
        "true: ask for all samples of a prompt in one request with n= (default: true on OpenAI and vLLM)",
        type="bool",
    ),
    Option("seed", boolean, True, "true: send a per-sample seed"),
    Option(
        "cloze",
        one_of(*CLOZE_STYLES),
        "independent",
        "how sample_words asks: one word per request, or one list of n words",
        type=" | ".join(CLOZE_STYLES),
    ),
    Option("top_logprobs", positive_int, 20, "alternatives per position for next-token label scores on chat"),
    Option(
        "echo_logprobs", positive_int, 100, "alternatives per prompt position asked from a server with shifted echo"
    ),
    Option("price_input", optional(non_negative_float), None, "USD per million prompt tokens", type="float >= 0"),
    Option("price_output", optional(non_negative_float), None, "USD per million completion tokens", type="float >= 0"),
    Option(
        "price_table",
        optional(text),
        None,
        "YAML/JSON file: {model: {input: USD per 1M, output: USD per 1M}} (replaces price_input/price_output)",
        type="file",
    ),
    Option("instances_per_block", positive_int, 16, "instances whose requests are sent together"),
    Option(
        "cache_dir",
        directory,
        None,
        "where API responses are stored (default: the run's output directory, api-cache/)",
        type="directory",
    ),
)


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


def _price_from_table(path: str, model: str) -> tuple[float, float]:
    file = Path(path).expanduser()
    try:
        table = load_yaml(read_utf8(file, "price table", 1 << 20))
    except HarnessError as exc:
        raise ModelLoadError(f"--model-args price_table={shorten_repr(path)}: cannot read it ({exc})") from None
    except yaml.YAMLError as exc:
        raise ModelLoadError(
            f"--model-args price_table={shorten_repr(path)}: not valid YAML{yaml_problem(exc)}"
        ) from None
    if not isinstance(table, dict) or model not in table:
        known = shorten(", ".join(sorted(map(str, table))), 200) if isinstance(table, dict) else "none"
        raise ModelLoadError(f"{file}: no prices for model '{model}' (models in the table: {known})")
    entry = table[model]
    try:
        prices = float(entry["input"]), float(entry["output"])
    except (TypeError, KeyError, ValueError, OverflowError):
        prices = (-1.0, -1.0)
    if not all(0 <= price < float("inf") for price in prices):
        raise ModelLoadError(
            f"{file}: model '{model}': expected {{input: USD per 1M tokens, output: USD per 1M tokens}} (numbers "
            f">= 0), got {shorten(json.dumps(entry, default=str), 120)}"
        )
    return prices


def parse_settings(model: str, args: dict[str, Any]) -> OpenAISettings:
    """The settings of ``openai:MODEL`` from its ``--model-args``; raises ``OptionError`` or ``ModelLoadError``
    naming the option at fault."""
    given = OPTIONS.parse(args, f"--model-args for openai:{model}")
    price_input, price_output = given["price_input"], given["price_output"]
    if given["price_table"] is not None:
        price_input, price_output = _price_from_table(given["price_table"], model)
    return OpenAISettings(
        model=model,
        base_url=given["base_url"],
        api_key_env=given["api_key_env"],
        chat=given["chat"],
        server=given["server"],
        concurrency=given["concurrency"],
        timeout=given["timeout"],
        max_attempts=given["max_attempts"],
        retry_budget=given["retry_budget"],
        backoff=given["backoff"],
        backoff_max=given["backoff_max"],
        use_n=given["use_n"],
        send_seed=given["seed"],
        cloze=given["cloze"],
        top_logprobs=given["top_logprobs"],
        echo_logprobs=given["echo_logprobs"],
        price_input=price_input,
        price_output=price_output,
        instances_per_block=given["instances_per_block"],
        cache_dir=given["cache_dir"],
    )

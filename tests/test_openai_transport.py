"""The API adapter's settings, retries and response store, against a canned OpenAI-style upstream (no model).

The upstream answers ``/v1/completions`` with a fixed completion and counts what reaches it; the fault proxy
(``tests/fault_proxy.py``) sits in front and injects rate limits, server errors, stalls and cut connections.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.errors import HarnessError, ModelLoadError
from harness.models import ModelSpec
from harness.options import OptionError
from harness.plugins.openai_api.adapter import OpenAIAdapter
from harness.plugins.openai_api.retry import RetryBudgetSpent, RetryPolicy
from harness.plugins.openai_api.settings import OPTIONS, parse_settings
from harness.plugins.openai_api.transport import ApiCall, ApiTransport
from harness.run.options import RunOptions
from harness.run.runner import run
from tests.fault_proxy import Fault, FaultProxy
from tests.helpers import REPO

SECRET = "sk-test-0123456789abcdef-secret"


class _Upstream(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bodies: list[dict] = []
        self.lock = threading.Lock()
        self.status = 200

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Upstream

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.bodies.append(body)
        if self.server.status != 200:
            # Like OpenAI's 401, which quotes the key it was given.
            payload = {"error": {"message": f"Incorrect API key provided: {self.headers['Authorization'][7:]}"}}
            data = json.dumps(payload).encode()
            self.send_response(self.server.status)
        else:
            text = f" word{body.get('seed', 0) % 7}"
            payload = {
                "id": "x",
                "object": "text_completion",
                "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
            }
            data = json.dumps(payload).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def upstream() -> Iterator[_Upstream]:
    server = _Upstream()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _transport(url: str, tmp_path: Path, **policy: float) -> ApiTransport:
    settings = {"max_attempts": 6, "budget": 50, "base_delay": 0.01, "max_delay": 0.05, **policy}
    return ApiTransport(
        base_url=f"{url}/v1",
        api_key=SECRET,
        store_path=tmp_path / "api.jsonl",
        store_fingerprint="test",
        concurrency=4,
        timeout=1.0,
        policy=RetryPolicy(**settings),  # type: ignore[arg-type]
    )


def _calls(n: int) -> list[ApiCall]:
    return [ApiCall("completions", {"model": "m", "prompt": "p", "seed": i, "max_tokens": 3}, i) for i in range(n)]


def test_every_fault_is_retried_and_the_answers_match_a_clean_run(upstream: _Upstream, tmp_path: Path) -> None:
    clean = _transport(upstream.url, tmp_path / "clean").run(_calls(12))
    n_clean = len(upstream.bodies)
    faults = [
        Fault("rate_limit", retry_after=0.3),
        Fault("server_error"),
        Fault("stall", stall_seconds=3.0),
        Fault("cut"),
        None,
        Fault("rate_limit"),
    ]
    with FaultProxy(("127.0.0.1", upstream.server_address[1]), faults) as proxy:
        transport = _transport(proxy.url, tmp_path / "faulty")
        started = time.monotonic()
        responses = transport.run(_calls(12))
        elapsed = time.monotonic() - started
    assert responses == clean
    assert transport.stats.retries == 5 and transport.stats.sent == 12
    assert set(transport.stats.failures) == {"HTTP 429", "HTTP 500", "timeout", "connection"}
    # Retry-After: 0.3 s is honoured although the backoff alone would wait at most 0.05 s.
    assert elapsed >= 0.3
    # The stalled and the cut request reached the server, so it saw two more requests than the clean run's 12.
    assert len(upstream.bodies) - n_clean == 14
    # One stored line per call: nothing lost, nothing stored twice.
    lines = [json.loads(line) for line in (tmp_path / "faulty" / "api.jsonl").read_text().splitlines()[1:]]
    assert sorted(r["seed"] for r in lines) == list(range(12)) and len({r["id"] for r in lines}) == 12


def test_a_spent_budget_stops_the_run_keeping_what_was_answered(upstream: _Upstream, tmp_path: Path) -> None:
    faults = [None, None, None] + [Fault("server_error")] * 40
    with FaultProxy(("127.0.0.1", upstream.server_address[1]), faults) as proxy:
        transport = _transport(proxy.url, tmp_path, budget=3)
        transport.concurrency = 1
        with pytest.raises(RetryBudgetSpent, match=r"retry budget spent \(3 retries.*HTTP 500.*run the same command"):
            transport.run(_calls(6))
    answered = len(transport.store.records)
    assert answered == 3
    # The rerun sends only the three that are missing; an identical rerun after that sends nothing.
    again = _transport(upstream.url, tmp_path)
    again.run(_calls(6))
    assert again.stats.sent == 3 and again.stats.from_store == 3
    third = _transport(upstream.url, tmp_path)
    third.run(_calls(6))
    assert third.stats.sent == 0 and third.stats.from_store == 6


def test_client_errors_are_not_retried_and_never_show_the_key(upstream: _Upstream, tmp_path: Path) -> None:
    upstream.status = 401
    transport = _transport(upstream.url, tmp_path)
    with pytest.raises(HarnessError) as info:
        transport.run(_calls(1))
    assert "HTTP 401" in str(info.value) and "***" in str(info.value)
    assert SECRET not in str(info.value)
    assert len(upstream.bodies) == 1 and transport.stats.retries == 0


def test_model_args_are_checked_before_anything_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(OptionError, match=r"--model-args for openai:m: unknown option 'temprature' \(accepted: api_"):
        parse_settings("m", {"temprature": "1"})
    with pytest.raises(OptionError, match="option 'concurrency': expected a positive integer, got '0'"):
        parse_settings("m", {"concurrency": "0"})
    with pytest.raises(OptionError, match="option 'cloze': expected one of 'independent', 'list', got 'lists'"):
        parse_settings("m", {"cloze": "lists"})
    with pytest.raises(OptionError, match="option 'base_url': expected an http:// or https:// URL, got 'ftp://h/v1'"):
        parse_settings("m", {"base_url": "ftp://h/v1"})
    with pytest.raises(OptionError, match="option 'retry_budget': expected an integer >= 0, got '-1'"):
        parse_settings("m", {"retry_budget": "-1"})
    # One boolean grammar everywhere: the empty string is not a boolean.
    with pytest.raises(OptionError, match="option 'chat': expected true or false, got ''"):
        parse_settings("m", {"chat": ""})
    given = parse_settings(
        "m", {"base_url": "http://h:1/v1/", "chat": "No", "use_n": "on", "retry_budget": "0", "cache_dir": ""}
    )
    assert (given.base_url, given.chat, given.use_n, given.retry_budget, given.cache_dir) == (
        "http://h:1/v1", False, True, 0, None
    )
    default = parse_settings("m", {})
    assert (default.use_n, default.timeout, default.backoff_max, default.prices) == (None, 60.0, 30.0, None)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelLoadError, match="api_key_env=OPENAI_API_KEY: the environment variable is not set"):
        parse_settings("gpt-4o-mini", {}).api_key()
    # A local server needs no key.
    assert parse_settings("m", {"base_url": "http://127.0.0.1:1/v1"}).api_key() == "no-key"


def test_the_options_are_declared_once_and_documented() -> None:
    assert OpenAIAdapter.options is OPTIONS
    assert [line.split("\t")[0] for line in OPTIONS.describe()] == OPTIONS.names()
    docs = (REPO / "docs" / "api-models.md").read_text().split("## `--model-args`", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in docs.splitlines() if line.startswith("| `")]
    assert [name for row in rows for name in re.findall(r"`(\w+)`", row)] == OPTIONS.names()


def test_price_table(tmp_path: Path) -> None:
    table = tmp_path / "prices.yaml"
    table.write_text("gpt-4o-mini: {input: 0.15, output: 0.6}\n")
    settings = parse_settings("gpt-4o-mini", {"price_table": str(table)})
    assert settings.prices == {"input_per_million": 0.15, "output_per_million": 0.6}
    with pytest.raises(ModelLoadError, match=r"prices.yaml: no prices for model 'other' \(models in the table: gpt-4o"):
        parse_settings("other", {"price_table": str(table)})


def test_a_chat_endpoint_refuses_loglikelihood_before_the_run(tmp_path: Path) -> None:
    spec = ModelSpec("openai", "smollm2", {"base_url": "http://127.0.0.1:9/v1", "chat": "true"})
    assert OpenAIAdapter.refusal(spec, "loglikelihood") is not None
    assert OpenAIAdapter.refusal(spec, "next_token") is None
    assert OpenAIAdapter.refusal(spec, "similarity") is not None
    completions = ModelSpec("openai", "smollm2", {"base_url": "http://127.0.0.1:9/v1", "chat": "false"})
    assert OpenAIAdapter.refusal(completions, "loglikelihood") is None
    options = RunOptions(
        tasks=["pragmatics-mcq"],
        model=spec,
        output_dir=tmp_path,
        data_dir=str(REPO / "tests" / "fixtures"),
    )
    # Nothing listens on port 9: the refusal comes before any connection is tried.
    with pytest.raises(HarnessError, match="cannot answer the 'loglikelihood' requests that scorer 'mcq_string'.*chat"):
        run(options)

"""``--model-args`` of the mock, hf and openai adapters: unknown keys, bad values, numbers out of range, files that
cannot be read. Every case fails before a model is built (the hf cases name a checkpoint that does not exist, so
that nothing could be loaded even if a value passed)."""

from __future__ import annotations

from tests.malformed.case import FIXTURES, Case, write_bytes

BASE = ("run", "--tasks", "provo", "--data-dir", str(FIXTURES), "--output-dir", "{tmp}/out", "--limit", "2")
NO_MODEL = "/nonexistent/checkpoint"


def mock(args: str, expect: str, case_id: str) -> Case:
    return Case(case_id, (*BASE, "--model", "mock:t", "--model-args", args), expect)


def hf(args: str, expect: str, case_id: str) -> Case:
    return Case(case_id, (*BASE, "--model", f"hf:{NO_MODEL}", "--device", "cpu", "--model-args", args), expect)


def openai(args: str, expect: str, case_id: str, **extra: object) -> Case:
    argv = (*BASE, "--model", "openai:gpt-x", "--model-args", args)
    return Case(case_id, argv, expect, **extra)  # type: ignore[arg-type]


MOCK = "--model-args for mock:t: "
HF = f"--model-args for hf:{NO_MODEL}: "
OPENAI = "--model-args for openai:gpt-x: "

CASES: list[Case] = [
    # ------------------------------------------------------------------------------------------ the grammar
    mock("dim", "--model-args: expected key=value, got 'dim'", "model-args-no-equals"),
    mock("=4", "--model-args: expected key=value, got '=4'", "model-args-no-key"),
    mock("dim=4,dim=8", "--model-args: 'dim' is given twice", "model-args-twice"),
    mock("x" * 100_000 + "=1", "--model-args for mock:t: unknown option 'xxxx", "model-args-huge-key"),
    # ------------------------------------------------------------------------------------------------- mock
    mock("dims=4", MOCK + "unknown option 'dims' (accepted: block_size, dim,", "mock-unknown-key"),
    mock("block_size=0", MOCK + "option 'block_size': expected a positive integer, got '0'", "mock-block-size-zero"),
    mock(
        "block_size=-3", MOCK + "option 'block_size': expected a positive integer, got '-3'", "mock-block-size-negative"
    ),
    mock(
        "block_size=1e20",
        MOCK + "option 'block_size': expected a positive integer <= 1000000, got '1e20'",
        "mock-block-size-huge",
    ),
    mock(
        "block_size=" + "9" * 5000,
        MOCK + "option 'block_size': expected a positive integer",
        "mock-block-size-5000-digits",
    ),
    mock(
        "block_size=2.5",
        MOCK + "option 'block_size': expected a positive integer, got '2.5'",
        "mock-block-size-fraction",
    ),
    mock("block_size=", MOCK + "option 'block_size': expected a positive integer, got ''", "mock-block-size-empty"),
    mock("zipf=-1", MOCK + "option 'zipf': expected a positive number, got '-1'", "mock-zipf-negative"),
    mock("zipf=inf", MOCK + "option 'zipf': expected a positive number (a finite number), got 'inf'", "mock-zipf-inf"),
    mock("zipf=nan", MOCK + "option 'zipf': expected a positive number (a finite number), got 'nan'", "mock-zipf-nan"),
    mock("zipf=1e999", MOCK + "option 'zipf'", "mock-zipf-overflow"),
    mock("reject_rate=1", MOCK + "option 'reject_rate': expected a number in (0, 1), got '1'", "mock-reject-rate-one"),
    mock(
        "reject_rate=abc",
        MOCK + "option 'reject_rate': expected a number in (0, 1), got 'abc'",
        "mock-reject-rate-text",
    ),
    mock("dim=0", MOCK + "option 'dim': expected a positive integer, got '0'", "mock-dim-zero"),
    mock("dim=10000000000", MOCK + "option 'dim': expected a positive integer <= 1000000", "mock-dim-huge"),
    mock(
        "label_tokens=bytes",
        MOCK + "option 'label_tokens': expected one of 'words', 'chars', got 'bytes'",
        "mock-label-tokens",
    ),
    mock("latency=1e300", MOCK + "option 'latency': expected a number from 0 to 3600", "mock-latency-huge"),
    mock("latency=-1", MOCK + "option 'latency': expected a number from 0 to 3600, got '-1'", "mock-latency-negative"),
    mock("max_words=many", MOCK + "option 'max_words': expected a positive integer, got 'many'", "mock-max-words-text"),
    # --------------------------------------------------------------------------------------------------- hf
    hf("dtype=float64", HF + "option 'dtype': expected one of", "hf-dtype-float64"),
    hf("dtype=int8", HF + "option 'dtype': expected one of", "hf-dtype-unknown"),
    hf("dtypes=float32", HF + "unknown option 'dtypes' (accepted: contexts_per_pass, dtype,", "hf-unknown-key"),
    hf("device=cuda", HF + "unknown option 'device'", "hf-device-as-model-arg"),
    hf("max_batch=0", HF + "option 'max_batch': expected a positive integer, got '0'", "hf-max-batch-zero"),
    hf(
        "contexts_per_pass=1e20",
        HF + "option 'contexts_per_pass': expected a positive integer <= 1000000",
        "hf-contexts-huge",
    ),
    hf(
        "trust_remote_code=maybe",
        HF + "option 'trust_remote_code': expected true or false, got 'maybe'",
        "hf-trust-remote-code",
    ),
    # ----------------------------------------------------------------------------------------------- openai
    openai("bogus=1", OPENAI + "unknown option 'bogus' (accepted: api_key_env, backoff,", "openai-unknown-key"),
    openai(
        "base_url=ftp://h/v1",
        OPENAI + "option 'base_url': expected an http:// or https:// URL, got 'ftp://h/v1'",
        "openai-base-url-ftp",
    ),
    openai(
        "base_url=http://",
        OPENAI + "option 'base_url': expected an http:// or https:// URL, got 'http://'",
        "openai-base-url-no-host",
    ),
    openai(
        "base_url=localhost:8080",
        OPENAI + "option 'base_url': expected an http:// or https:// URL",
        "openai-base-url-no-scheme",
    ),
    openai(
        "base_url=http://h:99999/v1",
        OPENAI + "option 'base_url': expected an http:// or https:// URL",
        "openai-base-url-bad-port",
    ),
    openai(
        "base_url=http://[::1/v1",
        OPENAI + "option 'base_url': expected an http:// or https:// URL",
        "openai-base-url-bad-ipv6",
    ),
    openai(
        "concurrency=-1",
        OPENAI + "option 'concurrency': expected a positive integer, got '-1'",
        "openai-concurrency-negative",
    ),
    openai(
        "concurrency=0",
        OPENAI + "option 'concurrency': expected a positive integer, got '0'",
        "openai-concurrency-zero",
    ),
    openai(
        "concurrency=100000",
        OPENAI + "option 'concurrency': expected a positive integer <= 1024",
        "openai-concurrency-huge",
    ),
    openai(
        "timeout=0", OPENAI + "option 'timeout': expected a number above 0 and at most 86400", "openai-timeout-zero"
    ),
    openai("timeout=inf", OPENAI + "option 'timeout'", "openai-timeout-inf"),
    openai(
        "backoff=-1",
        OPENAI + "option 'backoff': expected a number from 0 to 86400, got '-1'",
        "openai-backoff-negative",
    ),
    openai("backoff=1e300", OPENAI + "option 'backoff': expected a number from 0 to 86400", "openai-backoff-huge"),
    openai("max_attempts=0", OPENAI + "option 'max_attempts': expected a positive integer", "openai-max-attempts-zero"),
    openai(
        "retry_budget=-1", OPENAI + "option 'retry_budget': expected an integer >= 0", "openai-retry-budget-negative"
    ),
    openai("chat=maybe", OPENAI + "option 'chat': expected true or false, got 'maybe'", "openai-chat-not-bool"),
    openai("server=tgi", OPENAI + "option 'server': expected one of", "openai-server-unknown"),
    openai("cloze=batch", OPENAI + "option 'cloze': expected one of", "openai-cloze-unknown"),
    openai("price_input=-1", OPENAI + "option 'price_input': expected a number >= 0", "openai-price-negative"),
    openai("price_output=nan", OPENAI + "option 'price_output'", "openai-price-nan"),
    openai("use_n=sometimes", OPENAI + "option 'use_n': expected true or false", "openai-use-n"),
    openai(
        "price_table={tmp}/missing.yaml",
        "missing.yaml: cannot read the price table (No such file",
        "openai-price-table-missing",
    ),
    openai(
        "price_table={tmp}/prices.yaml",
        "prices.yaml: line 1: not valid UTF-8",
        "openai-price-table-not-utf8",
        prepare=write_bytes("prices.yaml", b"gpt-x: {input: 1, output: 2} # \xe9\n"),
    ),
    openai(
        "price_table={tmp}/prices.yaml",
        "not valid YAML at line 1",
        "openai-price-table-bad-yaml",
        prepare=write_bytes("prices.yaml", "gpt-x: {input: 1, output: [2}\n"),
    ),
    openai(
        "price_table={tmp}/prices.yaml",
        "alias *a is not allowed",
        "openai-price-table-alias-bomb",
        prepare=write_bytes("prices.yaml", "a: &a [x, x, x]\nb: &b [*a, *a, *a]\ngpt-x: [*b, *b, *b]\n"),
    ),
    openai(
        "price_table={tmp}/prices.yaml",
        "no prices for model 'gpt-x' (models in the table: other)",
        "openai-price-table-no-entry",
        prepare=write_bytes("prices.yaml", "other: {input: 1, output: 2}\n"),
    ),
    openai(
        "price_table={tmp}/prices.yaml",
        "model 'gpt-x': expected {input: USD per 1M tokens, output: USD per 1M tokens}",
        "openai-price-table-bad-entry",
        prepare=write_bytes("prices.yaml", "gpt-x: {input: cheap, output: 2}\n"),
    ),
    openai(
        "price_table={tmp}/prices.yaml",
        "model 'gpt-x': expected {input: USD per 1M tokens, output: USD per 1M tokens} (numbers >= 0)",
        "openai-price-table-negative",
        prepare=write_bytes("prices.yaml", "gpt-x: {input: -1, output: .nan}\n"),
    ),
    openai(
        "price_table={tmp}/prices.yaml",
        "duplicate key 'gpt-x'",
        "openai-price-table-duplicate",
        prepare=write_bytes("prices.yaml", "gpt-x: {input: 1, output: 2}\ngpt-x: {input: 0, output: 0}\n"),
    ),
]

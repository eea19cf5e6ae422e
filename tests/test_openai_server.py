"""The API adapter against a real OpenAI-compatible server: llama-cpp-python's, serving the packaged SmolLM2 GGUF.

The same weights are loaded by the ``hf`` adapter (dequantised to float32), so prompt log-probabilities can be
checked against an independent implementation. llama.cpp computes with the 4-bit weights and 8-bit activations,
so values differ slightly: the stated tolerance is 0.15 nats per token (measured: at most 0.085 on these texts,
``benchmarks/compare_api_loglikelihood.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from benchmarks.compare_api_loglikelihood import QUERIES
from harness.errors import HarnessError
from harness.models import ModelSpec
from harness.plugins.hf.loading.model import LoadedModel
from harness.plugins.hf.queries.scoring import QueryScorer
from harness.plugins.openai_api.adapter import OpenAIAdapter
from harness.plugins.openai_api.echo import EchoLogprobs, continuation_logprobs
from harness.requests import GenerateRequest, LoglikelihoodRequest, NextTokenRequest, SampleWordsRequest

#: Every test here starts (or shares) the real llama.cpp server in a subprocess.
pytestmark = pytest.mark.slow

TOKEN_TOLERANCE = 0.15


def adapter(url: str, cache: Path, **args: str) -> OpenAIAdapter:
    return OpenAIAdapter(ModelSpec("openai", "smollm2", {"base_url": url, **args}, cache_dir=cache))


def test_the_server_is_recognised_and_its_shifted_echo_detected(api_server: str, tmp_path: Path) -> None:
    model = adapter(api_server, tmp_path, chat="false")
    assert model.server == "llama-cpp" and model.echo_shift == 1
    fit = model.info()["echo_alignment"]["fit"]
    assert fit[1] > 0.9 and fit[0] < 0.1
    # The neutral sampler settings replace llama.cpp's defaults (top_k=40, min_p=0.05, repeat_penalty=1.1).
    assert model.info()["sampling_overrides"]["repeat_penalty"] == 1.0


def test_loglikelihood_agrees_with_the_hf_adapter_after_the_correction(
    api_server: str, tmp_path: Path, smollm2: LoadedModel
) -> None:
    model = adapter(api_server, tmp_path, chat="false")
    api = model.loglikelihood_many(QUERIES)
    reference = QueryScorer(smollm2.model, smollm2.tokenizer, device=smollm2.device, batch_size=8)
    hf = reference.loglikelihood_many(QUERIES)
    for request, a, h in zip(QUERIES, api, hf, strict=True):
        assert a.tokens == h.tokens, request
        for x, y in zip(a.token_logprobs, h.token_logprobs, strict=True):
            assert abs(x - y) <= TOKEN_TOLERANCE, (request, a.token_logprobs, h.token_logprobs)
    # Hand-checked anchor (MODELS.md): log P(" Paris" | "The capital of France is") = -0.258 in float32.
    assert api[0].token_logprobs[0] == pytest.approx(-0.258, abs=0.05)
    # Read the OpenAI way, the same responses give each token its probability at the NEXT position: far off.
    stored = [r["response"] for r in model.transport.store.records.values()]
    paris = next(r for r in stored if r["choices"][0]["text"].startswith("The capital of France is Paris"))
    echo = EchoLogprobs.from_response(paris, "The capital of France is Paris", "test")
    assert echo.n_prompt == paris["usage"]["prompt_tokens"]
    naive, _ = continuation_logprobs(echo, 24, 0, "test")
    assert naive[0] is not None and naive[0] < -5


def test_next_token_over_all_label_tokens_on_completions(api_server: str, tmp_path: Path) -> None:
    model = adapter(api_server, tmp_path, chat="false")
    request = NextTokenRequest("Question: What is 2+2?\nAnswer:", (" 4", " 5"))
    (response,) = model.next_token_many([request])
    pieces = model.loglikelihood_many([LoglikelihoodRequest(request.context, c) for c in request.candidates])
    assert response.n_tokens == [2, 2] and response.tokens == [" ", " "]
    assert response.logprobs == pytest.approx([p.total for p in pieces])
    assert response.logprobs[0] > response.logprobs[1]


def test_chat_label_probabilities_come_from_top_logprobs(api_server: str, tmp_path: Path, smollm2: LoadedModel) -> None:
    model = adapter(api_server, tmp_path, chat="true", top_logprobs="200")
    request = NextTokenRequest("Which is a colour? Answer with one word: red or table.", (" Red", " The"))
    (response,) = model.next_token_many([request])
    assert response.n_tokens == [1, 1] and response.tokens == ["Red", "The"]
    # The same first-token probabilities from the hf adapter, on the prompt rendered with the model's chat template.
    rendered = smollm2.tokenizer.apply_chat_template(
        [{"role": "user", "content": request.context}], tokenize=False, add_generation_prompt=True
    )
    ids = smollm2.tokenizer(rendered, return_tensors="pt", add_special_tokens=False).input_ids
    with torch.no_grad():
        last = torch.log_softmax(smollm2.model(ids).logits[0, -1].float(), dim=-1)
    labels = [smollm2.tokenizer.convert_tokens_to_ids(t) for t in ("Red", "The")]
    assert response.logprobs == pytest.approx([float(last[i]) for i in labels], abs=TOKEN_TOLERANCE)
    # With few alternatives a label outside them is refused, never given a made-up probability.
    narrow = adapter(api_server, tmp_path / "narrow", chat="true", top_logprobs="2")
    with pytest.raises(HarnessError, match="label ' zebra' is not among the 3 first-token alternatives"):
        narrow.next_token_many([NextTokenRequest(request.context, (" Red", " zebra"))])


def test_generation_is_seeded_stored_and_resumable(api_server: str, tmp_path: Path) -> None:
    request = GenerateRequest(prompt="Once upon a time", n=3, seed=7, max_new_tokens=10)
    first = adapter(api_server, tmp_path / "a", chat="false")
    response = first.generate_many([request])[0]
    assert len(response.texts) == 3 and len(set(response.texts)) == 3
    assert response.finish_reasons == ["length"] * 3 and response.n_tokens == [10, 10, 10]
    assert response.usage == {"requests": 3, "prompt_tokens": 12, "completion_tokens": 30}
    # Same seeds on a fresh store: the server draws the same samples.
    fresh = adapter(api_server, tmp_path / "b", chat="false")
    assert fresh.generate_many([request])[0].texts == response.texts
    # Same store: nothing is sent (the echo probe was stored on load too).
    again = adapter(api_server, tmp_path / "a", chat="false")
    assert again.generate_many([request])[0].texts == response.texts
    assert again.run_stats() == {"sent": 0, "from_store": 4, "retries": 0, "failures": {}}
    # A sample added to the request is the only thing sent.
    more = adapter(api_server, tmp_path / "a", chat="false")
    bigger = more.generate_many([GenerateRequest(prompt="Once upon a time", n=4, seed=7, max_new_tokens=10)])[0]
    assert bigger.texts[:3] == response.texts and more.run_stats()["sent"] == 1


def test_chat_generation_uses_the_messages(api_server: str, tmp_path: Path) -> None:
    model = adapter(api_server, tmp_path, chat="true")
    request = GenerateRequest(prompt="unused", n=2, seed=1, max_new_tokens=8, messages=(("user", "Say hello."),))
    response = model.generate_many([request])[0]
    assert len(response.texts) == 2 and all(response.texts)
    # The chat template wraps the message: more prompt tokens than the message itself.
    assert response.usage is not None and response.usage["prompt_tokens"] > 2 * 5


def test_cloze_words_both_ways(api_server: str, tmp_path: Path) -> None:
    request = SampleWordsRequest(context="The dog chased the", n=6, seed=3, max_new_tokens=8)
    plain = adapter(api_server, tmp_path / "plain", chat="false").sample_words_many([request])[0]
    assert plain.n_words + sum(plain.rejected.values()) == 6 and plain.listed is None
    assert plain.usage is not None and plain.usage["requests"] == 6
    asked = adapter(api_server, tmp_path / "chat", chat="true").sample_words_many([request])[0]
    assert asked.n_words + sum(asked.rejected.values()) == 6
    listed = adapter(api_server, tmp_path / "list", chat="true", cloze="list").sample_words_many(
        [SampleWordsRequest(context="The dog chased the", n=10, seed=3)]
    )[0]
    assert listed.usage is not None and listed.usage["requests"] == 1 and listed.listed is not None
    kept = min(listed.listed, 10)
    assert listed.n_words == kept and listed.rejected.get("missing", 0) == 10 - kept


def test_n_parameter_falls_back_to_single_requests_when_the_server_ignores_it(api_server: str, tmp_path: Path) -> None:
    # llama.cpp answers a request with n=3 with one choice: the other two samples are asked one by one.
    model = adapter(api_server, tmp_path, chat="false", use_n="true")
    response = model.generate_many([GenerateRequest(prompt="Once upon a time", n=3, seed=7, max_new_tokens=6)])[0]
    assert len(response.texts) == 3 and response.n_tokens == [6, 6, 6]
    assert response.usage is not None and response.usage["requests"] == 3
    bodies = [r["response"] for r in model.transport.store.records.values()]
    assert sum(1 for b in bodies if len(b["choices"]) == 1) == len(bodies)

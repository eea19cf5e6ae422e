"""The mock model (``--model mock:NAME``, ``plugins/mock/adapter.py``), which the fast test tier runs on: its answers
are a function of the request alone (same request, same answer; another seed, another answer), they follow the
request (n samples, the token cap, stop strings, top-k), its numbers are right on small cases worked by hand, its
``--model-args`` are checked, and a whole run with it resumes to the results of an uninterrupted run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.models import ModelAdapter, ModelSpec
from harness.outputs.results import VOLATILE_KEYS
from harness.plugins.mock.adapter import COMMON_WORDS, MockAdapter
from harness.registry.manager import get_registry
from harness.requests import (
    DecodingConfig,
    GenerateRequest,
    LoglikelihoodRequest,
    NextTokenRequest,
    SampleWordsRequest,
    SimilarityRequest,
    WordDistributionRequest,
)
from tests.helpers import require_provo, samples_of

CONTEXT = "The old man walked his dog along the quiet river every morning before"
SOURCE = "The cat sat on the mat because the mat was warm."


def mock(**args: object) -> ModelAdapter:
    """The registered mock adapter, built as ``--model mock:test --model-args k=v,...`` builds it."""
    return get_registry().model("mock")(ModelSpec("mock", "test", args={k: str(v) for k, v in args.items()}))


def answer(adapter: ModelAdapter, kind: str, request: Any) -> Any:
    """One request answered through the kind's batched method (``<kind>_many``)."""
    (response,) = getattr(adapter, f"{kind}_many")([request])
    return response


def words(text: str) -> list[str]:
    return text.replace(".", " ").split()


# ---------------------------------------------------------------------------------------------- determinism
REQUESTS: list[tuple[str, Any]] = [
    ("sample_words", SampleWordsRequest(context=CONTEXT, n=200, seed=7)),
    ("word_distribution", WordDistributionRequest(context=CONTEXT, words=("cat",), epsilon=0.05, n_samples=50, seed=7)),
    ("generate", GenerateRequest(prompt="Simplify: " + SOURCE, n=5, seed=7, max_new_tokens=20)),
    ("loglikelihood", LoglikelihoodRequest(context="The cat ", continuation="sat on the mat")),
    ("next_token", NextTokenRequest(context="Answer:", candidates=(" 1", " 2", " 3"))),
    ("similarity", SimilarityRequest(prompt=SOURCE, options=("A cat sat.", "A dog ran."))),
]

OTHER: dict[str, Any] = {
    "sample_words": SampleWordsRequest(context="Another context", n=50, seed=1),
    "word_distribution": WordDistributionRequest(context="Another context", n_samples=5, seed=1),
    "generate": GenerateRequest(prompt="Another prompt", n=2, seed=1),
    "loglikelihood": LoglikelihoodRequest(context="A dog", continuation=" ran"),
    "next_token": NextTokenRequest(context="Label:", candidates=(" A", " B")),
    "similarity": SimilarityRequest(prompt="x", options=("y",)),
}


@pytest.mark.parametrize(("kind", "request_"), REQUESTS, ids=[kind for kind, _ in REQUESTS])
def test_the_same_request_gets_the_same_answer(kind: str, request_: Any) -> None:
    first = answer(mock(), kind, request_)
    # Another adapter, and the request twice in one batch after another one: the answer is the request's alone.
    assert answer(mock(block_size=1), kind, request_) == first
    assert getattr(mock(), f"{kind}_many")([OTHER[kind], request_, request_])[1:] == [first, first]


def test_another_seed_gives_another_answer() -> None:
    adapter = mock()
    words_a = answer(adapter, "sample_words", SampleWordsRequest(context=CONTEXT, n=200, seed=7))
    words_b = answer(adapter, "sample_words", SampleWordsRequest(context=CONTEXT, n=200, seed=8))
    assert words_a.counts != words_b.counts
    gen_a = answer(adapter, "generate", GenerateRequest(prompt=SOURCE, n=5, seed=7))
    gen_b = answer(adapter, "generate", GenerateRequest(prompt=SOURCE, n=5, seed=8))
    assert gen_a.texts != gen_b.texts


# ---------------------------------------------------------------------------------------------- following the request
def test_sample_words_accounts_for_every_sample() -> None:
    response = answer(mock(reject_rate=0.2), "sample_words", SampleWordsRequest(context=CONTEXT, n=500, seed=1))
    assert response.n_requested == 500
    assert sum(response.counts.values()) + sum(response.rejected.values()) == 500
    assert 0 < response.rejected["truncated"] < 500
    # The words are the context's own and common English words, lower-cased.
    assert set(response.counts) <= set(words(CONTEXT.lower())) | set(COMMON_WORDS)


def test_generate_gives_n_samples_within_the_token_cap() -> None:
    request = GenerateRequest(prompt=SOURCE, n=30, seed=3, max_new_tokens=4)
    response = answer(mock(), "generate", request)
    assert len(response.texts) == len(response.finish_reasons) == len(response.n_tokens) == 30
    assert all(1 <= len(words(text)) <= 4 for text in response.texts)
    assert all(k <= 4 for k in response.n_tokens)
    assert set(response.finish_reasons) == {"eos", "length"}  # 30 samples of 1 to 4 words: both ends occur
    for text, reason, k in zip(response.texts, response.finish_reasons, response.n_tokens, strict=True):
        assert (reason == "length") is (len(words(text)) == 4)
        assert k == len(words(text)) + (reason == "eos")
    # The mock's own cap (max_words) applies below the request's.
    capped = answer(mock(max_words=2), "generate", GenerateRequest(prompt=SOURCE, n=30, seed=3, max_new_tokens=50))
    assert max(len(words(text)) for text in capped.texts) == 2


def test_stop_strings_cut_the_text_with_finish_reason_stop() -> None:
    response = answer(mock(), "generate", GenerateRequest(prompt=SOURCE, n=10, seed=3, stop=(".",)))
    assert response.finish_reasons == ["stop"] * 10
    assert all("." not in text and text.strip() for text in response.texts)


def test_top_k_1_gives_a_single_word() -> None:
    request = GenerateRequest(prompt="ignored", source=SOURCE, n=10, seed=3, decoding=DecodingConfig(top_k=1))
    response = answer(mock(), "generate", request)
    # The source (what a seq2seq model is shown) leads the vocabulary: its last word, "warm", is the top word.
    assert {w for text in response.texts for w in words(text)} == {"warm"}


# ---------------------------------------------------------------------------------------------- numbers by hand
def test_zipf_weights_for_three_words_at_two_temperatures() -> None:
    adapter = mock()  # zipf exponent 1.1
    assert isinstance(adapter, MockAdapter)
    # Temperature 1: weights 1 : 2^-1.1 : 3^-1.1 = 1 : 0.466517 : 0.298653, over their sum 1.765170.
    at_1 = adapter._weights(3, DecodingConfig(temperature=1.0))
    assert at_1 == pytest.approx([0.566518, 0.264290, 0.169192], abs=1e-6)
    # Temperature 0.5 doubles the exponent: 1 : 2^-2.2 : 3^-2.2 = 1 : 0.217638 : 0.089194, sum 1.306831.
    at_half = adapter._weights(3, DecodingConfig(temperature=0.5))
    assert at_half == pytest.approx([0.765210, 0.166538, 0.068252], abs=1e-6)
    # Top-k 2 keeps the first two, renormalised: 1 / 1.466517 = 0.681888 and 0.466517 / 1.466517 = 0.318112.
    assert adapter._weights(3, DecodingConfig(top_k=2)) == pytest.approx([0.681888, 0.318112, 0.0], abs=1e-6)
    # Top-p 0.7 keeps the fewest words whose mass reaches 0.7: the first two (0.566518 + 0.264290 = 0.830808).
    assert adapter._weights(3, DecodingConfig(top_p=0.7)) == pytest.approx([0.681888, 0.318112, 0.0], abs=1e-6)


def test_sampled_word_frequencies_follow_the_zipf_weights() -> None:
    # An empty context: the vocabulary is the common words alone, "the" first.
    n = 20000
    response = answer(mock(reject_rate=0.001), "sample_words", SampleWordsRequest(context="", n=n, seed=0))
    top = 1 / sum(k**-1.1 for k in range(1, len(COMMON_WORDS) + 1))
    kept = sum(response.counts.values())
    # A binomial share: its standard deviation is sqrt(p (1 - p) / n) < 0.004; 4 of them around the weight.
    assert response.counts["the"] / kept == pytest.approx(top, abs=0.016)
    colder = answer(
        mock(reject_rate=0.001), "sample_words", SampleWordsRequest(context="", n=n, seed=0, temperature=0.5)
    )
    assert colder.counts["the"] / sum(colder.counts.values()) > response.counts["the"] / kept + 0.1


def test_the_cosine_of_a_text_with_itself_is_one() -> None:
    response = answer(mock(), "similarity", SimilarityRequest(prompt=SOURCE, options=(SOURCE, "A dog ran.")))
    assert response.cosines[0] == pytest.approx(1.0, abs=1e-12)
    assert -1.0 <= response.cosines[1] < 1.0


def test_next_token_probabilities_of_one_prompt_sum_below_one() -> None:
    candidates = (" 1", " 2", " 3", " 4")
    response = answer(mock(), "next_token", NextTokenRequest(context="Answer:", candidates=candidates))
    assert len(response.logprobs) == 4 and all(lp < 0 for lp in response.logprobs)
    # In log space: log(sum of probabilities) < 0, i.e. the labels leave some mass to other tokens.
    total = math.log(sum(math.exp(lp) for lp in response.logprobs))
    assert total < 0 and sum(math.exp(lp) for lp in response.logprobs) < 1.0
    assert response.tokens == ["1", "2", "3", "4"] and response.n_tokens == [1, 1, 1, 1]
    by_chars = answer(
        mock(label_tokens="chars"), "next_token", NextTokenRequest(context="Answer:", candidates=(" yes",))
    )
    assert by_chars.n_tokens == [4]


def test_loglikelihood_tokens_and_a_causal_prefix() -> None:
    adapter = mock()
    whole = answer(adapter, "loglikelihood", LoglikelihoodRequest(context="The cat ", continuation="sat on"))
    # The context's trailing space moves to the continuation, as a tokenizer attaches it to the next word.
    assert whole.tokens == [" sat", " on"]
    assert all(-6.1 <= lp <= -0.1 for lp in whole.token_logprobs)
    # A token's log-probability depends only on what precedes it.
    prefix = answer(adapter, "loglikelihood", LoglikelihoodRequest(context="The cat", continuation=" sat"))
    assert prefix.token_logprobs == whole.token_logprobs[:1]


# ---------------------------------------------------------------------------------------------- options and runs
@pytest.mark.parametrize(
    ("model_args", "message"),
    [
        ("bogus=1", "unknown option 'bogus' (accepted: block_size, "),
        ("block_size=0", "option 'block_size': expected a positive integer, got '0'"),
        ("label_tokens=bytes", "option 'label_tokens': expected one of 'words', 'chars'"),
    ],
)
def test_bad_model_args_are_refused_naming_the_option(model_args: str, message: str, cli: Any, tmp_path: Path) -> None:
    data = require_provo()
    args = ["run", "--tasks", "provo", "--model", "mock:test", "--model-args", model_args, "--limit", "1"]
    proc = cli(*args, "--output-dir", str(tmp_path), "--data-dir", str(data), check=False)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err and message in err, err
    assert "mock:test" in err


def _store(run_dir: Path) -> Path:
    (store,) = (run_dir / "responses").glob("provo-*.jsonl")
    return store


def _stable(run_dir: Path) -> dict[str, Any]:
    results = json.loads((run_dir / "results.json").read_text())
    return {k: v for k, v in results.items() if k not in (*VOLATILE_KEYS, "sources")}


def test_a_resumed_run_gives_the_results_of_an_uninterrupted_run(cli: Any, tmp_path: Path) -> None:
    data = require_provo()
    args = ["run", "--tasks", "provo", "--model", "mock:test", "--limit", "4", "--data-dir", str(data)]
    cli(*args, "--output-dir", str(tmp_path / "clean"))
    run_dir = tmp_path / "clean" / "mock__test"
    before = _stable(run_dir)
    samples = samples_of(run_dir, "provo").read_text()
    assert before["n-samples"]["provo"] == {"original": 2687, "effective": 4}

    # Lose the last stored answer (as a kill before it was written would), then run the same command again.
    store = _store(run_dir)
    lines = store.read_text().splitlines(keepends=True)
    ids = [json.loads(line)["id"] for line in lines if '"id"' in line]
    assert len(ids) == 4
    store.write_text("".join(lines[:-1]))
    (run_dir / "results.json").unlink()
    cli(*args, "--output-dir", str(tmp_path / "clean"))
    assert [json.loads(line)["id"] for line in store.read_text().splitlines() if '"id"' in line] == ids
    assert _stable(run_dir) == before
    assert samples_of(run_dir, "provo").read_text() == samples

    # Another block size answers every request the same way: the same metrics and samples.
    cli(*args, "--model-args", "block_size=1", "--output-dir", str(tmp_path / "blocks"))
    other = tmp_path / "blocks" / "mock__test"
    assert _stable(other)["metrics"] == before["metrics"]
    assert samples_of(other, "provo").read_text() == samples


def test_the_mock_answers_every_kind_it_claims() -> None:
    adapter_cls = get_registry().model("mock")
    assert adapter_cls.supported_requests == {
        "sample_words",
        "word_distribution",
        "generate",
        "loglikelihood",
        "next_token",
        "similarity",
    }
    for kind, request in REQUESTS:
        assert answer(mock(), kind, request) is not None
    assert np.isfinite(answer(mock(), "similarity", REQUESTS[-1][1]).cosines).all()

"""The model side of the next-token games (``harness/collect/tokens.py``, the ``TokenLevelModel`` capability of the
``hf`` and ``mock`` adapters): texts as tokens that join back to the text, next-token distributions that equal a plain
forward pass (BOS convention and window included), and seeded which-one rounds that do not depend on each other.

The ``hf`` side runs on tiny random models built from a config over a byte-level BPE tokenizer trained here on a few
sentences (no downloads), with a large initialisation so a position off by one shows; one slow test reads the real
packaged SmolLM2.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from harness.collect.tokens import (
    SampledRound,
    TokenisedText,
    choose_positions,
    load_token_model,
    sample_rounds,
    tokenise_texts,
    top1_tokens,
)
from harness.errors import HarnessError
from harness.models import TokenLevelModel
from tests.helpers import REPO, tiny_gpt2, tiny_llama

TEXTS = [
    ("t1", "The cat sat on the mat.\nThen the dog sat on the log, and the cat ran.  "),
    ("t2", "Über café naïve: 日本 🙂 résumé, the quick brown fox."),
]


def _logsumexp(values: np.ndarray) -> float:
    top = float(values.max())
    return top + math.log(float(np.exp(values - top).sum()))


# --------------------------------------------------------------------------------------------------------------------
# The mock model
# --------------------------------------------------------------------------------------------------------------------


@pytest.fixture
def mock() -> Any:
    return load_token_model("mock:test")


def test_mock_tokens_join_back_and_their_ids_are_the_same_in_another_process(mock: Any) -> None:
    assert isinstance(mock, TokenLevelModel)
    texts = tokenise_texts(mock, TEXTS)
    for text, (text_id, original) in zip(texts, TEXTS, strict=True):
        assert text.text_id == text_id and "".join(text.tokens) == original
        assert list(text.tokens) == mock.token_strings(list(text.token_ids))
    assert texts[0].tokens[:3] == ("The", " cat", " sat") and texts[0].tokens[-1] == "  "
    assert len(set(texts[0].token_ids)) == len(set(texts[0].tokens))  # one id per piece, one piece per id
    script = (
        "import json; from harness.collect.tokens import load_token_model; m = load_token_model('mock:other'); "
        f"print(json.dumps([m.token_ids(t) for _, t in {TEXTS!r}]))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO)
    assert json.loads(out.stdout) == [list(t.token_ids) for t in texts]


def test_mock_distributions_are_normalised_and_a_function_of_the_context(mock: Any) -> None:
    ids = mock.token_ids("the cat sat on the")
    answers = mock.next_token_logprobs([ids, [], ids[:2], ids])
    for logprobs in answers:
        assert logprobs.dtype == np.float64 and logprobs.shape == (4096,)
        assert abs(_logsumexp(logprobs)) < 1e-12 and np.isfinite(logprobs).all()
    np.testing.assert_array_equal(answers[0], answers[3])
    assert not np.array_equal(answers[0], answers[2])
    again = load_token_model("mock:test")
    again.token_ids("something else first")  # another table history: the same ids give the same distribution
    np.testing.assert_array_equal(again.next_token_logprobs([ids])[0], answers[0])
    # The common words lead, and they decode to words.
    best = int(np.argmax(mock.next_token_logprobs([[]])[0]))
    assert mock.token_strings([best])[0].strip().isalpha()


def test_sampled_rounds_are_seeded_per_position(mock: Any) -> None:
    texts = tokenise_texts(mock, TEXTS)
    positions = choose_positions(texts, 1, 2, None)
    rounds = sample_rounds(mock, texts, positions, samples_per_position=4, seed=7)
    assert len(rounds) == 4 * len(positions)
    assert [r.sample for r in rounds[:4]] == [0, 1, 2, 3]
    by_text = {t.text_id: t for t in texts}
    logprobs = {}
    for r in rounds:
        text = by_text[r.text_id]
        assert r.position_id == f"{r.text_id}-{r.index}" and r.context == "".join(text.tokens[: r.index])
        assert r.true_token == text.tokens[r.index] and r.true_token_id == text.token_ids[r.index]
        if r.position_id not in logprobs:
            logprobs[r.position_id] = mock.next_token_logprobs([text.token_ids[: r.index]])[0]
        assert r.generator_prob == math.exp(logprobs[r.position_id][r.sampled_token_id])
        assert r.generator_true_prob == math.exp(logprobs[r.position_id][r.true_token_id])
        assert isinstance(r.generator_prob, float) and 0 < r.generator_prob <= 1
        assert r.sampled_token == mock.token_strings([r.sampled_token_id])[0]
    # The same seed gives the same rounds; a position's draws do not depend on the others, their order or batching.
    assert sample_rounds(mock, texts, positions, 4, seed=7, batch_size=3) == rounds
    some = positions[::-3]
    alone = sample_rounds(mock, texts, some, 4, seed=7, batch_size=1)
    assert alone == [r for p in some for r in rounds if (r.text_id, r.index) == p]
    other = sample_rounds(mock, texts, positions, 4, seed=8)
    assert [r.sampled_token_id for r in other] != [r.sampled_token_id for r in rounds]


class PointMass:
    """A token-level model whose next token is certainly the id ``len(context)`` (the texts' ids are 0, 1, 2, ...)."""

    def token_ids(self, text: str) -> list[int]:
        return list(range(len(text.split())))

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        return [f" w{i}" for i in ids]

    def next_token_logprobs(self, contexts: Sequence[Sequence[int]]) -> list[np.ndarray]:
        out = []
        for context in contexts:
            logprobs = np.full(16, -np.inf)
            logprobs[len(context)] = 0.0
            out.append(logprobs)
        return out


def test_a_draw_of_the_true_token_is_kept_as_the_true_token() -> None:
    model = PointMass()
    assert isinstance(model, TokenLevelModel)
    texts = tokenise_texts(model, [("x", "a b c d")])
    rounds = sample_rounds(model, texts, [("x", 2)], samples_per_position=3, seed=0)
    assert rounds == [
        SampledRound("x-2", "x", 2, " w0 w1", " w2", " w2", 2, 2, 1.0, 1.0, sample) for sample in range(3)
    ]
    assert top1_tokens(model, texts, [("x", 2), ("x", 0)]) == {"x-2": (" w2", 1.0), "x-0": (" w0", 1.0)}


def test_positions_by_hand() -> None:
    text = TokenisedText("a", ("A", " b", "\n", " c", " d", "", " e"), (0, 1, 2, 3, 4, 5, 6))
    other = TokenisedText("b", ("X", " y"), (7, 8))
    # 0, 2, 4, 6: the line break at 2 is skipped, and the grid does not move.
    assert choose_positions([text, other], 0, 2, None) == [("a", 0), ("a", 4), ("a", 6), ("b", 0)]
    assert choose_positions([text, other], 0, 2, 2) == [("a", 0), ("a", 4), ("b", 0)]
    # 1, 2, ...: the empty token at 5 is skipped too and does not count towards the limit.
    assert choose_positions([text], 1, 1, None) == [("a", 1), ("a", 3), ("a", 4), ("a", 6)]
    assert choose_positions([text], 4, 1, 2) == [("a", 4), ("a", 6)]
    assert choose_positions([text, other], 9, 1, None) == []
    assert choose_positions([text], 0, 1, 0) == []
    for start, every, limit in ((-1, 1, None), (0, 0, None), (0, 1, -1)):
        with pytest.raises(HarnessError):
            choose_positions([text], start, every, limit)


def test_bad_inputs_are_refused_in_one_line(mock: Any) -> None:
    with pytest.raises(HarnessError, match="used twice"):
        tokenise_texts(mock, [("a", "x y"), ("a", "z")])
    texts = tokenise_texts(mock, [("a", "x y")])
    with pytest.raises(HarnessError, match="no study text has id 'b'"):
        sample_rounds(mock, texts, [("b", 0)], 1, seed=0)
    with pytest.raises(HarnessError, match="index out of range"):
        sample_rounds(mock, texts, [("a", 2)], 1, seed=0)
    with pytest.raises(HarnessError) as info:
        load_token_model("openai:gpt-4o")
    assert "openai:gpt-4o" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(HarnessError, match="KIND:NAME"):
        load_token_model("smollm2")


def test_top1_is_the_argmax(mock: Any) -> None:
    texts = tokenise_texts(mock, TEXTS)
    positions = choose_positions(texts, 0, 3, 4)
    top = top1_tokens(mock, texts, positions)
    assert sorted(top) == sorted(f"{t}-{i}" for t, i in positions)
    text = texts[0]
    logprobs = mock.next_token_logprobs([text.token_ids[:3]])[0]
    best = int(np.argmax(logprobs))
    assert top["t1-3"] == (mock.token_strings([best])[0], math.exp(logprobs[best]))


# --------------------------------------------------------------------------------------------------------------------
# Hugging Face models (tiny, random, local)
# --------------------------------------------------------------------------------------------------------------------


def byte_bpe(adds_bos: bool) -> Any:
    """A byte-level BPE tokenizer trained on a few sentences (ids: 0 pad, 1 BOS, 2 EOS); ``adds_bos`` puts BOS in
    front of every encoded text by default, as Llama tokenizers do."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator([text for _, text in TEXTS] * 10, trainer)
    if adds_bos:
        backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


@pytest.fixture(scope="module", params=["llama-bos", "gpt2"])
def hf_pair(request: pytest.FixtureRequest) -> tuple[Any, Any]:
    """(model, tokenizer): a tiny Llama whose tokenizer adds BOS (window 256), a tiny GPT-2 whose does not (128)."""
    if request.param == "llama-bos":
        tokenizer = byte_bpe(adds_bos=True)
        return tiny_llama(len(tokenizer), bos_token_id=1, eos_token_id=2, initializer_range=0.2), tokenizer
    tokenizer = byte_bpe(adds_bos=False)
    return tiny_gpt2(tokenizer, initializer_range=0.2), tokenizer


def token_level(model: Any, tokenizer: Any, batch_size: int = 4) -> Any:
    from harness.plugins.hf.queries.token_level import TokenLevel

    return TokenLevel(model, tokenizer, device=torch.device("cpu"), batch_size=batch_size, name="tiny")


def reference(model: Any, tokenizer: Any, context: Sequence[int]) -> np.ndarray:
    """The plainest computation: BOS in front where the tokenizer adds one (alone for an empty context), the window's
    last positions (BOS kept), one unbatched forward pass, float64 log-softmax of the last position."""
    adds_bos = tokenizer("a")["input_ids"][0] == tokenizer.bos_token_id
    ids = ([tokenizer.bos_token_id] if adds_bos else []) + list(context)
    ids = ids or [tokenizer.bos_token_id]
    window = model.config.max_position_embeddings
    if len(ids) > window:
        ids = ([ids[0]] + ids[len(ids) - window + 1 :]) if adds_bos else ids[-window:]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1]
    return torch.log_softmax(logits.double(), dim=-1).numpy()


def test_hf_tokens_join_back_exactly(hf_pair: tuple[Any, Any]) -> None:
    tokens = token_level(*hf_pair)
    for _, text in TEXTS:
        ids = tokens.token_ids(text)
        strings = tokens.token_strings(ids)
        assert len(strings) == len(ids) and "".join(strings) == text
        assert "\ufffd" not in "".join(strings)
        assert hf_pair[1].bos_token_id not in ids  # read mid-text: no special tokens
    # A character split over byte tokens shows whole on the token that completes it, and the others show nothing.
    strings = tokens.token_strings(tokens.token_ids("中文"))  # not in the training text: byte tokens
    assert len(strings) == 6 and [s for s in strings if s] == ["中", "文"]


def test_hf_distributions_equal_a_plain_forward_pass(hf_pair: tuple[Any, Any]) -> None:
    model, tokenizer = hf_pair
    tokens = token_level(model, tokenizer, batch_size=3)
    assert tokens.adds_bos is (type(model).__name__ == "LlamaForCausalLM")  # both conventions are exercised
    ids = tokens.token_ids(TEXTS[0][1] + " " + TEXTS[1][1])
    window = model.config.max_position_embeddings
    long_context = (ids * (window // len(ids) + 2))[: window + 20]  # past the window: cut from the left
    contexts = [ids[:5], [], ids[:1], ids, ids[:17], long_context, ids[:5]]
    batched = tokens.next_token_logprobs(contexts)
    assert len(batched) == len(contexts)
    for context, logprobs in zip(contexts, batched, strict=True):
        assert logprobs.dtype == np.float64 and logprobs.shape == (len(tokenizer),)
        assert abs(_logsumexp(logprobs)) < 1e-9
        np.testing.assert_allclose(logprobs, reference(model, tokenizer, context), atol=1e-5, rtol=0)
        assert logprobs.max() - logprobs.min() > 3  # spread wide enough that a position off by one would show
    one_by_one = [tokens.next_token_logprobs([c])[0] for c in contexts]
    for a, b in zip(batched, one_by_one, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    # Without logits_to_keep (older models), one row at a time: the same numbers.
    tokens._keep_kwargs = {}
    for a, b in zip(tokens.next_token_logprobs(contexts), batched, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)


def test_hf_rounds_carry_the_models_probabilities(hf_pair: tuple[Any, Any]) -> None:
    model, tokenizer = hf_pair
    tokens = token_level(model, tokenizer)
    texts = tokenise_texts(tokens, TEXTS)
    positions = choose_positions(texts, 0, 4, 3)
    rounds = sample_rounds(tokens, texts, positions, samples_per_position=3, seed=1, batch_size=2)
    assert len(rounds) == 3 * len(positions)
    by_text = {t.text_id: t for t in texts}
    for r in rounds:
        expected = reference(model, tokenizer, by_text[r.text_id].token_ids[: r.index])
        assert math.isclose(r.generator_prob, math.exp(expected[r.sampled_token_id]), rel_tol=1e-4)
        assert math.isclose(r.generator_true_prob, math.exp(expected[r.true_token_id]), rel_tol=1e-4)
        assert r.context + r.true_token == "".join(by_text[r.text_id].tokens[: r.index + 1])
    top = top1_tokens(tokens, texts, positions)
    text_id, index = positions[-1]
    expected = reference(model, tokenizer, by_text[text_id].token_ids[:index])
    assert math.isclose(top[f"{text_id}-{index}"][1], math.exp(expected.max()), rel_tol=1e-4)


def test_the_hf_adapter_implements_the_capability(tmp_path: Path) -> None:
    """A tiny checkpoint saved to a directory and loaded as ``--model hf:DIR``, through the registry."""
    tokenizer = byte_bpe(adds_bos=False)
    model = tiny_gpt2(tokenizer, initializer_range=0.2)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    adapter = load_token_model(f"hf:{tmp_path}", device="cpu")
    try:
        assert isinstance(adapter, TokenLevelModel)
        text = TEXTS[1][1]
        ids = adapter.token_ids(text)
        assert "".join(adapter.token_strings(ids)) == text
        contexts = [ids[:3], []]
        for context, logprobs in zip(contexts, adapter.next_token_logprobs(contexts), strict=True):
            np.testing.assert_allclose(logprobs, reference(model, tokenizer, context), atol=1e-5, rtol=0)
    finally:
        adapter.close()  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="closed"):
        adapter.token_ids("x")


# --------------------------------------------------------------------------------------------------------------------
# The real packaged SmolLM2
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_smollm2_token_level(smollm2: Any) -> None:
    """The session's SmolLM2 (``tests/conftest.py``) through the adapter's token level: texts join back, the true
    tokens' probabilities are probabilities, and the known sanity value holds (log P(" Paris") = -0.258)."""
    tokens = token_level(smollm2.model, smollm2.tokenizer)
    originals = [("a", "The capital of France is Paris, a city on the Seine."), ("b", "Café au lait, s'il vous plaît!")]
    texts = tokenise_texts(tokens, originals)
    for text, (_, original) in zip(texts, originals, strict=True):
        assert "".join(text.tokens) == original
    positions = choose_positions(texts, 1, 3, None)
    rounds = sample_rounds(tokens, texts, positions, samples_per_position=2, seed=0)
    assert rounds and all(0 < r.generator_true_prob <= 1 and 0 < r.generator_prob <= 1 for r in rounds)
    paris = texts[0].tokens.index(" Paris")
    logprobs = tokens.next_token_logprobs([texts[0].token_ids[:paris]])[0]
    assert abs(logprobs[texts[0].token_ids[paris]] - -0.258) < 0.01

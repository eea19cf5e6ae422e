"""Scoring queries on Hugging Face models (``plugins/hf/queries/scoring.py`` and the ``hf`` adapter's delegation).

Every number is checked against the plainest computation that defines it: one unbatched forward pass of the whole
sequence, ``log_softmax`` and a gather, with the lm-evaluation-harness tokenisation rebuilt here independently. The
tiny random models get a large initialisation so that their log-probabilities spread over tens of nats: with the
default one every token sits near ``-log(vocab)`` and a position off by one would go unnoticed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from harness.plugins.hf.queries.scoring import QueryScorer
from harness.requests import LoglikelihoodRequest, NextTokenRequest, SimilarityRequest
from tests.helpers import tiny_gpt2, tiny_t5
from tests.helpers import tiny_llama as tiny_llama_model  # the module's fixture takes the plain name

#: Every test here loads the real SmolLM2: the tiny random models are built on its tokenizer (the ``tokenizer``
#: fixture reads it from the loaded model).
pytestmark = pytest.mark.slow

# --------------------------------------------------------------------------------------------------------------------
# Tiny models (random weights, the SmolLM2 tokenizer)
# --------------------------------------------------------------------------------------------------------------------


def _tiny_llama(tokenizer: Any) -> Any:
    return tiny_llama_model(len(tokenizer), bos_token_id=1, eos_token_id=2, initializer_range=0.2)


def _tiny_gpt2(tokenizer: Any) -> Any:
    return tiny_gpt2(tokenizer, initializer_range=0.2)


def _tiny_t5(tokenizer: Any) -> Any:
    return tiny_t5(tokenizer, initializer_factor=2.0)


@pytest.fixture(scope="module")
def tokenizer(smollm2: Any) -> Any:
    return smollm2.tokenizer


@pytest.fixture(scope="module")
def tiny_llama(tokenizer: Any) -> Any:
    return _tiny_llama(tokenizer)


class BosTokenizer:
    """The SmolLM2 tokenizer, made to put BOS in front by default as Llama tokenizers do (SmolLM2's does not)."""

    def __init__(self, inner: Any, bos: int | None = 1) -> None:
        self.inner = inner
        self.bos_token_id = bos

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        ids = list(self.inner(text, add_special_tokens=False)["input_ids"])
        if add_special_tokens and self.bos_token_id is not None:
            ids = [self.bos_token_id, *ids]
        return {"input_ids": ids}


# --------------------------------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------------------------------


def _reference_pair(tokenizer: Any, context: str, continuation: str, bos: bool = False) -> tuple[list[int], list[int]]:
    """lm-evaluation-harness's encoding of a causal pair, written out independently of the scorer."""
    stripped = context.rstrip()
    continuation = context[len(stripped) :] + continuation
    context_ids = list(tokenizer(stripped, add_special_tokens=False)["input_ids"])
    if bos:
        context_ids = [tokenizer.bos_token_id, *context_ids]
    return context_ids or [tokenizer.bos_token_id], list(tokenizer(continuation, add_special_tokens=False)["input_ids"])


def _reference_logprobs(model: Any, context_ids: list[int], continuation_ids: list[int]) -> list[float]:
    """One unbatched forward pass of the whole sequence but its last token (predicted, never read), log_softmax,
    gather."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([(context_ids + continuation_ids)[:-1]])).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    n = len(context_ids)
    return [float(logprobs[n - 1 + j, t]) for j, t in enumerate(continuation_ids)]


QUERIES = [
    LoglikelihoodRequest("The capital of France is", " Paris"),
    LoglikelihoodRequest("The capital of France is", " the city of Lyon, on the Rhone."),
    LoglikelihoodRequest("The capital of France is", " Rome"),
    LoglikelihoodRequest("The capital of France is ", "Berlin, of course"),
    LoglikelihoodRequest("Question: 2 + 2 = ?\nAnswer:", " 4"),
    LoglikelihoodRequest("Question: 2 + 2 = ?\nAnswer:", " four, since two and two make four"),
    LoglikelihoodRequest(" ", "Hello world"),
    LoglikelihoodRequest("Hi", "!"),
    LoglikelihoodRequest("", "Once upon a time"),
]


def _check_against_reference(
    model: Any, tokenizer: Any, scorer: QueryScorer, queries: list[LoglikelihoodRequest], bos: bool = False
) -> None:
    answers = scorer.loglikelihood_many(queries)
    assert len(answers) == len(queries)
    for query, answer in zip(queries, answers, strict=True):
        context_ids, continuation_ids = _reference_pair(tokenizer, query.context, query.continuation, bos)
        expected = _reference_logprobs(model, context_ids, continuation_ids)
        assert answer.tokens == [tokenizer.decode([t]) for t in continuation_ids]
        assert len(answer.token_logprobs) == len(expected) > 0
        np.testing.assert_allclose(answer.token_logprobs, expected, atol=1e-4, rtol=0)


# --------------------------------------------------------------------------------------------------------------------
# Loglikelihood
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kv_reuse", [True, False], ids=["kv-reuse", "full-sequences"])
def test_loglikelihood_matches_full_forward_on_tiny_llama(tiny_llama: Any, tokenizer: Any, kv_reuse: bool) -> None:
    scorer = QueryScorer(tiny_llama, tokenizer, batch_size=3, kv_reuse=kv_reuse)
    assert not scorer.encoder.adds_bos and not scorer.seq2seq
    _check_against_reference(tiny_llama, tokenizer, scorer, QUERIES)
    # The spread of a random model with this initialisation: a wrong position would not pass within 1e-4.
    spread = [x for a in scorer.loglikelihood_many(QUERIES) for x in a.token_logprobs]
    assert max(spread) - min(spread) > 5


def test_loglikelihood_matches_full_forward_on_smollm2(smollm2: Any) -> None:
    scorer = QueryScorer(smollm2.model, smollm2.tokenizer, device=smollm2.device, batch_size=64)
    _check_against_reference(smollm2.model, smollm2.tokenizer, scorer, QUERIES)
    answers = scorer.loglikelihood_many(QUERIES[:3])
    # A trained model prefers the right answer.
    assert answers[0].total > answers[2].total
    assert answers[0].tokens == [" Paris"]


@pytest.mark.parametrize("model_name", ["tiny_llama", "smollm2"])
def test_batch_size_does_not_change_results(model_name: str, tiny_llama: Any, smollm2: Any) -> None:
    """Rows padded into one pass score as they do alone. SmolLM2 gets 1e-4: its float32 results move by up to
    5e-5 with the shape of the batched matrix products (the same with eager or math attention, so it is the
    reduction order of the linear layers, amplified by its large first-token activations), not with padding."""
    model = tiny_llama if model_name == "tiny_llama" else smollm2.model
    tolerance = 1e-5 if model_name == "tiny_llama" else 1e-4
    one = QueryScorer(model, smollm2.tokenizer, batch_size=1).loglikelihood_many(QUERIES)
    many = QueryScorer(model, smollm2.tokenizer, batch_size=64).loglikelihood_many(QUERIES)
    for a, b in zip(one, many, strict=True):
        assert a.tokens == b.tokens
        np.testing.assert_allclose(a.token_logprobs, b.token_logprobs, atol=tolerance, rtol=0)


def test_loglikelihood_with_a_bos_adding_tokenizer(tiny_llama: Any, tokenizer: Any) -> None:
    """BOS goes in front of every context, once: an empty context is BOS alone, never BOS twice."""
    bos_tokenizer = BosTokenizer(tokenizer)
    scorer = QueryScorer(tiny_llama, bos_tokenizer, batch_size=4)
    assert scorer.encoder.adds_bos
    assert scorer.encoder.context_ids("") == [1]
    assert scorer.encoder.context_ids("Hi") == [1, *tokenizer("Hi", add_special_tokens=False)["input_ids"]]
    _check_against_reference(tiny_llama, tokenizer, scorer, QUERIES, bos=True)


def test_empty_context_falls_back_to_eos_without_bos(tiny_llama: Any, tokenizer: Any) -> None:
    scorer = QueryScorer(tiny_llama, BosTokenizer(tokenizer, bos=None))
    assert not scorer.encoder.adds_bos
    assert scorer.encoder.context_ids("") == [tokenizer.eos_token_id]


def test_empty_continuation_scores_nothing(tiny_llama: Any, tokenizer: Any) -> None:
    scorer = QueryScorer(tiny_llama, tokenizer)
    (answer,) = scorer.loglikelihood_many([LoglikelihoodRequest("Hello", "")])
    assert answer.token_logprobs == [] and answer.tokens == [] and answer.total == 0.0


def test_hand_checked_totals_and_next_token(tiny_llama: Any, tokenizer: Any) -> None:
    """``total`` is the sum of the token log-probabilities, recomputed here in float64 numpy from the raw logits;
    a single-token candidate's next-token log-probability is its loglikelihood, whitespace moved or not."""
    scorer = QueryScorer(tiny_llama, tokenizer)
    context, continuation = "Answer:", " A or B"
    context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    continuation_ids = tokenizer(continuation, add_special_tokens=False)["input_ids"]
    assert len(continuation_ids) == 3
    with torch.no_grad():
        logits = tiny_llama(torch.tensor([context_ids + continuation_ids])).logits[0].double().numpy()
    expected = []
    for j, token in enumerate(continuation_ids):
        row = logits[len(context_ids) - 1 + j]
        top = row.max()
        expected.append(row[token] - top - np.log(np.exp(row - top).sum()))
    (answer,) = scorer.loglikelihood_many([LoglikelihoodRequest(context, continuation)])
    np.testing.assert_allclose(answer.token_logprobs, expected, atol=1e-4)
    assert answer.total == pytest.approx(float(np.sum(expected)), abs=1e-4)

    assert len(tokenizer(" A", add_special_tokens=False)["input_ids"]) == 1
    label, moved = scorer.next_token_many(
        [NextTokenRequest("Answer:", (" A", " B")), NextTokenRequest("Answer: ", ("A", "B"))]
    )
    (single,) = scorer.loglikelihood_many([LoglikelihoodRequest("Answer:", " A")])
    assert label.n_tokens == [1, 1] and label.tokens == [" A", " B"]
    assert label.logprobs[0] == pytest.approx(single.total, abs=1e-5)
    assert label.logprobs[0] == pytest.approx(expected[0], abs=1e-4)
    np.testing.assert_allclose(moved.logprobs, label.logprobs, atol=1e-6)
    assert moved.tokens == label.tokens


def test_contexts_sharing_a_prefix_reuse_its_keys_and_values(smollm2: Any) -> None:
    """Prompts that ask about one scenario several ways share their beginning: only the rest is run again, and
    every score still equals an independent full pass."""
    model, tokenizer = smollm2.model, smollm2.tokenizer
    story = "Task: read the story and interpret it.\n\nIn a shop, Lara tries on a dress that is far too long. "
    queries = [
        LoglikelihoodRequest(story + "Rate: the dress fits.\nAnswer:", " likely"),
        LoglikelihoodRequest(story + "Rate: the dress fits.\nAnswer:", " very unlikely"),
        LoglikelihoodRequest(story + "Rate: the dress is too long.\nAnswer:", " likely"),
        LoglikelihoodRequest(story + "Options:\n1) fits\n2) too long\nAnswer:", " 2"),
        LoglikelihoodRequest("Something else entirely.", " Yes"),
    ]
    scorer = QueryScorer(model, tokenizer, batch_size=4)
    run_lengths: list[int] = []
    forward = model.forward

    def counting(*args: Any, **kwargs: Any) -> Any:
        cache = kwargs.get("cache", kwargs.get("past_key_values"))  # the name depends on the transformers version
        if cache is None or kwargs.get("logits_to_keep") == 1:
            run_lengths.append(int(kwargs["input_ids"].shape[1]))
        return forward(*args, **kwargs)

    model.forward = counting
    try:
        scorer.loglikelihood_many(queries)
    finally:
        del model.forward
    _check_against_reference(model, tokenizer, QueryScorer(model, tokenizer, batch_size=4), queries)
    story_tokens = len(tokenizer(story, add_special_tokens=False)["input_ids"])
    # Four distinct contexts: the story-led ones after the first run only their own ending.
    assert len(run_lengths) == 4
    assert sum(1 for n in run_lengths if n < story_tokens // 2) >= 2


# --------------------------------------------------------------------------------------------------------------------
# Next token
# --------------------------------------------------------------------------------------------------------------------


def test_next_token_counts_tokens_and_scores_whole_candidates(tiny_llama: Any, tokenizer: Any) -> None:
    scorer = QueryScorer(tiny_llama, tokenizer)
    long_candidate = " the city of Lyon"
    long_ids = tokenizer(long_candidate, add_special_tokens=False)["input_ids"]
    assert len(long_ids) > 1
    # The context ends in a newline; it moves onto each candidate, so these candidates start with "\n".
    query = NextTokenRequest("Question: where?\n", ("A", long_candidate.strip()))
    (answer,) = scorer.next_token_many([query])
    a_ids = tokenizer("\nA", add_special_tokens=False)["input_ids"]
    moved_ids = tokenizer("\n" + long_candidate.strip(), add_special_tokens=False)["input_ids"]
    assert answer.n_tokens == [len(a_ids), len(moved_ids)]
    assert answer.tokens == [tokenizer.decode([a_ids[0]]), tokenizer.decode([moved_ids[0]])]
    context_ids = tokenizer("Question: where?", add_special_tokens=False)["input_ids"]
    # A multi-token candidate is scored over all its tokens (its first token alone would not tell labels apart).
    expected = [sum(_reference_logprobs(tiny_llama, context_ids, ids)) for ids in (a_ids, moved_ids)]
    np.testing.assert_allclose(answer.logprobs, expected, atol=1e-4)

    (plain,) = scorer.next_token_many([NextTokenRequest("Answer:", (" A", long_candidate))])
    assert plain.n_tokens == [1, len(long_ids)]
    assert plain.tokens[1] == tokenizer.decode([long_ids[0]])
    with pytest.raises(ValueError, match="no tokens"):
        scorer.next_token_many([NextTokenRequest("Answer:", ("",))])


# --------------------------------------------------------------------------------------------------------------------
# Similarity
# --------------------------------------------------------------------------------------------------------------------


def _last_hidden(model: Any, ids: list[int]) -> np.ndarray:
    with torch.no_grad():
        hidden = model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states[-1]
    return hidden[0, -1].double().numpy()


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("model_name", ["tiny_llama", "smollm2"])
def test_similarity_is_the_cosine_of_last_hidden_states(model_name: str, tiny_llama: Any, smollm2: Any) -> None:
    model = tiny_llama if model_name == "tiny_llama" else smollm2.model
    tokenizer = smollm2.tokenizer
    scorer = QueryScorer(model, tokenizer, batch_size=2)
    prompt = "The quick brown fox jumps over the lazy dog."
    options = ("A fast fox leaps.", "Stock markets fell sharply today amid fears of inflation.", prompt, "dog")
    queries = [SimilarityRequest(prompt, options), SimilarityRequest("dog", ("dog", "cat"))]
    answers = scorer.similarity_many(queries)
    for query, answer in zip(queries, answers, strict=True):
        vector = _last_hidden(model, tokenizer(query.prompt, add_special_tokens=False)["input_ids"])
        expected = [
            _cosine(vector, _last_hidden(model, tokenizer(o, add_special_tokens=False)["input_ids"]))
            for o in query.options
        ]
        np.testing.assert_allclose(answer.cosines, expected, atol=1e-4)
        assert all(-1.0 <= c <= 1.0 for c in answer.cosines)
    assert answers[0].cosines[2] == pytest.approx(1.0, abs=1e-6)
    assert answers[1].cosines[0] == pytest.approx(1.0, abs=1e-6)


# --------------------------------------------------------------------------------------------------------------------
# Other architectures: GPT-2 (plain attention, position limit) and T5 (sequence-to-sequence)
# --------------------------------------------------------------------------------------------------------------------


def test_tiny_gpt2_answers_all_three(tokenizer: Any) -> None:
    model = _tiny_gpt2(tokenizer)
    scorer = QueryScorer(model, tokenizer, batch_size=4)
    assert scorer.encoder.max_length == 128
    _check_against_reference(model, tokenizer, scorer, QUERIES)
    (answer,) = scorer.next_token_many([NextTokenRequest("Answer:", (" A", " B"))])
    (single,) = scorer.loglikelihood_many([LoglikelihoodRequest("Answer:", " B")])
    assert answer.logprobs[1] == pytest.approx(single.total, abs=1e-5)
    (similar,) = scorer.similarity_many([SimilarityRequest("dog", ("dog", "a cat"))])
    assert similar.cosines[0] == pytest.approx(1.0, abs=1e-6) and -1 <= similar.cosines[1] <= 1


def test_long_context_is_left_truncated_like_lm_eval(tokenizer: Any) -> None:
    """A pair longer than the position limit keeps its last ``limit + 1`` tokens (the last is predicted only)."""
    model = _tiny_gpt2(tokenizer)
    scorer = QueryScorer(model, tokenizer)
    context = " ".join(f"word{i}" for i in range(200))
    query = LoglikelihoodRequest(context, " and the end")
    context_ids, continuation_ids = _reference_pair(tokenizer, query.context, query.continuation)
    assert len(context_ids) + len(continuation_ids) > 129
    kept = context_ids[len(context_ids) + len(continuation_ids) - 129 :]
    (answer,) = scorer.loglikelihood_many([query])
    np.testing.assert_allclose(answer.token_logprobs, _reference_logprobs(model, kept, continuation_ids), atol=1e-4)


def test_tiny_t5_scores_continuations_as_decoder_targets(tokenizer: Any) -> None:
    model = _tiny_t5(tokenizer)
    scorer = QueryScorer(model, tokenizer, batch_size=2)
    assert scorer.seq2seq
    queries = [
        LoglikelihoodRequest("simplify: The feline reposed. ", "The cat rested."),
        LoglikelihoodRequest("simplify: The feline reposed.", " The cat slept on the mat for hours"),
        LoglikelihoodRequest("simplify: The feline reposed.", "Cat"),
        LoglikelihoodRequest("", "Hello"),
    ]
    answers = scorer.loglikelihood_many(queries)
    for query, answer in zip(queries, answers, strict=True):
        source = tokenizer(query.context.rstrip())["input_ids"] or [tokenizer.bos_token_id]
        target = tokenizer(query.continuation.lstrip(), add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([source]), labels=torch.tensor([target])).logits[0].float()
        expected = torch.log_softmax(logits, dim=-1).gather(-1, torch.tensor(target)[:, None])[:, 0].tolist()
        np.testing.assert_allclose(answer.token_logprobs, expected, atol=1e-4)
        assert answer.tokens == [tokenizer.decode([t]) for t in target]
    spread = [x for a in answers for x in a.token_logprobs]
    assert max(spread) - min(spread) > 1

    (label,) = scorer.next_token_many([NextTokenRequest("simplify: The feline reposed.", ("The cat", " Cat"))])
    # "The cat" is scored over its tokens, the first tokens of "The cat rested." (a decoder target, like a label).
    assert label.logprobs[0] == pytest.approx(sum(answers[0].token_logprobs[: label.n_tokens[0]]), abs=1e-4)
    assert label.logprobs[1] == pytest.approx(answers[2].total, abs=1e-4)

    similarity = scorer.similarity_many(
        [SimilarityRequest("simplify: The feline reposed.", ("The cat rested.", "A dog", "x", ""))]
    )
    cosines = similarity[0].cosines
    assert len(cosines) == 4 and all(-1.0 <= c <= 1.0 for c in cosines)
    # The prompt vector is the encoder's state at the last source token.
    source = tokenizer("simplify: The feline reposed.")["input_ids"]
    with torch.no_grad():
        encoder_state = model.get_encoder()(input_ids=torch.tensor([source])).last_hidden_state[0, -1].double()
        labels = torch.tensor([[*tokenizer("A dog", add_special_tokens=False)["input_ids"], 0]])
        out = model(input_ids=torch.tensor([source]), labels=labels, output_hidden_states=True)
    decoder_state = out.decoder_hidden_states[-1][0, -1].double()
    assert cosines[1] == pytest.approx(_cosine(encoder_state.numpy(), decoder_state.numpy()), abs=1e-4)


# --------------------------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------------------------


def test_adapter_answers_the_three_queries(smollm2: Any) -> None:
    from harness.models import ModelSpec
    from harness.plugins.hf.adapter import HFAdapter

    assert {"loglikelihood", "next_token", "similarity"} <= HFAdapter.supported_requests
    adapter = HFAdapter(ModelSpec(kind="hf", name="smollm2-135m", args={"max_batch": "8"}, device="cpu"))
    direct = QueryScorer(smollm2.model, smollm2.tokenizer, batch_size=8)
    loglikelihood = [LoglikelihoodRequest("The capital of France is", " Paris")]
    next_token = [NextTokenRequest("Answer:", (" A", " B"))]
    similarity = [SimilarityRequest("cat", ("dog", "cat"))]
    try:
        answer = adapter.loglikelihood_many(loglikelihood)[0]
        assert answer.tokens == [" Paris"]
        assert answer.total == pytest.approx(direct.loglikelihood_many(loglikelihood)[0].total, abs=1e-4)
        label = adapter.next_token_many(next_token)[0]
        np.testing.assert_allclose(label.logprobs, direct.next_token_many(next_token)[0].logprobs, atol=1e-4)
        cosines = adapter.similarity_many(similarity)[0].cosines
        assert cosines[1] == pytest.approx(1.0, abs=1e-6)
        # The adapter's word sampler switches the model to its shared-prefix attention; continuations read from a
        # cache (and contexts continued from a shared prefix) must still match an independent full pass.
        model = adapter.loaded.model
        assert model.config._attn_implementation == "harness_shared_prefix"
        story = "Task: interpret the story.\n\nIn a shop, Lara tries on a dress that is far too long for her. "
        queries = [
            LoglikelihoodRequest(story + "Rate: the dress fits.\nAnswer:", " very unlikely indeed"),
            LoglikelihoodRequest(story + "Rate: the dress is long.\nAnswer:", " very likely, yes"),
        ]
        for query, got in zip(queries, adapter.loglikelihood_many(queries), strict=True):
            context_ids, continuation_ids = _reference_pair(adapter.loaded.tokenizer, query.context, query.continuation)
            expected = _reference_logprobs(model, context_ids, continuation_ids)
            np.testing.assert_allclose(got.token_logprobs, expected, atol=1e-4, rtol=0)
    finally:
        adapter.close()
    with pytest.raises(RuntimeError, match="closed"):
        adapter.loglikelihood_many(loglikelihood)
    with pytest.raises(RuntimeError, match="closed"):
        adapter.next_token_many(next_token)
    with pytest.raises(RuntimeError, match="closed"):
        adapter.similarity_many(similarity)

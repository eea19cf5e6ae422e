"""The trie next-word sampler: exact outcomes on a stub LM whose logits the test controls, exact probabilities
against full enumeration, and the sampled word distribution against plain ``generate`` on the real SmolLM2.

The stub stores token ids in the key/value cache and computes its logits from the *whole* history it reads back from
the cache, so a cache row selected for the wrong trie node changes the distribution and fails the exact tests.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from scipy import stats
from transformers import GenerationConfig, LlamaConfig

from harness.plugins.hf.shared.tokens import continuation_text, encode_context, eos_token_ids
from harness.plugins.hf.trie import cache as trie_cache
from harness.plugins.hf.trie import word_sampler
from harness.plugins.hf.trie.word_sampler import TrieWordSampler, sample_words
from harness.requests import SampleWordsRequest, SampleWordsResponse
from harness.scoring.stats import homogeneity_pvalue
from harness.words.rules import PAPER_FAILURE, decide_word, first_complete_line, first_complete_word, paper_first_word
from tests.helpers import tiny_llama

# --------------------------------------------------------------------------------------------------------------------
# A byte-level stub tokenizer and a stub LM with controlled logits
# --------------------------------------------------------------------------------------------------------------------

#: Sampled vocabulary (id -> bytes). 0 is end-of-sequence. Covers case, punctuation, a word split over tokens
#: (" ca" + "t"), a whitespace-only token, a hyphen and a UTF-8 character split over two tokens (" caf" + C3 + A9).
PIECES: list[bytes] = [
    b"",  # 0 EOS
    b" The",  # 1
    b" the",  # 2
    b" cat",  # 3
    b".",  # 4
    b" ca",  # 5
    b"t",  # 6
    b" ",  # 7
    b",",  # 8
    b"s",  # 9
    b" dog!",  # 10
    b"\n",  # 11
    b" caf",  # 12
    b"\xc3",  # 13
    b"\xa9",  # 14
    b"-",  # 15
    b"well",  # 16
]
EOS = 0
N_PIECES = len(PIECES)
BOS = 20
BYTE_BASE = 32  # ids 32..287 are single bytes, used only to encode contexts
VOCAB = BYTE_BASE + 256
TOK = {piece: i for i, piece in enumerate(PIECES)}


class ByteTokenizer:
    """Encodes a context byte by byte; decodes ids like a byte-level BPE tokenizer (invalid UTF-8 -> U+FFFD)."""

    eos_token_id = EOS

    def __init__(self, add_bos: bool = False) -> None:
        self.add_bos = add_bos
        self.bos_token_id = BOS if add_bos else None

    def __call__(self, text: str) -> dict[str, list[int]]:
        ids = [BYTE_BASE + b for b in text.encode("utf-8")]
        return {"input_ids": ([BOS] if self.add_bos else []) + ids}

    def decode(self, ids: list[int], skip_special_tokens: bool = False, clean_up_tokenization_spaces: bool = False):
        out = b""
        for i in ids:
            if i in (EOS, BOS):
                out += b"" if skip_special_tokens else b"<s>"
            elif i < N_PIECES:
                out += PIECES[i]
            elif i >= BYTE_BASE:
                out += bytes([i - BYTE_BASE])
        return out.decode("utf-8", errors="replace")


ContinuationLogits = Callable[[tuple[int, ...]], np.ndarray]


class StubLM(torch.nn.Module):
    """Logits are ``fn(continuation)``, the continuation read back from the cache; records every evaluated prefix."""

    def __init__(self, fn: ContinuationLogits, max_positions: int = 64) -> None:
        super().__init__()
        self.fn = fn
        self.config = LlamaConfig(
            vocab_size=VOCAB,
            hidden_size=8,
            intermediate_size=8,
            num_hidden_layers=1,
            num_attention_heads=1,
            num_key_value_heads=1,
            max_position_embeddings=max_positions,
        )
        self.generation_config = GenerationConfig(eos_token_id=EOS)
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.context_len = 0
        self.evaluated: list[tuple[int, ...]] = []  # continuation of every row run (context: ())
        self.call_lengths: list[int] = []

    def forward(self, input_ids: torch.Tensor, past_key_values: Any, use_cache: bool = True, **_: Any) -> Any:
        if past_key_values.get_seq_length() == 0:
            self.context_len = input_ids.shape[1]
        self.call_lengths.append(input_ids.shape[1])
        ids = input_ids.to(torch.float32)[:, None, :, None]
        keys, _ = past_key_values.update(ids, ids, 0)
        rows = []
        for history in keys[:, 0, :, 0].round().long().tolist():
            continuation = tuple(history[self.context_len :])
            self.evaluated.append(continuation)
            rows.append(torch.as_tensor(self.fn(continuation), dtype=torch.float32))
        return SimpleNamespace(logits=torch.stack(rows)[:, None, :], past_key_values=past_key_values)


ForcedPath = dict[tuple[int, ...], int]


def forced(path: ForcedPath) -> ContinuationLogits:
    """Each listed continuation is followed by its token with probability exactly 1; unlisted ones end (EOS)."""

    def fn(continuation: tuple[int, ...]) -> np.ndarray:
        logits = np.full(VOCAB, -np.inf)
        logits[path.get(continuation, EOS)] = 0.0
        return logits

    return fn


def markov2(seed: int, allowed: int = 5) -> ContinuationLogits:
    """A second-order Markov LM over the 17 pieces: each row allows ``allowed`` tokens (keeps enumeration small)."""
    rng = np.random.default_rng(seed)
    start = N_PIECES  # "no token yet"
    first = rng.normal(0.0, 1.5, size=(N_PIECES + 1, N_PIECES))
    for row in first:
        keep = rng.choice(N_PIECES, size=allowed, replace=False)
        mask = np.full(N_PIECES, -np.inf)
        mask[keep] = 0.0
        row += mask
    second = rng.normal(0.0, 1.0, size=(N_PIECES + 1, N_PIECES))

    def fn(continuation: tuple[int, ...]) -> np.ndarray:
        last = continuation[-1] if continuation else start
        before = continuation[-2] if len(continuation) > 1 else start
        logits = np.full(VOCAB, -np.inf)
        logits[:N_PIECES] = first[last] + second[before]
        return logits

    return fn


def stub_sample(
    fn: ContinuationLogits, request: SampleWordsRequest, **kwargs: Any
) -> tuple[SampleWordsResponse, StubLM]:
    model = StubLM(fn, max_positions=kwargs.pop("max_positions", 64))
    tokenizer = kwargs.pop("tokenizer", ByteTokenizer())
    return sample_words(model, tokenizer, request, **kwargs), model


def outcomes(response: SampleWordsResponse) -> Counter[str]:
    """Words and rejections in one table (rejections as ``<reason>``)."""
    table = Counter(response.counts)
    table.update({f"<{reason}>": c for reason, c in response.rejected.items()})
    return table


def reference_outcome(text: str, ended: bool, mode: str, segmenter: str = "spaces") -> str:
    """The word of a *whole* sample, as plain generation followed by word extraction sees it."""
    if mode in ("exact", "whole"):
        word, complete = (
            first_complete_word(text, ended, segmenter) if mode == "exact" else first_complete_line(text, ended)
        )
        if word is not None and complete:
            return word
        return "<empty>" if ended else "<truncated>"
    return paper_first_word(text) or PAPER_FAILURE


def exact_distribution(
    fn: ContinuationLogits, mode: str, max_new_tokens: int, temperature: float, segmenter: str = "spaces"
) -> dict[str, float]:
    """Enumerate every sequence of up to ``max_new_tokens`` tokens (no early stopping) and sum its probability."""
    tokenizer = ByteTokenizer()
    dist: dict[str, float] = {}

    def finish(tokens: tuple[int, ...], ended: bool, prob: float) -> None:
        text = tokenizer.decode(list(tokens), skip_special_tokens=True)
        key = reference_outcome(text, ended, mode, segmenter)
        dist[key] = dist.get(key, 0.0) + prob

    def walk(tokens: tuple[int, ...], prob: float) -> None:
        logits = fn(tokens).astype(np.float64) / temperature
        p = np.exp(logits - logits.max())
        p /= p.sum()
        for t in np.flatnonzero(p).tolist():
            if t == EOS:
                finish(tokens, True, prob * p[t])
            elif len(tokens) + 1 == max_new_tokens:
                finish((*tokens, t), False, prob * p[t])
            else:
                walk((*tokens, t), prob * p[t])

    walk((), 1.0)
    assert math.isclose(sum(dist.values()), 1.0, rel_tol=1e-9)
    return dist


def goodness_of_fit(observed: Counter[str], probs: dict[str, float], min_expected: float = 5.0) -> float:
    """Chi-square p-value of observed counts against exact probabilities; bins expected below 5 are pooled."""
    n = sum(observed.values())
    assert set(observed) <= set(probs), set(observed) - set(probs)
    obs: list[float] = []
    exp: list[float] = []
    pooled_o, pooled_e = 0.0, 0.0
    for key, p in sorted(probs.items()):
        if n * p >= min_expected:
            obs.append(observed.get(key, 0))
            exp.append(n * p)
        else:
            pooled_o += observed.get(key, 0)
            pooled_e += n * p
    if pooled_e > 0:
        obs.append(pooled_o)
        exp.append(pooled_e)
    return float(stats.chisquare(obs, exp).pvalue)


def request(**kwargs: Any) -> SampleWordsRequest:
    base: dict[str, Any] = {"context": "x", "n": 50, "seed": 0, "mode": "exact", "max_new_tokens": 8}
    return SampleWordsRequest(**{**base, **kwargs})


# --------------------------------------------------------------------------------------------------------------------
# Word decisions
# --------------------------------------------------------------------------------------------------------------------


def test_decide_word_exact_needs_whitespace_or_eos() -> None:
    kw: dict[str, Any] = {"depth": 1, "mode": "exact", "max_new_tokens": 5}
    assert decide_word(" cat", ended=False, **kw) == ("open", "")
    assert decide_word(" cat ", ended=False, **kw) == ("word", "cat")
    assert decide_word(" cat", ended=True, **kw) == ("word", "cat")
    assert decide_word(" ...", ended=True, **kw) == ("reject", "empty")
    assert decide_word(" ... ", ended=False, **kw) == ("open", "")
    assert decide_word(" cat", ended=False, depth=5, mode="exact", max_new_tokens=5) == ("reject", "truncated")
    assert decide_word(" caf\ufffd", ended=False, **kw) == ("open", "")


def test_decide_word_paper_stops_once_the_stripped_first_word_is_closed() -> None:
    kw: dict[str, Any] = {"depth": 1, "mode": "paper", "max_new_tokens": 5}
    assert decide_word(" cat", ended=False, **kw) == ("open", "")
    assert decide_word(" cat,", ended=False, **kw) == ("open", "")  # "cat," could become "cat,s" -> "cats"
    assert decide_word(" cat. the", ended=False, **kw) == ("word", "cat")
    assert decide_word(" . ", ended=False, **kw) == ("open", "")  # stripped text holds no word yet
    assert decide_word(" Cat", ended=False, depth=5, mode="paper", max_new_tokens=5) == ("word", "cat")  # cut off
    # No word: the study's failure marker, lower-cased before its filter, stays in as a word (its bug, reproduced).
    assert decide_word(" !?", ended=True, **kw) == ("word", PAPER_FAILURE)
    # Newlines are deleted, not turned into spaces: "said:\n" is still open and joins the next word.
    assert decide_word(" said:\n", ended=False, **kw) == ("open", "")
    assert decide_word(" said:\nCome ", ended=False, **kw) == ("word", "saidcome")
    # Unicode punctuation goes too (the ASCII-only rule kept "—" and "“").
    assert decide_word(" \u201cYes\u201d \u2014", ended=False, **kw) == ("word", "yes")
    assert decide_word(" \u2014 ", ended=False, **kw) == ("open", "")
    with pytest.raises(ValueError, match="unknown word mode"):
        decide_word(" cat ", ended=False, depth=1, mode="fancy", max_new_tokens=5)


# --------------------------------------------------------------------------------------------------------------------
# Crafted cases on the stub (exact outcomes)
# --------------------------------------------------------------------------------------------------------------------


def test_multi_token_word_and_cost_accounting() -> None:
    path = {(): TOK[b" ca"], (5,): TOK[b"t"], (5, 6): TOK[b" "]}
    response, model = stub_sample(forced(path), request(n=40))
    assert response.counts == {"cat": 40} and response.rejected == {}
    # Context (1 token) once, then " ca" and " cat"; the node ending in " " already fixes the word: not run.
    assert response.tokens_evaluated == 1 + 2
    assert model.evaluated == [(), (5,), (5, 6)]
    assert model.call_lengths == [1, 1, 1]


@pytest.mark.parametrize(
    ("path", "exact", "paper"),
    [
        ({(): 1, (1,): 8, (1, 8): 7}, "the", "the"),  # " The, " : case and trailing punctuation
        ({(): 10, (10,): 11}, "dog", "dog"),  # " dog!\n"
        ({(): 4, (4,): 2, (4, 2): 7}, "the", "the"),  # ". the " : a punctuation-only chunk is skipped
        ({(): 7, (7,): 16, (7, 16): 15, (7, 16, 15): 16, (7, 16, 15, 16): 7}, "well-well", "wellwell"),  # hyphen
        ({(): 12, (12,): 13, (12, 13): 14, (12, 13, 14): 7}, "café", "café"),  # é split over two tokens
        ({(): 10, (10,): 9, (10, 9): 7}, "dogs", "dogs"),  # " dog!s ": word-internal punctuation goes too
    ],
)
def test_normalisation_on_forced_paths(path: ForcedPath, exact: str, paper: str) -> None:
    for mode, word in (("exact", exact), ("paper", paper)):
        response, _ = stub_sample(forced(path), request(n=7, mode=mode, max_new_tokens=6))
        assert response.counts == {word: 7}, (mode, response)


def test_rejections_empty_and_truncated() -> None:
    # EOS straight away, and EOS after punctuation only: no word -> "empty" (exact), the study's marker (paper).
    paths: list[ForcedPath] = [{}, {(): 4}, {(): 7, (7,): 8}]
    for path in paths:
        response, _ = stub_sample(forced(path), request(n=9, mode="exact"))
        assert response.counts == {} and response.rejected == {"empty": 9}, path
        response, _ = stub_sample(forced(path), request(n=9, mode="paper"))
        assert response.counts == {PAPER_FAILURE: 9} and response.rejected == {}, path
    # " ca" "t" "s" "s"... never followed by whitespace within 3 tokens: exact rejects, paper takes the cut-off word.
    cats: ForcedPath = {(): 5, (5,): 6, (5, 6): 9, (5, 6, 9): 9}
    response, model = stub_sample(forced(cats), request(n=9, max_new_tokens=3))
    assert response.rejected == {"truncated": 9} and response.counts == {}
    assert response.tokens_evaluated == 1 + 2  # the node at the cap is decided without a forward pass
    response, _ = stub_sample(forced(cats), request(n=9, mode="paper", max_new_tokens=3))
    assert response.counts == {"cats": 9}
    # EOS right after a word completes it.
    response, _ = stub_sample(forced({(): 3}), request(n=9))
    assert response.counts == {"cat": 9}


def test_counts_plus_rejections_equal_n_and_no_prefix_runs_twice() -> None:
    fn = markov2(seed=11)
    for seed in range(4):
        for mode, cap in (("exact", 3), ("exact", 6), ("paper", 5)):
            response, model = stub_sample(fn, request(n=2000, seed=seed, mode=mode, max_new_tokens=cap))
            assert response.n_words + sum(response.rejected.values()) == 2000
            assert set(response.rejected) <= {"empty", "truncated"}
            assert len(model.evaluated) == len(set(model.evaluated))  # never the same prefix twice
            assert model.call_lengths[0] == 1 and all(length == 1 for length in model.call_lengths[1:])
            assert response.tokens_evaluated == len(model.evaluated)  # context is one token here


# --------------------------------------------------------------------------------------------------------------------
# Exact probabilities: the trie sampler against full enumeration of the stub's sequence distribution
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "segmenter", "cap"),
    [("exact", "spaces", 4), ("paper", "spaces", 4), ("whole", "spaces", 4), ("exact", "characters", 4)],
)
def test_sampler_matches_enumerated_distribution(mode: str, segmenter: str, cap: int) -> None:
    """Every word rule stops a sample early only where no later token could change its word: the trie sampler's
    words have the distribution of whole samples cut afterwards (the whole rule: lines; characters: the first
    character, so `` cat`` gives ``c``)."""
    fn = markov2(seed=5)
    probs = exact_distribution(fn, mode, cap, temperature=1.0, segmenter=segmenter)
    # The stub's language must exercise what the early stopping has to get right.
    assert len(probs) >= (4 if segmenter == "characters" else 8)
    if mode == "exact":
        assert probs.get("<truncated>", 0) > 0.001 and probs.get("<empty>", 0) > 0.001
    kw = {"mode": mode, "segmenter": segmenter, "max_new_tokens": cap}
    response, _ = stub_sample(fn, request(n=100_000, seed=1, **kw))
    assert goodness_of_fit(outcomes(response), probs) > 1e-3
    # The same test rejects a wrong sampler (temperature 0.6 instead of 1), so it is not vacuous.
    wrong, _ = stub_sample(fn, request(n=100_000, seed=1, temperature=0.6, **kw))
    assert goodness_of_fit(outcomes(wrong), probs) < 1e-10


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_temperature_scales_logits(temperature: float) -> None:
    fn = markov2(seed=5)
    probs = exact_distribution(fn, "exact", 4, temperature=temperature)
    response, _ = stub_sample(fn, request(n=50_000, seed=2, max_new_tokens=4, temperature=temperature))
    assert goodness_of_fit(outcomes(response), probs) > 1e-3
    plain = exact_distribution(fn, "exact", 4, temperature=1.0)
    assert goodness_of_fit(outcomes(response), plain) < 1e-10


def test_temperature_zero_is_refused_by_the_request() -> None:
    """Word samplers never draw greedily (``harness.kinds.sample_words``): temperature 0 is refused when the request
    is made, before any sampler sees it."""
    with pytest.raises(ValueError, match="temperature must be > 0"):
        request(n=300, temperature=0.0, max_new_tokens=6)


def test_two_way_split_has_binomial_counts() -> None:
    """At a 50/50 node the split is Binomial(n, 1/2): 10,000 draws land within 4 sigma of 5,000."""
    logits = np.full(VOCAB, -np.inf)
    logits[[TOK[b" cat"], TOK[b" the"]]] = 0.0
    response, _ = stub_sample(lambda c: logits if not c else forced(ForcedPath())(c), request(n=10_000, seed=3))
    assert set(response.counts) == {"cat", "the"}
    assert abs(response.counts["cat"] - 5000) < 4 * 50


# --------------------------------------------------------------------------------------------------------------------
# Determinism, batching, truncation, validation
# --------------------------------------------------------------------------------------------------------------------


def test_same_request_same_response_and_seed_matters() -> None:
    fn = markov2(seed=7)
    a, _ = stub_sample(fn, request(n=3000, seed=42))
    b, _ = stub_sample(fn, request(n=3000, seed=42))
    c, _ = stub_sample(fn, request(n=3000, seed=43))
    assert a.to_record() == b.to_record()
    assert a.to_record() != c.to_record()


def test_batch_size_and_cache_gathering_do_not_change_results(monkeypatch: pytest.MonkeyPatch) -> None:
    fn = markov2(seed=9, allowed=7)
    req = request(n=5000, seed=4, max_new_tokens=5)
    reference, model = stub_sample(fn, req, batch_size=64)
    assert max(len(c) for c in model.evaluated) >= 3  # deep enough that chunk boundaries cross parents
    for size in (1, 3, 17):
        other, _ = stub_sample(fn, req, batch_size=size)
        assert other.to_record() == reference.to_record(), size
    # A memory cap that admits one row per pass (long contexts) changes the grouping, not the result.
    model = StubLM(fn)
    capped = TrieWordSampler(model, ByteTokenizer(), batch_size=64, max_cache_bytes=1).sample(req)
    assert capped.to_record() == reference.to_record()
    assert len(model.call_lengths) == len(model.evaluated)  # one row per forward pass
    # Caches that cannot be concatenated across chunks take the per-parent-chunk path: same draws, same words.
    monkeypatch.setattr(word_sampler, "mergeable", lambda cache: False)
    for size in (1, 3, 17):
        other, _ = stub_sample(fn, req, batch_size=size)
        assert other.to_record() == reference.to_record(), size


def test_long_context_keeps_rightmost_tokens() -> None:
    context = "".join(chr(ord("a") + i % 26) for i in range(40))
    path: ForcedPath = {(): 3}
    response, model = stub_sample(forced(path), request(context=context, n=5, max_new_tokens=4), max_positions=16)
    assert response.counts == {"cat": 5}
    assert model.call_lengths[0] == 16 - 4
    ids = encode_context(ByteTokenizer(), model, context, 4)
    assert ids == [BYTE_BASE + b for b in context.encode()[-12:]]
    # A BOS the tokenizer adds stays in front.
    ids = encode_context(ByteTokenizer(add_bos=True), model, context, 4)
    assert ids[0] == BOS and ids[1:] == [BYTE_BASE + b for b in context.encode()[-11:]]
    # An empty context conditions on BOS when there is one, and is an error when there is none.
    assert encode_context(ByteTokenizer(add_bos=True), model, "", 4) == [BOS]
    with pytest.raises(ValueError, match="empty context"):
        encode_context(ByteTokenizer(), model, "", 4)


def test_request_validation_and_n_zero() -> None:
    fn = forced(ForcedPath())
    response, model = stub_sample(fn, request(n=0))
    assert response.to_record() == {"counts": {}, "n_requested": 0, "rejected": {}, "tokens_evaluated": 0}
    assert model.evaluated == []
    for bad in ({"n": -1}, {"max_new_tokens": 0}, {"temperature": -0.5}, {"temperature": float("nan")}):
        with pytest.raises(ValueError):
            stub_sample(fn, request(**bad))
    with pytest.raises(ValueError):
        TrieWordSampler(StubLM(fn), ByteTokenizer(), batch_size=0)


def test_continuation_text_decodes_the_whole_list() -> None:
    tokenizer = ByteTokenizer()
    ctx = tokenizer("x")["input_ids"]
    assert continuation_text(tokenizer, ctx, [12, 13]) == " caf\ufffd"
    assert continuation_text(tokenizer, ctx, [12, 13, 14]) == " café"
    assert continuation_text(tokenizer, ctx, [3, EOS]) == " cat"
    assert continuation_text(tokenizer, ctx, []) == ""
    # Only the end of a long context is decoded in front; one ending in half a UTF-8 character still works.
    long_ctx = tokenizer("word " * 200)["input_ids"] + [13]
    assert continuation_text(tokenizer, long_ctx, [12, 7]) == " caf "


# --------------------------------------------------------------------------------------------------------------------
# The real SmolLM2: same word distribution as plain generate()
# --------------------------------------------------------------------------------------------------------------------

CONTEXT = "There are now rumblings that"


def _generate_outcomes(smollm2: Any, context: str, n: int, max_new_tokens: int, seed: int) -> dict[str, Counter[str]]:
    """Plain ancestral sampling with ``generate`` (full softmax), then the word of each whole sample, per mode."""
    model, tokenizer = smollm2.model, smollm2.tokenizer
    ctx = encode_context(tokenizer, model, context, max_new_tokens)
    eos = eos_token_ids(model, tokenizer)
    torch.manual_seed(seed)
    with torch.inference_mode():
        out = model.generate(
            torch.tensor([ctx], device=smollm2.device),
            attention_mask=torch.ones(1, len(ctx), dtype=torch.long, device=smollm2.device),
            do_sample=True,
            top_k=0,
            top_p=1.0,
            temperature=1.0,
            max_new_tokens=max_new_tokens,
            num_return_sequences=n,
            pad_token_id=tokenizer.eos_token_id,
        )
    result: dict[str, Counter[str]] = {"exact": Counter(), "paper": Counter()}
    for row in out[:, len(ctx) :].tolist():
        cut = next((i for i, t in enumerate(row) if t in eos), None)
        tokens, ended = (row, False) if cut is None else (row[:cut], True)
        text = continuation_text(tokenizer, ctx, tokens)
        for mode in result:
            result[mode][reference_outcome(text, ended, mode)] += 1
    return result


def two_sample_pvalue(a: Counter[Any], b: Counter[Any]) -> float:
    """Chi-square test of homogeneity (``harness.scoring.stats.homogeneity_pvalue``), with at least 5 categories."""
    p_value = homogeneity_pvalue(a, b, min_categories=5)
    assert p_value is not None, "too few categories for a meaningful test"
    return p_value


@pytest.mark.slow
def test_trie_sampler_matches_plain_generate_on_smollm2(smollm2: Any) -> None:
    """One generate() run of 400 samples x 5 tokens gives the reference for both modes (exact mode with a 5-token
    cap rejects as truncated where generate's text has no complete word). The trie sampler draws 1500.
    Temperature 0.7 must be told apart from the same reference, so the test has power (measured p-values: 0.75
    exact and 0.68 paper for the real sampler, 4e-63 for temperature 0.7). The passes at their own shapes and at
    fixed shapes (``pass_capture``; replayed as CUDA graphs on a GPU) both pass."""
    k = 5
    reference = _generate_outcomes(smollm2, CONTEXT, n=400, max_new_tokens=k, seed=0)
    captures = ("off", "static", "graphs") if smollm2.device.type == "cuda" else ("off", "static")
    for capture in captures:
        sampler = TrieWordSampler(smollm2.model, smollm2.tokenizer, batch_size=64, pass_capture=capture)
        for mode in ("exact", "paper"):
            req = SampleWordsRequest(context=CONTEXT, n=1500, seed=1, mode=mode, max_new_tokens=k)
            trie = outcomes(sampler.sample(req))
            assert two_sample_pvalue(reference[mode], trie) > 1e-3, (capture, mode)
            cold = outcomes(sampler.sample(SampleWordsRequest(**{**req.to_record(), "temperature": 0.7})))
            assert two_sample_pvalue(reference[mode], cold) < 1e-6, (capture, mode)


@pytest.mark.slow
def test_real_model_determinism_and_temperature(smollm2: Any) -> None:
    sampler = TrieWordSampler(smollm2.model, smollm2.tokenizer, batch_size=64)
    req = SampleWordsRequest(context=CONTEXT, n=400, seed=5, mode="paper", max_new_tokens=5)
    first = sampler.sample(req)
    assert sampler.sample(req).to_record() == first.to_record()
    assert sampler.sample(SampleWordsRequest(**{**req.to_record(), "seed": 6})).to_record() != first.to_record()
    assert first.n_words + sum(first.rejected.values()) == 400
    # Lower temperature concentrates the mass on the most likely word (temperature 0 is refused by the request).
    top = {t: max(sampler.sample(SampleWordsRequest(**{**req.to_record(), "temperature": t})).counts.values())
           for t in (0.5, 1.5)}  # fmt: skip
    assert top[0.5] > max(first.counts.values()) > top[1.5]


@pytest.mark.slow
def test_real_tokenizer_splits_utf8_and_decodes_whole_lists(smollm2: Any) -> None:
    tokenizer = smollm2.tokenizer
    ctx = tokenizer("He ordered a")["input_ids"]
    ids = tokenizer(" café au lait")["input_ids"]
    pieces = [continuation_text(tokenizer, ctx, ids[:i]) for i in range(1, len(ids) + 1)]
    assert pieces[-1] == " café au lait"
    assert any("\ufffd" in p for p in pieces) or "é" in tokenizer.decode(ids[:1])  # a split or a whole-char token
    assert decide_word(pieces[-1], ended=False, depth=len(ids), mode="exact", max_new_tokens=32) == ("word", "café")


def test_benchmark_paper_word_reads_whole_samples_as_the_trie_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench_word_sampler.paper_word`` (the word of a vLLM sample) walks a whole sample's prefixes with the trie's
    rule: the first word once a space follows it, the word at end-of-sequence, or the text at the token cap."""
    import importlib.util

    from tests.helpers import REPO

    spec = importlib.util.spec_from_file_location("bench_word_sampler", REPO / "benchmarks" / "bench_word_sampler.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)  # dataclasses look their module up while it is executed
    spec.loader.exec_module(bench)
    texts = {10: " the", 11: " cat", 12: "s", 13: ",", 2: ""}

    def decoder(tokens: list[int]) -> str:
        return "".join(texts[t] for t in tokens)

    assert bench.paper_word([10, 11, 12], decoder, {2}, 5) == "the"
    assert bench.paper_word([10, 12, 2], decoder, {2}, 5) == "thes"
    assert bench.paper_word([12, 12, 12, 12, 12], decoder, {2}, 5) == "sssss"
    assert bench.paper_word([10, 13, 11], decoder, {2}, 5) == "the"
    assert bench.paper_word([2], decoder, {2}, 5) == PAPER_FAILURE


def test_attention_switched_away_after_construction_is_switched_back() -> None:
    """The prefix layout is a keyword only the harness's attention reads: a model switched to ``sdpa`` after the
    sampler and the generator were built (as a benchmark did to time plain ``generate``) would silently attend to
    each row's own suffix only, ignoring the context. Both switch it back before every batch."""
    from harness.plugins.hf.generate.generator import BatchGenerator
    from harness.plugins.hf.shared.prefix_attention import ATTENTION_NAME
    from harness.requests import GenerateRequest

    model = small_llama()
    sampler = TrieWordSampler(model, ByteTokenizer(), batch_size=64)
    generator = BatchGenerator(model, ByteTokenizer(), batch_size=64)
    assert sampler.shared_prefix and generator.shared_prefix
    words = SampleWordsRequest(context="a b c", n=300, seed=1, mode="paper", max_new_tokens=3)
    texts = GenerateRequest(prompt="a b c", n=8, seed=2, max_new_tokens=6)
    expected_words, expected_texts = sampler.sample(words), generator.generate(texts)
    for implementation in ("sdpa", "eager"):
        model.set_attn_implementation(implementation)
        assert sampler.sample(words) == expected_words
        assert model.config._attn_implementation == ATTENTION_NAME
        model.set_attn_implementation(implementation)
        assert generator.generate(texts) == expected_texts
        assert model.config._attn_implementation == ATTENTION_NAME


# --------------------------------------------------------------------------------------------------------------------
# The shared-prefix path: LM head into reused buffers, nested contexts read off one pass
# --------------------------------------------------------------------------------------------------------------------


def small_llama(dtype: torch.dtype = torch.float32) -> Any:
    """A random two-layer Llama over the byte tokenizer's vocabulary: the family the shared-prefix path serves."""
    model: Any = tiny_llama(
        VOCAB,
        hidden_size=32,
        intermediate_size=64,
        max_position_embeddings=128,
        initializer_range=0.5,
        eos_token_id=EOS,
    )
    return model.to(dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_next_token_head_equals_the_models_own_softmax_bit_for_bit(dtype: torch.dtype) -> None:
    """The head writes into buffers kept across passes (no page faults on fresh 100 MB tensors) but must compute
    exactly what ``softmax(model(...).logits.float() / T)`` computes, for every pass size and temperature."""
    from harness.plugins.hf.shared.next_token_head import NextTokenHead

    model = small_llama(dtype)
    assert NextTokenHead.supports(model)
    head = NextTokenHead(model)
    with torch.inference_mode():
        for rows, temperature in ((7, 1.0), (3, 0.7), (12, 1.3), (5, 1.0)):
            ids = torch.randint(BYTE_BASE, VOCAB, (rows, 6))
            logits = model(input_ids=ids, logits_to_keep=1).logits[:, -1, :].float()
            expected = torch.softmax(logits if temperature == 1.0 else logits / temperature, dim=-1)
            hidden, _ = head.hidden(ids, None)
            got = head.probabilities(hidden[:, -1], temperature)
            assert got.shape == expected.shape
            assert torch.equal(got, expected), (rows, temperature)


def test_next_token_head_refuses_heads_it_cannot_reproduce() -> None:
    from harness.plugins.hf.shared.next_token_head import NextTokenHead

    model = small_llama()
    assert NextTokenHead.supports(model)
    assert not NextTokenHead.supports(SimpleNamespace(config=SimpleNamespace(model_type="gpt2")))
    model.config.logit_scale = 0.5
    assert not NextTokenHead.supports(model)


def test_carriers_put_each_context_on_the_longest_context_it_begins() -> None:
    carriers = trie_cache.carriers
    assert carriers([[1, 2], [1, 2, 3], [1], [4, 5], [1, 2, 3]]) == [(1, [1, 4, 0, 2]), (3, [3])]
    assert carriers([[7]]) == [(0, [0])]
    # A context is not carried by one that merely shares its start.
    assert carriers([[1, 2, 9], [1, 2, 3, 4]]) == [(1, [1]), (0, [0])]


def test_nested_contexts_are_read_off_one_pass() -> None:
    """Successive Provo contexts extend each other: the group's contexts cost one forward pass of the longest, and
    each context's keys/values and next-token probabilities equal those of its own pass up to float rounding."""
    model = small_llama()
    tokenizer = ByteTokenizer()
    sampler = TrieWordSampler(model, tokenizer, batch_size=64)
    texts = ["a b", "a b c", "a", "x y", "a b c d"]
    contexts = [encode_context(tokenizer, model, t, 4) for t in texts]
    calls: list[int] = []
    assert sampler._head is not None
    hidden = sampler._head.hidden

    def counted(input_ids: torch.Tensor, cache: Any, **kwargs: Any) -> Any:
        calls.append(input_ids.shape[1])
        return hidden(input_ids, cache, **kwargs)

    sampler._head.hidden = counted  # type: ignore[method-assign]
    with torch.inference_mode():
        probs, prefixes, _ = sampler._encode_contexts(contexts, 1.0)
        assert sorted(calls) == [len(contexts[3]), len(contexts[4])]
        probs = probs.clone()
        for i, ids in enumerate(contexts):
            own, _ = sampler._head.hidden(torch.tensor([ids]), sampler._new_cache())
            alone = sampler._head.probabilities(own[:, -1], 1.0)
            torch.testing.assert_close(probs[i], alone[0], rtol=1e-5, atol=1e-6)
            assert prefixes[i].length == len(ids)
            cache = sampler._new_cache()
            sampler._head.hidden(torch.tensor([ids]), cache)
            carrier = max(len(c) for c in contexts if c[: len(ids)] == ids)
            assert prefixes[i].positions == carrier  # a view of the carrier's pass, not a copy
            for layer in range(len(prefixes[i].keys)):
                own_keys, own_values = prefixes[i].own_keys(layer), prefixes[i].own_values(layer)
                torch.testing.assert_close(own_keys, cache.layers[layer].keys[0], rtol=1e-5, atol=1e-6)
                torch.testing.assert_close(own_values, cache.layers[layer].values[0], rtol=1e-4, atol=1e-5)
    # The whole group answers with counts for every request, as alone.
    requests = [
        SampleWordsRequest(context=t, n=200, seed=k, mode="paper", max_new_tokens=3) for k, t in enumerate(texts)
    ]
    for response in sampler.sample_many(requests):
        assert response.n_words + sum(response.rejected.values()) == 200

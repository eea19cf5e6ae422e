"""Children whose word is already decided are counted in bulk on the device
(``harness.plugins.hf.shared.word_boundaries``): the tokens it marks, the parents it folds, and the same counts as
decoding every child on the host."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import torch

from harness.plugins.hf.shared.draws import draw_counts, launch_counts
from harness.plugins.hf.shared.tokens import ContinuationDecoder, decode_many, fast_decoder
from harness.plugins.hf.shared.word_boundaries import read_vocabulary, word_on_space
from harness.plugins.hf.trie.word_sampler import TrieWordSampler
from harness.requests import SampleWordsRequest
from harness.words.rules import decide_and_close, decide_word, first_complete_word, normalise_word, word_a_space_closes
from tests.test_word_sampler import TOK, VOCAB, ByteTokenizer, StubLM, markov2


def test_space_initial_mask_on_the_byte_level_stub() -> None:
    mask = read_vocabulary(ByteTokenizer(), VOCAB, torch.device("cpu"))[0]
    pieces = {" The", " the", " cat", " ca", " ", " dog!", " caf"}
    # The space-initial pieces, and the single byte 0x20 (id 32 + 32), nothing else: not EOS, not "\n", not "t".
    assert sorted(mask.nonzero().flatten().tolist()) == sorted([TOK[p.encode()] for p in pieces] + [64])


def test_word_on_space_only_for_words_no_continuation_changes() -> None:
    assert word_on_space(" the", "exact") == "the"
    assert word_on_space(" Dog!", "exact") == "dog"
    assert word_on_space(" the cat", "exact") == "the"  # already closed: still the first word
    assert word_on_space("", "exact") is None  # no word yet: " " + " cat" is still open
    assert word_on_space(" ,", "exact") is None  # punctuation alone normalises to no word
    assert word_on_space(" caf\ufffd", "exact") is None  # bytes end inside a character: the text may still change
    assert word_on_space(" the", "paper") == "the"
    assert word_on_space(' said:\n"Come', "paper") == "saidcome"  # the study deletes newlines and punctuation
    assert word_on_space(" ", "paper") is None
    # The shortcut is decide_word on the text plus a space, far from the cap, on every case above.
    for text in (" the", " Dog!", " the cat", "", " ,", " ", ' said:\n"Come', " well-", " -"):
        for mode in ("exact", "paper"):
            kind, word = decide_word(text + " ", ended=False, depth=0, mode=mode, max_new_tokens=5)
            assert word_on_space(text, mode) == (word if kind == "word" else None), (text, mode)


def test_folded_draws_are_the_plain_draws_split_in_two() -> None:
    torch.manual_seed(0)
    probs = torch.softmax(torch.randn(6, 300) * 3, dim=-1)
    rng = np.random.default_rng(0)
    uniforms = [rng.random(c) for c in (40, 0, 7, 300, 1, 25)]
    tokens_mask = torch.zeros(300, dtype=torch.bool)
    tokens_mask[::4] = True
    rows = torch.tensor([True, True, False, True, True, False])
    plain = draw_counts(probs, uniforms)
    listed, folded = launch_counts(probs, uniforms, rows, tokens_mask).collect()
    for r in range(6):
        fold = bool(rows[r])
        assert listed[r] == [(t, c) for t, c in plain[r] if not (fold and tokens_mask[t])]
        assert folded[r] == sum(c for t, c in plain[r] if fold and tokens_mask[t])
    assert sum(folded) > 0 and sum(sum(c for _, c in row) for row in listed) > 0


@pytest.mark.parametrize(("mode", "cap"), [("exact", 3), ("exact", 6), ("paper", 4), ("paper", 5)])
def test_bulk_counting_draws_exactly_the_per_child_counts(mode: str, cap: int) -> None:
    """The stub's pieces include a whitespace-only token, a split UTF-8 character and newlines: on every seed the
    sampler with bulk counting returns the very counts and rejections of the one that decodes every child."""
    fn = markov2(seed=5)
    for seed in range(3):
        req = SampleWordsRequest(context="x", n=20_000, seed=seed, mode=mode, max_new_tokens=cap)
        on = TrieWordSampler(StubLM(fn), ByteTokenizer()).sample(req)
        off = TrieWordSampler(StubLM(fn), ByteTokenizer(), fold_word_ends=False).sample(req)
        assert on.to_record() == off.to_record()


@pytest.mark.slow
def test_bulk_counting_on_smollm2_matches_per_child_decoding(smollm2: Any) -> None:
    """The real byte-level tokenizer: its space-initial tokens, and a group of contexts drawn both ways."""
    tokenizer = smollm2.tokenizer
    mask = read_vocabulary(tokenizer, smollm2.model.config.vocab_size, torch.device("cpu"))[0]
    ids = {text: tokenizer(text)["input_ids"][-1] for text in (" the", "the", ",", " Paris", "\n")}
    assert [bool(mask[ids[t]]) for t in (" the", "the", ",", " Paris", "\n")] == [True, False, False, True, False]
    assert not mask[tokenizer.eos_token_id]
    contexts = ["The capital of France is", "She opened the door and", "In the morning, the old man"]
    requests = [SampleWordsRequest(context=c, n=1000, seed=k, mode=m, max_new_tokens=5)
                for k, c in enumerate(contexts) for m in ("exact", "paper")]  # fmt: skip
    for mode in ("exact", "paper"):
        group = [r for r in requests if r.mode == mode]
        on = TrieWordSampler(smollm2.model, tokenizer, batch_size=256).sample_many(group)
        off = TrieWordSampler(smollm2.model, tokenizer, batch_size=256, fold_word_ends=False).sample_many(group)
        assert [r.to_record() for r in on] == [r.to_record() for r in off]


def _first_complete_word_by_characters(text: str, ended: bool) -> tuple[str | None, bool]:
    """The character walk ``first_complete_word`` used before it split with ``str.split`` (kept as the reference)."""
    pos, n = 0, len(text)
    while pos < n:
        while pos < n and text[pos].isspace():
            pos += 1
        start = pos
        while pos < n and not text[pos].isspace():
            pos += 1
        if start == pos:
            break
        word = normalise_word(text[start:pos])
        if word:
            return word, pos < n or ended
    return None, False


def test_first_complete_word_cuts_the_chunks_the_character_walk_cut() -> None:
    """``str.split`` and ``str.isspace`` agree on every whitespace character, Unicode ones included."""
    rng = np.random.default_rng(0)
    alphabet = [*"ab c.,-'\n\t!1_", "\u00a0", "\u2003", "\x1c", "\x85", "é", "\ufffd", "É", "\u200b", "—", "  "]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 12))))
        for ended in (False, True):
            assert first_complete_word(text, ended) == _first_complete_word_by_characters(text, ended), repr(text)


def test_decide_and_close_is_decide_word_and_the_word_a_space_closes() -> None:
    """The sampler reads a child's text once for its outcome and, when open, the word its space-initial children get:
    the same as ``decide_word`` and ``word_a_space_closes`` apart, in both modes, at and below the token cap."""
    rng = np.random.default_rng(1)
    alphabet = [*"ab c.,-'\n\t!1_", "\u00a0", "é", "\ufffd", "É", "—", "  ", " The", "dog"]
    for _ in range(5_000):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 8))))
        for mode, ended, depth in itertools.product(("exact", "paper"), (False, True), (1, 4, 5)):
            kwargs = {"ended": ended, "depth": depth, "mode": mode, "max_new_tokens": 5}
            outcome, closes = decide_and_close(text, **kwargs)  # type: ignore[arg-type]
            assert outcome == decide_word(text, **kwargs), (text, kwargs)  # type: ignore[arg-type]
            assert closes == (word_a_space_closes(text, mode) if outcome[0] == "open" else None), (text, kwargs)


def _check_extended_texts(tokenizer: Any, vocab: int, contexts: list[list[int]], rows: list[list[int]]) -> None:
    """Every prefix of every row, extended token by token from its parent's text, reads as its whole decode."""
    _, pieces = read_vocabulary(tokenizer, vocab, torch.device("cpu"))
    for context in contexts:
        decoder = ContinuationDecoder(tokenizer, context, pieces)
        for row in rows:
            text = ""
            for k in range(1, len(row) + 1):
                text = decoder.extend(text, row[:k])
                assert text == decoder(row[:k]), (context, row[:k])


def test_extended_texts_are_the_whole_decodes_on_the_byte_level_stub() -> None:
    """Split UTF-8 characters (the stub's byte tokens), special tokens and multi-byte pieces, after contexts that end
    whole, inside a character, or not at all."""
    tokenizer = ByteTokenizer()
    rng = np.random.default_rng(2)
    rows = [rng.integers(0, VOCAB, size=int(rng.integers(1, 9))).tolist() for _ in range(400)]
    rows += [tokenizer(text)["input_ids"] for text in ("naïve café", " 😀 ok", "—x")]
    contexts = [tokenizer("the cat")["input_ids"], tokenizer("é")["input_ids"][:1], []]
    _check_extended_texts(tokenizer, VOCAB, contexts, rows)


@pytest.mark.slow
def test_extended_texts_are_the_whole_decodes_on_smollm2(smollm2: Any) -> None:
    """The same on SmolLM2's byte-level BPE: random id lists (most split characters somewhere) and real text."""
    tokenizer = smollm2.tokenizer
    vocab = int(smollm2.model.get_output_embeddings().weight.shape[0])
    rng = np.random.default_rng(3)
    rows = [rng.integers(0, vocab, size=int(rng.integers(1, 10))).tolist() for _ in range(300)]
    rows += [tokenizer(text)["input_ids"] for text in (" Ein Bär läuft über die Straße 😀 — done.", " the cat's")]
    contexts = [tokenizer("The cat sat on the")["input_ids"], tokenizer(" 😀")["input_ids"][:-1]]
    _check_extended_texts(tokenizer, vocab, contexts, rows)
    _, pieces = read_vocabulary(tokenizer, vocab, torch.device("cpu"))
    assert sum(piece is not None for piece in pieces) > 0.9 * vocab  # most tokens are extended, not decoded


@pytest.mark.slow
def test_the_fast_decoder_gives_the_tokenizers_own_text(smollm2: Any) -> None:
    """The Rust tokenizer called directly decodes as ``tokenizer.decode`` does, on random id lists (special tokens
    and split UTF-8 included) and on every single token."""
    tokenizer = smollm2.tokenizer
    decode = fast_decoder(tokenizer)
    rng = np.random.default_rng(0)
    rows = [rng.integers(0, tokenizer.vocab_size, size=int(rng.integers(0, 20))).tolist() for _ in range(2_000)]
    rows += [[token] for token in range(tokenizer.vocab_size)]
    expected = [tokenizer.decode(row, skip_special_tokens=True, clean_up_tokenization_spaces=False) for row in rows]
    assert [decode(row) for row in rows] == expected
    assert decode_many(tokenizer, rows) == expected

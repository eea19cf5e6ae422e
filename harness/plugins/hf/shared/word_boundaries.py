"""Which drawn tokens end a word they follow, decided for a whole pass on the model's device.

Most children the trie word sampler draws are leaves of one kind: a token that starts with a space, drawn after a
prefix whose text already holds a word (``" the"`` followed by ``" cat"``). Such a child's word is its parent's word,
whatever the token: its text is the parent's text, a space, then more, and :func:`harness.words.rules.decide_word`
closes a word once whitespace follows it, so no later character changes it. On the first 64 Provo contexts of SmolLM2
these were 36,070 of the 64,434 children drawn, 56% (``benchmarks/bench_trie_host.py --limit 64 --classify``); each was
decoded by the tokenizer and classified in Python on the host, a large share of a run on a GPU, where the passes are
fast (the first 200 Provo contexts on an H100: 17.7 s that way, 13.2 s with bulk counting; docs/word-sampling.md).

So the sampler decides them in bulk: a boolean mask over the vocabulary says which tokens read as starting with a
space after any text (:func:`read_vocabulary`, computed once per tokenizer), each parent row says whether a space
would close its word (:func:`word_on_space`), and the draws count those children per row on the device
(:func:`harness.plugins.hf.shared.draws.launch_counts`); only the other children come back to the host one by one.

What makes this exact and not a heuristic: a child's text is decoded from the whole token list, so it equals the
parent's text plus the token's piece only when the parent's text is final, which it is unless its bytes end inside a
UTF-8 character (the decoded text then ends with U+FFFD, and such parents are left to the host). And a token is
marked only when two different texts before it decode to themselves followed by the same space-initial piece.
``tests/test_word_boundaries.py`` checks that the bulk path draws exactly the counts of the per-child path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from harness.api import word_a_space_closes
from harness.plugins.hf.shared.tokens import decode_many, ends_whole, fast_decoder

#: Texts put in front of every token to read how it decodes after other text: two, so that a tokenizer whose pieces
#: depend on what precedes them is caught (a token is marked only if both agree).
_ANCHOR_TEXTS = ("a", "x.")


def _anchor_id(tokenizer: Any, text: str) -> int | None:
    ids = [int(t) for t in tokenizer(text)["input_ids"]]
    return ids[-1] if ids else None


def read_vocabulary(tokenizer: Any, vocab_size: int, device: torch.device) -> tuple[torch.Tensor, list[str | None]]:
    """How every token reads after other text, from one batched decode per anchor text: the ``[vocab_size]`` mask of
    tokens whose added text starts with a space (both anchors agreeing on that), and per token the text it adds when
    both anchors give the same one without U+FFFD (None otherwise:
    :meth:`harness.plugins.hf.shared.tokens.ContinuationDecoder.extend` decodes those whole).

    Read off the tokenizer itself, not from its token strings, so byte-level (``Ġ``) and SentencePiece (``▁``)
    vocabularies, and any other, are handled alike. Ids the tokenizer cannot decode are False and None; special
    tokens add nothing (they decode to nothing), so they are False and ``""``."""
    marked = torch.ones(vocab_size, dtype=torch.bool)
    decode = fast_decoder(tokenizer)
    readings: list[list[str | None]] = []
    for text in _ANCHOR_TEXTS:
        anchor = _anchor_id(tokenizer, text)
        if anchor is None:
            return torch.zeros(vocab_size, dtype=torch.bool, device=device), [None] * vocab_size
        head = decode([anchor])
        try:
            texts: list[str | None] = list(decode_many(tokenizer, [[anchor, token] for token in range(vocab_size)]))
        except Exception:  # a tokenizer that refuses some ids: decide token by token
            texts = [_decode_or_none(decode, [anchor, token]) for token in range(vocab_size)]
        added = [t[len(head) :] if t is not None and t.startswith(head) else None for t in texts]
        marked &= torch.tensor([a is not None and a[:1] == " " for a in added], dtype=torch.bool)
        readings.append(added)
    pieces = [a if a == b and a is not None and "\ufffd" not in a else None for a, b in zip(*readings, strict=True)]
    return marked.to(device), pieces


def _decode_or_none(decode: Callable[[list[int]], str], ids: list[int]) -> str | None:
    try:
        return decode(ids)
    except Exception:
        return None


def word_on_space(text: str, mode: str, segmenter: str = "spaces") -> str | None:
    """The word every child of a prefix with this ``text`` gets when its token starts with a space
    (:func:`harness.words.rules.word_a_space_closes`), or None when a space would not close a word or the text may still
    change: it ends inside a UTF-8 character (U+FFFD), which the next bytes can complete into another character."""
    return space_closes(text, word_a_space_closes(text, mode, segmenter))


def space_closes(text: str, word: str | None) -> str | None:
    """``word``, the word a space after ``text`` closes, where ``text`` is whole
    (:func:`harness.plugins.hf.shared.tokens.ends_whole`), else None: :func:`word_on_space` for a caller that found the
    word with the text's own outcome."""
    return word if ends_whole(text) else None

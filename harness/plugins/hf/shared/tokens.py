"""Between text and token ids, one way for both sampling engines (the trie word sampler and the batched generator):
the end-of-sequence ids ``generate`` would stop at, a context or prompt fitted to the model (left truncation, BOS
kept; an empty one becomes BOS), and generated tokens decoded as they read after their context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

#: Context tokens decoded in front of a continuation (see :class:`ContinuationDecoder`): enough for any tokenizer's
#: word-initial-space handling, and independent of the context's length, so long contexts do not slow decoding.
_DECODE_CONTEXT_TOKENS = 16

_DECODE_KWARGS: dict[str, Any] = {"skip_special_tokens": True, "clean_up_tokenization_spaces": False}


def eos_token_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """End-of-sequence ids as ``generate`` sees them: the generation config's, else the tokenizer's."""
    config = getattr(model, "generation_config", None)
    eos = getattr(config, "eos_token_id", None) if config is not None else None
    if eos is None:
        eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        return frozenset()
    if isinstance(eos, int):
        return frozenset({eos})
    return frozenset(int(t) for t in eos)


def _max_context_tokens(model: Any, max_new_tokens: int) -> int | None:
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    limit = getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int) or limit <= 0:
        return None
    return max(1, limit - max_new_tokens)


def fit_context(ids: list[int], tokenizer: Any, model: Any, max_new_tokens: int, what: str = "context") -> list[int]:
    """``ids`` left-truncated to fit the model with ``max_new_tokens`` to go; an empty list becomes the BOS token.

    Longer than ``max_position_embeddings - max_new_tokens``, the rightmost tokens are kept (the ones that matter
    most for what comes next), with a leading BOS token kept in front. An empty list is replaced by BOS, since a
    forward pass needs at least one position (a ValueError naming ``what`` if the tokenizer has none).
    """
    bos = getattr(tokenizer, "bos_token_id", None)
    if not ids:
        if bos is None:
            raise ValueError(f"empty {what} and the tokenizer has no BOS token to condition on")
        return [int(bos)]
    limit = _max_context_tokens(model, max_new_tokens)
    if limit is not None and len(ids) > limit:
        if bos is not None and ids[0] == bos and limit > 1:
            return [ids[0]] + ids[len(ids) - (limit - 1) :]
        return ids[len(ids) - limit :]
    return ids


def encode_context(tokenizer: Any, model: Any, context: str, max_new_tokens: int) -> list[int]:
    """Token ids of ``context`` (the tokenizer's default special tokens), fitted to the model (:func:`fit_context`)."""
    ids = [int(t) for t in tokenizer(context)["input_ids"]]
    return fit_context(ids, tokenizer, model, max_new_tokens)


def _rust_backend(tokenizer: Any) -> Any | None:
    """The ``tokenizers.Tokenizer`` whose ``decode`` is exactly ``tokenizer.decode`` with :data:`_DECODE_KWARGS`,
    or None.

    For transformers' tokenizers backed by the Rust ``tokenizers`` library whose ``decode`` and ``_decode`` are the
    library's own, the call is the backend's ``decode(ids, skip_special_tokens=True)``: the rest is argument
    conversion (``to_py_obj`` walks the id list) and a clean-up that ``clean_up_tokenization_spaces=False`` switches
    off. The trie sampler decodes every open child it draws, about 400 per Provo context; on the H100 machine's host
    that conversion was more than half of the decoding time (docs/word-sampling.md, "On a GPU")."""
    backend = getattr(tokenizer, "_tokenizer", None)
    try:
        from transformers.tokenization_utils_base import PreTrainedTokenizerBase
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:  # another transformers layout: the public call
        return None
    kind = type(tokenizer)
    if (
        isinstance(tokenizer, TokenizersBackend)
        and kind.decode is PreTrainedTokenizerBase.decode
        and kind._decode is TokenizersBackend._decode
        and callable(getattr(backend, "decode", None))
        and callable(getattr(backend, "decode_batch", None))
    ):
        return backend
    return None


def fast_decoder(tokenizer: Any) -> Callable[[list[int]], str]:
    """``tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)``, by the shortest way
    that gives the same text (:func:`_rust_backend`); any other tokenizer keeps its own ``decode``."""
    backend = _rust_backend(tokenizer)
    if backend is not None:
        return lambda ids: str(backend.decode(ids, skip_special_tokens=True))
    return lambda ids: str(tokenizer.decode(ids, **_DECODE_KWARGS))


def decode_many(tokenizer: Any, rows: list[list[int]]) -> list[str]:
    """:func:`fast_decoder` of every row, in one call to the Rust library where it applies."""
    backend = _rust_backend(tokenizer)
    if backend is not None:
        return [str(text) for text in backend.decode_batch(rows, skip_special_tokens=True)]
    return [str(tokenizer.decode(row, **_DECODE_KWARGS)) for row in rows]


class ContinuationDecoder:
    """Decodes generated tokens as they read after a context.

    The whole token list is decoded at once, never token by token, because byte-level BPE splits multi-byte UTF-8
    characters over tokens. Decoding the end of the context plus the continuation and removing the decoded context
    end keeps word-initial spaces for SentencePiece-style tokenizers, which drop a leading space when a continuation
    is decoded alone. Special tokens (end-of-sequence) are not part of the text. The decoded context end is computed
    once per context.
    """

    def __init__(
        self, tokenizer: Any, context_ids: Sequence[int], pieces: Sequence[str | None] | None = None
    ) -> None:
        self.tokenizer = tokenizer
        self._decode = fast_decoder(tokenizer)
        self.tail = [int(t) for t in context_ids[-_DECODE_CONTEXT_TOKENS:]]
        self.head = self._decode(self.tail) if self.tail else ""
        #: Per token id, the text it adds after any whole text, or None (:meth:`extend`); none without a context
        #: tail, where a tokenizer may drop the first token's leading space.
        self.pieces = pieces if self.tail else None
        self._head_whole = ends_whole(self.head)

    def extend(self, text: str, tokens: Sequence[int]) -> str:
        """The text of ``tokens`` given ``text``, that of ``tokens[:-1]``: ``text`` plus the last token's piece when
        the piece is known and ``text`` cannot change any more (the context's decoded end, for the first token),
        else the whole list decoded.

        The trie word sampler makes about a million such texts per Provo run, each one token longer than its
        parent's, and decoding each whole list was a third of the time it spends per child. The piece of a token is
        read once per tokenizer after two different texts and kept only where both agree
        (:func:`harness.plugins.hf.shared.word_boundaries.read_vocabulary`), the same reading bulk counting rests on; a
        text that ends inside a UTF-8 character (U+FFFD) is not whole, since the next bytes can complete it into another
        character. ``tests/test_word_boundaries.py`` checks the texts against whole decodes on SmolLM2."""
        last = tokens[-1]
        piece = self.pieces[last] if self.pieces is not None and 0 <= last < len(self.pieces) else None
        if piece is not None and (ends_whole(text) if len(tokens) > 1 else self._head_whole):
            return text + piece
        return self(tokens)

    def __call__(self, tokens: Sequence[int]) -> str:
        if not tokens:
            return ""
        if not self.tail:
            return self._decode(list(tokens))
        full = self._decode(self.tail + list(tokens))
        if full.startswith(self.head):
            return full[len(self.head) :]
        return self._decode(list(tokens))


def ends_whole(text: str) -> bool:
    """Whether decoded ``text`` stays as it is when more tokens follow: not when it ends inside a UTF-8 character
    (U+FFFD), which the next bytes can complete into another character."""
    return not text.endswith("\ufffd")


def continuation_text(tokenizer: Any, context_ids: Sequence[int], tokens: Sequence[int]) -> str:
    """``tokens`` decoded as they read after ``context_ids`` (one-off :class:`ContinuationDecoder`)."""
    return ContinuationDecoder(tokenizer, context_ids)(tokens)

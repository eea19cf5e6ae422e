"""Cutting texts to a maximum number of tokens before probing, shared by the lexical, syntactic and semantic probes.

Why: human and model productions can differ in length for reasons that have nothing to do with variability (a
model that runs on for 200 tokens shares few n-grams with a 20-word reference). The original study (Giulianelli et
al., 2023) therefore cut every text at ``max_len`` sub-word tokens of its embedding model's tokenizer::

    s = tokenizer.decode(tokenizer(s, truncation=True, max_length=max_len, add_special_tokens=False).input_ids)

and then probed the cut text on all three levels. :class:`Truncator` does the same cut with one difference in how
the prefix is recovered: with a fast tokenizer it cuts the *original string* at the character offset where the
``max_tokens``-th token ends, instead of decoding the token ids. For the study's byte-level RoBERTa tokenizer the two
agree (its decode is lossless); for an uncased WordPiece tokenizer such as the default all-MiniLM-L6-v2 one, decode
would lower-case the text, strip accents and re-space punctuation (``"Marin (to"`` -> ``"marin ( to"``), which would
change the POS tags and n-grams the other probes see. A text with at most ``max_tokens`` tokens is returned
unchanged. Tokenizers without offsets (slow tokenizers) fall back to the study's decode.

``tokenizer="whitespace"`` cuts after the ``max_tokens``-th whitespace-separated word instead, keeping the original
spacing of the prefix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import islice
from typing import Any

from harness.scorers.probes.base import ProbeUnavailable
from harness.scorers.probes.embedding_models import DEFAULT_MODEL, resolve_model

#: ``tokenizer`` value that cuts at whitespace-separated words instead of sub-word tokens.
WHITESPACE = "whitespace"

_WORD = re.compile(r"\S+")

#: Loaded Hugging Face tokenizers by resolved name or path, shared by every truncator in the process.
_TOKENIZERS: dict[str, Any] = {}


def cut_words(text: str, max_words: int) -> str:
    """``text`` up to the end of its ``max_words``-th whitespace-separated word, or unchanged if it has no more."""
    words = list(islice(_WORD.finditer(text), max_words + 1))
    if len(words) <= max_words:
        return text
    return text[: words[max_words - 1].end()]


def tokenizer_name(value: Any) -> str:
    """A ``truncate_tokenizer`` value: ``whitespace`` or a model alias, local path or hub id (a non-empty string)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected 'whitespace' or a model alias, local path or hub id, got {value!r}")
    return value


def load_tokenizer(name: str) -> tuple[Any, str]:
    """The Hugging Face tokenizer for a sentence-transformers model alias, local path or hub id, and what loaded.

    Resolution is the semantic probe's (``embedding_models``: ``all-MiniLM-L6-v2`` -> the packaged copy when
    installed), so that the default truncation uses exactly the embedding model's tokenizer. Raises
    :class:`ProbeUnavailable` when it does not load: the probes cannot cut texts as configured, and cutting
    differently would change every distance.
    """
    resolved, source = resolve_model(name)
    if resolved not in _TOKENIZERS:
        try:
            from transformers import AutoTokenizer

            _TOKENIZERS[resolved] = AutoTokenizer.from_pretrained(resolved)
        except Exception as exc:  # any failure to load means the cut cannot be made as configured
            raise ProbeUnavailable(
                f"truncation tokenizer {name!r} ({source}: {resolved}) could not be loaded: {type(exc).__name__}: {exc}"
            ) from exc
    return _TOKENIZERS[resolved], f"{source}: {resolved}"


class Truncator:
    """Cuts texts to at most ``max_tokens`` tokens of ``tokenizer`` (``None``: no cut), caching each text's cut.

    ``tokenizer`` is ``"whitespace"``, or a sentence-transformers model alias, local path or hub id whose tokenizer
    counts sub-word tokens; ``None`` means the default embedding model (``all-MiniLM-L6-v2``), the study's choice of
    cutting with the semantic probe's tokenizer. The tokenizer loads on first use, so an unused truncator costs
    nothing.
    """

    def __init__(self, max_tokens: int | None = None, tokenizer: str | None = None) -> None:
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
            raise ValueError(f"max_tokens must be a positive integer or null, got {max_tokens!r}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer or null, got {max_tokens!r}")
        if tokenizer is not None and (not isinstance(tokenizer, str) or not tokenizer):
            raise ValueError(f"truncate_tokenizer must be a non-empty string or null, got {tokenizer!r}")
        self.max_tokens = max_tokens
        if tokenizer is None:
            tokenizer = DEFAULT_MODEL
        self.tokenizer_name: str = tokenizer
        self._tokenizer: Any = None
        self._loaded_from: str | None = None
        self._cache: dict[str, str] = {}
        #: Texts actually cut (longer than ``max_tokens``), over distinct texts seen.
        self.n_cut = 0

    @property
    def active(self) -> bool:
        """Whether texts are cut at all."""
        return self.max_tokens is not None

    def __call__(self, texts: Sequence[str]) -> list[str]:
        """The cut version of each text (the text itself when inactive); new distinct texts are cut in one batch."""
        if self.max_tokens is None:
            return list(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            cut = self._cut(missing, self.max_tokens)
            for text, short in zip(missing, cut, strict=True):
                self._cache[text] = short
                self.n_cut += short != text
        return [self._cache[t] for t in texts]

    def _cut(self, texts: list[str], max_tokens: int) -> list[str]:
        if self.tokenizer_name == WHITESPACE:
            return [cut_words(t, max_tokens) for t in texts]
        if self._tokenizer is None:
            self._tokenizer, self._loaded_from = load_tokenizer(self.tokenizer_name)
        tok = self._tokenizer
        if not getattr(tok, "is_fast", False):
            # No offsets: the study's own cut (decode of the kept ids).
            ids = tok(texts, truncation=True, max_length=max_tokens, add_special_tokens=False)["input_ids"]
            return [tok.decode(row) for row in ids]
        # One token beyond the limit tells a text that was cut from one that fits exactly, without tokenising (and
        # warning about) whole long texts.
        enc = tok(
            texts, truncation=True, max_length=max_tokens + 1, add_special_tokens=False, return_offsets_mapping=True
        )
        out = []
        for text, offsets in zip(texts, enc["offset_mapping"], strict=True):
            out.append(text[: offsets[max_tokens - 1][1]] if len(offsets) > max_tokens else text)
        return out

    def describe(self) -> dict[str, object] | None:
        """What was cut and how, for results; ``None`` when texts are not cut."""
        if self.max_tokens is None:
            return None
        info: dict[str, object] = {"max_tokens": self.max_tokens, "tokenizer": self.tokenizer_name}
        if self.tokenizer_name != WHITESPACE:
            info["loaded"] = self._loaded_from
            info["cut_at"] = "character offset" if getattr(self._tokenizer, "is_fast", True) else "decode"
        info["texts_cut"] = self.n_cut
        info["texts_seen"] = len(self._cache)
        return info

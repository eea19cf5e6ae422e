"""Word normalisation shared by human data and model samples.

Model words and human guesses are only comparable if both go through the same function. The Provo norms are
lower-cased with punctuation removed but keep word-internal hyphens (``tight-lipped``), so the harness does the
same: lower-case, drop every Unicode punctuation or symbol character except a hyphen between two letters or digits.
"""

from __future__ import annotations

import string
import unicodedata

_PAPER_PUNCTUATION = str.maketrans("", "", string.punctuation)


def _is_dropped(ch: str) -> bool:
    return unicodedata.category(ch)[0] in ("P", "S")


def normalise_word(word: str) -> str:
    """Lower-case ``word`` and remove punctuation and symbols, keeping hyphens between alphanumerics.

    >>> normalise_word("Song.")
    'song'
    >>> normalise_word("doesn't")
    'doesnt'
    >>> normalise_word("tight-lipped")
    'tight-lipped'
    >>> normalise_word("--")
    ''
    """
    word = word.strip().lower()
    kept: list[str] = []
    for i, ch in enumerate(word):
        if ch == "-":
            before = word[i - 1] if i > 0 else ""
            after = word[i + 1] if i + 1 < len(word) else ""
            if before.isalnum() and after.isalnum():
                kept.append(ch)
            continue
        if not _is_dropped(ch):
            kept.append(ch)
    return " ".join("".join(kept).split())


def first_complete_word(text: str, ended: bool) -> tuple[str | None, bool]:
    """The first whitespace-separated chunk of ``text`` that normalises to a non-empty word.

    Returns ``(word, complete)``. A word is complete when whitespace follows it in ``text`` or when the sample
    ``ended`` (end-of-sequence) right after it; until then more tokens could still extend it.
    ``(None, False)`` means no word has started yet.

    >>> first_complete_word(" the cat", ended=False)
    ('the', True)
    >>> first_complete_word(" the", ended=False)
    ('the', False)
    >>> first_complete_word(", ...", ended=True)
    (None, False)
    """
    pos = 0
    n = len(text)
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


def paper_first_word(text: str) -> str | None:
    """The original study's rule: strip ASCII punctuation, split on whitespace, take the first non-empty word.

    The study did not lower-case; the harness lower-cases afterwards so the word is comparable with the norms.

    >>> paper_first_word(" Apple's watch")
    'apples'
    >>> paper_first_word(" ...")
    """
    words = text.translate(_PAPER_PUNCTUATION).split()
    return words[0].lower() if words else None

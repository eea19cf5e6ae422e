"""Asking an API model for next words, in the two ways the original Provo study asked ChatGPT.

``independent``: every sample is its own request. On a completions endpoint the context is continued as plain text
and the first word of the continuation is taken, exactly as the ``hf`` adapter does (``harness.text``); on a chat
endpoint the model is asked for one plausible next word. ``list``: one request asks for all ``n`` words at once; the
reply is parsed line by line (numbering, bullets, quotes and commas are tolerated) and the count that came back is
reported, short lists as ``rejected["missing"]``, so that a short answer is visible rather than silently rescaled.
"""

from __future__ import annotations

import re
from typing import Literal

from harness.text import normalise_word

ClozeStyle = Literal["independent", "list"]
CLOZE_STYLES: tuple[str, ...] = ("independent", "list")

#: The chat prompt for one word (independent style).
ONE_WORD_PROMPT = (
    "Here is the beginning of a text:\n\n{context}\n\n"
    "What is the next word? Answer with one plausible next word only, with no explanation."
)

#: The prompt for a list of words (list style). Repeats are asked for, because the list stands for a sample of
#: guesses whose frequencies are compared with the human guesses, not for a list of distinct candidates.
WORD_LIST_PROMPT = (
    "Here is the beginning of a text:\n\n{context}\n\n"
    "Give {n} guesses for the next word, one per line, numbered 1 to {n}. Guess as {n} different people reading "
    "the text would: repeat a word as often as you think people would guess it. Answer with the list only."
)

_ITEM_PREFIX = re.compile(r"^\s*(?:[-*\u2022\u2013]+|\(?\d{1,3}[.):\]]|\d{1,3}\s*-)\s*")


def parse_word_list(text: str) -> list[str]:
    """The guessed words in ``text``, in order, normalised like the human norms (``harness.text.normalise_word``).

    One guess per line; a single line with commas or semicolons is split on them. Numbering (``1.``, ``2)``,
    ``(3)``), bullets and surrounding quotes are dropped; a guess of several words counts as its first word. When
    some lines are numbered or bulleted, only those count: a preamble ("Here are 40 guesses:") is not a guess.

    >>> parse_word_list("Sure!\\n1. The\\n2) cat\\n3. \\"dog\\"\\n- a house\\n\\nHope this helps")
    ['the', 'cat', 'dog', 'a']
    >>> parse_word_list("the\\ncat")
    ['the', 'cat']
    >>> parse_word_list("apple, banana; Cherry")
    ['apple', 'banana', 'cherry']
    >>> parse_word_list("1. ...\\n2. 42")
    ['42']
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) == 1 and re.search(r"[,;]", lines[0]):
        lines = re.split(r"[,;]", lines[0])
    if any(_ITEM_PREFIX.match(line) for line in lines):
        lines = [line for line in lines if _ITEM_PREFIX.match(line)]
    words: list[str] = []
    for line in lines:
        item = _ITEM_PREFIX.sub("", line, count=1)
        for chunk in item.split():
            word = normalise_word(chunk)
            if word:
                words.append(word)
                break
    return words


def first_word_of_reply(text: str) -> str | None:
    """The first word of a chat reply that names one word (``"Sure: 'house'."`` gives ``sure``: no guessing).

    >>> first_word_of_reply(" \\"House.\\"\\n"), first_word_of_reply("..."), first_word_of_reply("1. tree")
    ('house', None, 'tree')
    """
    for line in text.splitlines():
        item = _ITEM_PREFIX.sub("", line, count=1)
        for chunk in item.split():
            word = normalise_word(chunk)
            if word:
                return word
    return None

"""Asking an API model for next words, in the two ways the original Provo study asked ChatGPT.

``independent``: every sample is its own request. On a completions endpoint the context is continued as plain text
and the first word of the continuation is taken, exactly as the ``hf`` adapter does (``harness.words.rules``); on a chat
endpoint the model is asked for one plausible next word. ``list``: one request asks for all ``n`` words at once; the
reply is parsed line by line (numbering, bullets, quotes and commas are tolerated) and the count that came back is
reported, short lists as ``rejected["missing"]``, so that a short answer is visible rather than silently rescaled.
"""

from __future__ import annotations

from typing import Literal

from harness.api import first_word_of_reply, parse_word_list

ClozeStyle = Literal["independent", "list"]
CLOZE_STYLES: tuple[str, ...] = ("independent", "list")

__all__ = [
    "CLOZE_STYLES",
    "ONE_WORD_PROMPT",
    "WORD_LIST_PROMPT",
    "ClozeStyle",
    "first_word_of_reply",
    "parse_word_list",
]

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

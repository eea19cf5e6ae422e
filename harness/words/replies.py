"""Words in texts a model wrote elsewhere: a chat reply, a reply that lists many guesses, a recorded continuation or
a word someone else already cut, each put through the task's word rule (``harness.words.rules``).

Why its own module: the API adapter and the replay adapter read such texts; the word rule itself
(``harness.words.rules``) only knows continuations as a sampler grows them.
"""

from __future__ import annotations

import re

from harness.words.rules import (
    EMPTY,
    FAILED,
    PAPER_FAILURE,
    PAPER_FAILURE_RAW,
    decide_word,
    human_word,
    paper_first_word,
    rule_word,
)

_ITEM_PREFIX = re.compile(r"^\s*(?:[-*\u2022\u2013]+|\(?\d{1,3}[.):\]]|\d{1,3}\s*-)\s*")


def parse_word_list(text: str, mode: str = "exact", segmenter: str = "spaces") -> list[str]:
    """The guessed words in a reply that lists many (``text``), in order, each cut by the word rule ``mode``.

    Shared by the API adapter's ``cloze=list`` and by replayed list replies (the study's ChatGPT ``diverse``).

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
        if mode == "paper":
            word = paper_first_word(item)
            if word:
                words.append(word)
            continue
        found = human_word(item, mode, segmenter)[0]  # a person's answer and a listed guess: one rule
        if found:
            words.append(found)
    return words


def first_word_of_reply(text: str, mode: str = "exact", segmenter: str = "spaces") -> str | None:
    """The first word of a chat reply that names one word (``"Sure: 'house'."`` gives ``sure``: no guessing), cut
    by the word rule (``whole``: the reply's first line with a word, whole).

    >>> first_word_of_reply(" \\"House.\\"\\n"), first_word_of_reply("..."), first_word_of_reply("1. tree")
    ('house', None, 'tree')
    """
    rule = "whole" if mode == "whole" else "exact"  # the study never cut chat replies by its rule
    for line in text.splitlines():
        word = human_word(_ITEM_PREFIX.sub("", line, count=1), rule, segmenter)[0]
        if word:
            return word
    return None


def final_word(text: str, *, ended: bool, mode: str, segmenter: str = "spaces") -> tuple[str, str]:
    """The word of a whole continuation recorded elsewhere: ``("word", w)`` or ``("reject", reason)``.

    ``ended`` says whether the text ended where the model stopped (a chat reply) or was cut off after a token
    budget, which ``decide_word`` needs to know whether a last word with nothing after it is complete.
    """
    outcome, value = decide_word(text, ended=ended, depth=1, mode=mode, max_new_tokens=1, segmenter=segmenter)
    assert outcome != "open", "a final text is never open"
    return outcome, value


def recorded_word(word: str, mode: str, segmenter: str = "spaces") -> tuple[str, str]:
    """A word someone else already cut from a continuation (the study released only words for GPT-2), put
    through the word rule ``mode`` as far as a word can be: ``("word", w)`` or ``("reject", reason)``.

    The study's failure marker is a rejection (``failed``) in exact mode and the word ``PAPER_FAILURE`` in paper
    mode; paper mode otherwise only lower-cases, as the study's notebook did with these words.

    >>> recorded_word("Space,", "exact"), recorded_word("Failed to generate word", "exact")
    (('word', 'space'), ('reject', 'failed'))
    >>> recorded_word("Im", "paper"), recorded_word("Failed to generate word", "paper")
    (('word', 'im'), ('word', 'failed to generate word'))
    """
    if word == PAPER_FAILURE_RAW:
        return ("word", PAPER_FAILURE) if mode == "paper" else ("reject", FAILED)
    if mode in ("exact", "whole"):
        normalised = rule_word(word, mode, segmenter)
        return ("word", normalised) if normalised else ("reject", EMPTY)
    return ("word", word.lower()) if word else ("word", PAPER_FAILURE)

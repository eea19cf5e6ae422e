"""Word normalisation shared by human data and model samples.

Model words and human guesses are only comparable if both go through the same function. The Provo norms are
lower-cased with punctuation removed but keep word-internal hyphens (``tight-lipped``), so the harness does the
same: lower-case, drop every Unicode punctuation or symbol character except a hyphen between two letters or digits.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

_PAPER_NON_WORD = re.compile(r"[^\w\s]")


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
    return strip_punctuation(word.strip().lower())


def strip_punctuation(text: str) -> str:
    """``text`` without punctuation and symbols (hyphens between alphanumerics kept), whitespace runs made one
    space: ``normalise_word`` without the case folding, for studies that decide case separately.

    >>> strip_punctuation("U.S. well-known --")
    'US well-known'
    """
    if text.isalnum():  # letters and digits only (most words): nothing to drop, no whitespace to join
        return text
    kept: list[str] = []
    for i, ch in enumerate(text):
        if ch == "-":
            before = text[i - 1] if i > 0 else ""
            after = text[i + 1] if i + 1 < len(text) else ""
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
    # str.split() cuts at exactly the characters str.isspace() accepts; a chunk is complete when a later chunk
    # exists (whitespace separates them) or the text ends with whitespace.
    chunks = text.split()
    for k, chunk in enumerate(chunks):
        word = normalise_word(chunk)
        if word:
            return word, ended or k + 1 < len(chunks) or text[-1].isspace()
    return None, False


def paper_clean(text: str) -> str:
    """The original study's clean-up of a continuation, character by character: newlines deleted (no space put in
    their place, so ``said:\\nCome`` becomes ``saidCome``), then every character that is neither a word character
    nor whitespace deleted with ``re.sub(r'[^\\w\\s]', '', text)`` (Unicode-aware: ``—``, ``“`` and ``¿`` go too).

    >>> paper_clean(' said:\\n"Come — now')
    ' saidCome  now'
    """
    return _PAPER_NON_WORD.sub("", text.replace("\n", ""))


def paper_first_word(text: str) -> str | None:
    """The original study's word: ``paper_clean``, split on single spaces, the first non-empty piece, lower-cased
    (the study lower-cased the words after cutting them). None when there is no piece: the study then recorded its
    failure marker (``PAPER_FAILURE``).

    >>> paper_first_word(" Apple's watch"), paper_first_word(" ¿Qué?"), paper_first_word(" ...")
    ('apples', 'qué', None)
    """
    for piece in paper_clean(text).split(" "):
        if piece:
            return piece.lower()
    return None


#: The study's ``'Failed to generate word'``, recorded when a 5-token continuation held no word. Its notebook
#: lower-cased every word before the filter meant to drop the marker, which compared case-sensitively, so the
#: marker stayed in as a word of the model's distribution; ``mode: paper`` reproduces that bug (docs/reproducing.md).
PAPER_FAILURE = "failed to generate word"
#: The marker as the study's files write it.
PAPER_FAILURE_RAW = "Failed to generate word"


#: Rejection reasons (see ``SampleWordsResponse``). ``failed``: a recorded source's own marker of a sample
#: without a word (the study's ``Failed to generate word``), whose cause (end of text or token budget) is unknown.
EMPTY = "empty"
TRUNCATED = "truncated"
FAILED = "failed"

Outcome = tuple[Literal["word", "reject", "open"], str]


def rule_word(word: str, mode: str) -> str:
    """``word`` as the word rule ``mode`` writes it: what every word an adapter returns must already be.

    ``exact`` is ``normalise_word``; ``paper`` is the study's rule (``paper_first_word``), under which the study's
    failure marker is a word too. Adapters that cut words themselves (an API's word lists, recorded outputs) call
    this, and the ``sample_words`` and ``word_distribution`` kinds refuse any word that is not its own rule word.

    >>> rule_word("There,", "exact"), rule_word("well-known", "exact"), rule_word("snake_case", "exact")
    ('there', 'well-known', 'snakecase')
    >>> rule_word("There,", "paper"), rule_word("snake_case", "paper"), rule_word("failed to generate word", "paper")
    ('there', 'snake_case', 'failed to generate word')
    """
    if mode == "paper":
        return word if word == PAPER_FAILURE else paper_first_word(word) or ""
    return normalise_word(word)


def word_rule_problem(word: str, mode: str) -> str | None:
    """Why an adapter's ``word`` cannot be counted under the word rule ``mode``; None when it can.

    Why refuse instead of fixing the word: a word that is not normal (``There,``) would be counted as a word no
    person wrote, and the run would end with a TVD near 1 and no warning. An adapter that cuts words by its own rule
    is a bug in the adapter, and the harness says so at the first such word.
    """
    expected = rule_word(word, mode)
    if expected == word:
        return None
    if mode == "paper" and word == word.lower() and expected == word.replace("\u0307", ""):
        # 'İ'.lower() is 'i' with a combining dot (U+0307), which the study's clean-up, run before lower-casing,
        # never saw: the rule's own words keep it.
        return None
    shown = f"writes '{expected}'" if expected else "makes no word of (count it as rejected 'empty')"
    return f"the word {word!r}, which the task's word rule ({mode}) {shown}"


def _paper_word_closed(text: str) -> bool:
    """Whether the study's first word of ``text`` is final: a non-empty piece of ``paper_clean(text)`` is followed
    by a space. The clean-up works character by character, so more text only adds pieces at the end."""
    pieces = paper_clean(text).split(" ")
    return any(pieces[:-1])


def word_a_space_closes(text: str, mode: str) -> str | None:
    """The word every continuation of ``text`` that starts with whitespace has, or None if such continuations can
    still differ (no word has started): ``decide_word`` of ``text + " "`` far from any token cap, computed without
    building that text. Text only grows at the end, so the word a space closes is final (the trie sampler counts
    such continuations without decoding them, ``harness.plugins.hf.word_boundaries``).

    >>> word_a_space_closes(" The", "exact"), word_a_space_closes(" ,", "exact"), word_a_space_closes(" Dog!", "paper")
    ('the', None, 'dog')
    """
    if mode == "paper":
        return paper_first_word(text)
    return first_complete_word(text, ended=False)[0]


def decide_word(text: str, *, ended: bool, depth: int, mode: str, max_new_tokens: int) -> Outcome:
    """Classify a sample prefix: ``("word", w)``, ``("reject", reason)``, or ``("open", "")`` if more tokens matter.

    ``text`` is the decoded continuation so far, ``ended`` whether its last token was end-of-sequence, ``depth`` its
    number of tokens (end-of-sequence included). A prefix is closed only when no continuation can change its word:

    * ``exact``: the first chunk that normalises to a word is followed by whitespace (or the sample ended). Text only
      grows at the end, so that chunk and its normalised form are fixed. No word at end-of-sequence is ``empty``; no
      complete word after ``max_new_tokens`` tokens is ``truncated``.
    * ``paper``: the study took the first word of the text of 5 tokens (``paper_first_word``), even a cut-off one.
      Once a cleaned piece is followed by a space, further tokens cannot change that word; otherwise the sample runs
      to ``max_new_tokens`` tokens or end-of-sequence. No word gives the study's failure marker as a word
      (``PAPER_FAILURE``), as its notebooks counted it; nothing is rejected.
    """
    final = ended or depth >= max_new_tokens
    if mode == "exact":
        return decide_and_close(text, ended=ended, depth=depth, mode=mode, max_new_tokens=max_new_tokens)[0]
    if mode == "paper":
        if final or _paper_word_closed(text):
            return "word", paper_first_word(text) or PAPER_FAILURE
        return "open", ""
    raise ValueError(f"unknown word mode {mode!r}: expected 'exact' or 'paper'")


def decide_and_close(
    text: str, *, ended: bool, depth: int, mode: str, max_new_tokens: int
) -> tuple[Outcome, str | None]:
    """``decide_word``, and for an open prefix also ``word_a_space_closes`` (None otherwise), from one reading of the
    text in exact mode: the trie sampler needs both for every open node (the second when the node's children are
    drawn), and finding the first word was the larger part of both.

    >>> decide_and_close(" The", ended=False, depth=1, mode="exact", max_new_tokens=5)
    (('open', ''), 'the')
    >>> decide_and_close(" The cat", ended=False, depth=2, mode="exact", max_new_tokens=5)
    (('word', 'the'), None)
    """
    if mode != "exact":
        outcome = decide_word(text, ended=ended, depth=depth, mode=mode, max_new_tokens=max_new_tokens)
        return outcome, (word_a_space_closes(text, mode) if outcome[0] == "open" else None)
    word, complete = first_complete_word(text, ended)
    if word is not None and complete:
        return ("word", word), None
    if ended:
        return ("reject", EMPTY), None
    if depth >= max_new_tokens:
        return ("reject", TRUNCATED), None
    return ("open", ""), word


# ------------------------------------------------------------------------ replies and recorded outputs
_ITEM_PREFIX = re.compile(r"^\s*(?:[-*\u2022\u2013]+|\(?\d{1,3}[.):\]]|\d{1,3}\s*-)\s*")


def parse_word_list(text: str, mode: str = "exact") -> list[str]:
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


def final_word(text: str, *, ended: bool, mode: str) -> tuple[str, str]:
    """The word of a whole continuation recorded elsewhere: ``("word", w)`` or ``("reject", reason)``.

    ``ended`` says whether the text ended where the model stopped (a chat reply) or was cut off after a token
    budget, which ``decide_word`` needs to know whether a last word with nothing after it is complete.
    """
    outcome, value = decide_word(text, ended=ended, depth=1, mode=mode, max_new_tokens=1)
    assert outcome != "open", "a final text is never open"
    return outcome, value


def recorded_word(word: str, mode: str) -> tuple[str, str]:
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
    if mode == "exact":
        normalised = normalise_word(word)
        return ("word", normalised) if normalised else ("reject", EMPTY)
    return ("word", word.lower()) if word else ("word", PAPER_FAILURE)

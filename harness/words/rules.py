"""Word normalisation shared by human data and model samples.

Model words and human guesses are only comparable if both go through the same function. The Provo norms are
lower-cased with punctuation removed but keep word-internal hyphens (``tight-lipped``), so the harness does the
same: lower-case, drop every Unicode punctuation or symbol character except a hyphen between two letters or digits.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Literal

from harness.words.segmenters import DICTIONARY_SEGMENTERS, WINDOWS, clusters, first_segment, is_dropped, is_space

_PAPER_NON_WORD = re.compile(r"[^\w\s]")


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

    Text outside ASCII is read by user-perceived characters (``harness.words.segmenters.clusters``): an emoji is kept
    whole, ZWJ sequences and flags included (``👩‍💻`` is one word, not a lone U+200D), and a cluster of invisible
    format characters only (a lone zero-width joiner or space) is removed.

    >>> strip_punctuation("U.S. well-known --")
    'US well-known'
    >>> strip_punctuation("«👩\\u200d💻»"), strip_punctuation("\\u200d")
    ('👩\\u200d💻', '')
    """
    if text.isalnum():  # letters and digits only (most words): nothing to drop, no whitespace to join
        return text
    # ASCII text is its own characters, one cluster each (read without the cluster pattern: the common case).
    parts: Sequence[str] = text if text.isascii() else list(clusters(text))
    kept: list[str] = []
    for i, part in enumerate(parts):
        if part == "-":
            before = parts[i - 1] if i > 0 else ""
            after = parts[i + 1] if i + 1 < len(parts) else ""
            if before[:1].isalnum() and after[:1].isalnum():
                kept.append(part)
            continue
        if part in _ASCII_DROPPED:
            continue
        if part.isascii() or is_space(part) or not is_dropped(part):
            kept.append(part)
    return " ".join("".join(kept).split())


#: ASCII punctuation and symbols: ``is_dropped`` of one ASCII character, looked up (the loop above is a hot path).
_ASCII_DROPPED = frozenset(ch for ch in map(chr, range(128)) if is_dropped(ch))


def first_complete_word(text: str, ended: bool, segmenter: str = "spaces") -> tuple[str | None, bool]:
    """The first whitespace-separated chunk of ``text`` that normalises to a non-empty word; with another
    ``segmenter`` (``harness.words.segmenters``), the segmenter's first word of that normalised chunk.

    Returns ``(word, complete)``. A word is complete when whitespace follows it in ``text`` or when the sample
    ``ended`` (end-of-sequence) right after it; until then more tokens could still extend it. A segmenter's word is
    also complete once the normalised chunk is longer than the segmenter's window: more text only adds to its end.
    ``(None, False)`` means no word has started yet.

    Punctuation inside a chunk is removed, never a boundary, under every segmenter: people's answers reach the rule
    normalised (``normalise_word``, punctuation removed), so a model's text must be read the same way for the two
    to be cut alike (``走，到了`` is ``走到了`` on both sides).

    >>> first_complete_word(" the cat", ended=False)
    ('the', True)
    >>> first_complete_word(" the", ended=False)
    ('the', False)
    >>> first_complete_word(", ...", ended=True)
    (None, False)
    >>> first_complete_word("「苹果", ended=False, segmenter="characters")
    ('苹', True)
    """
    # str.split() cuts at exactly the characters str.isspace() accepts; a chunk is complete when a later chunk
    # exists (whitespace separates them) or the text ends with whitespace.
    chunks = text.split()
    for k, chunk in enumerate(chunks):
        word = normalise_word(chunk)
        if word:
            complete = ended or k + 1 < len(chunks) or text[-1].isspace()
            if segmenter == "spaces":
                return word, complete
            return _first_segment(word, complete, segmenter)
    return None, False


def _first_segment(chunk: str, complete: bool, segmenter: str) -> tuple[str | None, bool]:
    """The segmenter's first word of a normalised ``chunk``, and whether it is final: the chunk is ``complete``, or
    longer than the window (its first ``WINDOWS[segmenter]`` clusters, all the segmenter reads, are then fixed)."""
    window = WINDOWS[segmenter]
    word = first_segment(chunk, segmenter)
    longer = sum(1 for _ in itertools.islice(clusters(chunk), window + 1)) > window
    return (word or None), bool(word) and (complete or longer)


def first_complete_line(text: str, ended: bool) -> tuple[str | None, bool]:
    """The ``whole`` rule's word: the first line of ``text`` that normalises to a non-empty text, whole (a phrase,
    whitespace runs made one space). Complete when a line break follows it or the sample ``ended``.

    >>> first_complete_line(" Tisch und Stühle.\\nDann", ended=False), first_complete_line(" Tisch und", ended=False)
    (('tisch und stühle', True), ('tisch und', False))
    """
    lines = text.splitlines()
    for k, line in enumerate(lines):
        word = normalise_word(line)
        if word:
            return word, ended or k + 1 < len(lines) or text[-1] in _LINE_BREAKS
    return None, False


#: What ``str.splitlines`` cuts at.
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


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


#: The word rules (a task's ``params.mode``): ``exact`` the first word of a response, ``paper`` the original
#: study's, ``whole`` the whole response (a phrase) on both sides.
WORD_MODES = ("exact", "paper", "whole")


def rule_word(word: str, mode: str, segmenter: str = "spaces") -> str:
    """``word`` as the word rule ``mode`` (with ``segmenter``) writes it: what every word an adapter returns must
    already be.

    ``exact`` is ``normalise_word`` (with a segmenter other than spaces, the first word of its first run);
    ``whole`` is ``normalise_word`` of the whole text; ``paper`` is the study's rule (``paper_first_word``), under
    which the study's failure marker is a word too. Adapters that cut words themselves (an API's word lists,
    recorded outputs) call this, and the ``sample_words`` and ``word_distribution`` kinds refuse any word that is not
    its own rule word.

    >>> rule_word("There,", "exact"), rule_word("well-known", "exact"), rule_word("snake_case", "exact")
    ('there', 'well-known', 'snakecase')
    >>> rule_word("There,", "paper"), rule_word("snake_case", "paper"), rule_word("failed to generate word", "paper")
    ('there', 'snake_case', 'failed to generate word')
    >>> rule_word("苹果", "exact", "characters"), rule_word("Tisch und Stühle", "whole")
    ('苹', 'tisch und stühle')
    """
    if mode == "paper":
        return word if word == PAPER_FAILURE else paper_first_word(word) or ""
    if mode == "exact" and segmenter != "spaces":
        return first_complete_word(word, ended=True, segmenter=segmenter)[0] or ""
    return normalise_word(word)


def word_rule_problem(word: str, mode: str, segmenter: str = "spaces") -> str | None:
    """Why an adapter's ``word`` cannot be counted under the word rule ``mode``; None when it can.

    Why refuse instead of fixing the word: a word that is not normal (``There,``) would be counted as a word no
    person wrote, and the run would end with a TVD near 1 and no warning. An adapter that cuts words by its own rule
    is a bug in the adapter, and the harness says so at the first such word.
    """
    expected = rule_word(word, mode, segmenter)
    if expected == word:
        return None
    if mode == "exact" and segmenter in DICTIONARY_SEGMENTERS:
        # A dictionary segmenter cuts by context ("走到" in 走到了, "走" alone): a word it gave is checked for what
        # holds alone, a normalised chunk (no whitespace, nothing to remove) of at most its window.
        n_clusters = sum(1 for _ in clusters(word))
        if word == normalise_word(word) and len(word.split()) == 1 and n_clusters <= WINDOWS[segmenter]:
            return None
    if mode == "paper" and word == word.lower() and expected == word.replace("\u0307", ""):
        # 'İ'.lower() is 'i' with a combining dot (U+0307), which the study's clean-up, run before lower-casing,
        # never saw: the rule's own words keep it.
        return None
    shown = f"writes '{expected}'" if expected else "makes no word of (count it as rejected 'empty')"
    return f"the word {word!r}, which the task's word rule ({describe_rule(mode, segmenter)}) {shown}"


def describe_rule(mode: str, segmenter: str = "spaces") -> str:
    """The rule as messages and results name it.

    >>> describe_rule("exact"), describe_rule("exact", "jieba"), describe_rule("whole")
    ('exact', 'exact, segmenter jieba', 'whole')
    """
    return mode if segmenter == "spaces" else f"{mode}, segmenter {segmenter}"


def human_word(response: str, mode: str, segmenter: str = "spaces") -> tuple[str | None, bool]:
    """A person's response under the word rule, the very function a model's text goes through: ``(word, cut)``.

    ``word`` is None when the rule leaves no word; ``cut`` says the response held more than its word (a phrase
    counted as its first word), which the loaders count per instance (``n_human_cut``).

    * ``exact``: the first word, as a model sample's (``first_complete_word`` of a text that ended);
    * ``whole``: the whole response, normalised (``normalise_word``);
    * ``paper``: the original study's human side: the response normalised whole (the study kept phrases).

    >>> human_word("Tisch und Stühle", "exact"), human_word("Tisch und Stühle", "whole")
    (('tisch', True), ('tisch und stühle', False))
    >>> human_word("苹果", "exact", "characters"), human_word(" Song. ", "exact")
    (('苹', True), ('song', False))
    """
    whole = normalise_word(response)
    if mode != "exact":
        return (whole or None), False
    word = first_complete_word(response, ended=True, segmenter=segmenter)[0]
    if word is None:
        return None, False
    return word, word != whole


def _paper_word_closed(text: str) -> bool:
    """Whether the study's first word of ``text`` is final: a non-empty piece of ``paper_clean(text)`` is followed
    by a space. The clean-up works character by character, so more text only adds pieces at the end."""
    pieces = paper_clean(text).split(" ")
    return any(pieces[:-1])


def word_a_space_closes(text: str, mode: str, segmenter: str = "spaces") -> str | None:
    """The word every continuation of ``text`` that starts with whitespace has, or None if such continuations can
    still differ (no word has started; and always under ``whole``, where a space ends no word):
    ``decide_word`` of ``text + " "`` far from any token cap, computed without building that text. Text only grows
    at the end, so the word a space closes is final (the trie sampler counts such continuations without decoding
    them, ``harness.plugins.hf.shared.word_boundaries``).

    >>> word_a_space_closes(" The", "exact"), word_a_space_closes(" ,", "exact"), word_a_space_closes(" Dog!", "paper")
    ('the', None, 'dog')
    """
    if mode == "paper":
        return paper_first_word(text)
    if mode == "whole":
        return None
    return first_complete_word(text, ended=False, segmenter=segmenter)[0]


def decide_word(
    text: str, *, ended: bool, depth: int, mode: str, max_new_tokens: int, segmenter: str = "spaces"
) -> Outcome:
    """Classify a sample prefix: ``("word", w)``, ``("reject", reason)``, or ``("open", "")`` if more tokens matter.

    ``text`` is the decoded continuation so far, ``ended`` whether its last token was end-of-sequence, ``depth`` its
    number of tokens (end-of-sequence included). A prefix is closed only when no continuation can change its word:

    * ``exact``: the first chunk that normalises to a word is followed by whitespace (or the sample ended). Text only
      grows at the end, so that chunk and its normalised form are fixed. No word at end-of-sequence is ``empty``; no
      complete word after ``max_new_tokens`` tokens is ``truncated``. With a ``segmenter``
      (``harness.words.segmenters``) the first run of letters is closed by whitespace, punctuation, the end, or by
      growing past the segmenter's window, and its first word is the segmenter's.
    * ``whole``: the first non-empty line, closed by a line break or the end; ``empty`` and ``truncated`` as above.
    * ``paper``: the study took the first word of the text of 5 tokens (``paper_first_word``), even a cut-off one.
      Once a cleaned piece is followed by a space, further tokens cannot change that word; otherwise the sample runs
      to ``max_new_tokens`` tokens or end-of-sequence. No word gives the study's failure marker as a word
      (``PAPER_FAILURE``), as its notebooks counted it; nothing is rejected.
    """
    final = ended or depth >= max_new_tokens
    if mode in ("exact", "whole"):
        return decide_and_close(
            text, ended=ended, depth=depth, mode=mode, max_new_tokens=max_new_tokens, segmenter=segmenter
        )[0]
    if mode == "paper":
        if final or _paper_word_closed(text):
            return "word", paper_first_word(text) or PAPER_FAILURE
        return "open", ""
    raise ValueError(f"unknown word mode {mode!r}: expected one of {', '.join(WORD_MODES)}")


def decide_and_close(
    text: str, *, ended: bool, depth: int, mode: str, max_new_tokens: int, segmenter: str = "spaces"
) -> tuple[Outcome, str | None]:
    """``decide_word``, and for an open prefix also ``word_a_space_closes`` (None otherwise), from one reading of the
    text in exact mode: the trie sampler needs both for every open node (the second when the node's children are
    drawn), and finding the first word was the larger part of both.

    >>> decide_and_close(" The", ended=False, depth=1, mode="exact", max_new_tokens=5)
    (('open', ''), 'the')
    >>> decide_and_close(" The cat", ended=False, depth=2, mode="exact", max_new_tokens=5)
    (('word', 'the'), None)
    """
    if mode == "paper":
        outcome = decide_word(text, ended=ended, depth=depth, mode=mode, max_new_tokens=max_new_tokens)
        return outcome, (word_a_space_closes(text, mode) if outcome[0] == "open" else None)
    if mode == "exact":
        word, complete = first_complete_word(text, ended, segmenter)
    elif mode == "whole":
        word, complete = first_complete_line(text, ended)
    else:
        raise ValueError(f"unknown word mode {mode!r}: expected one of {', '.join(WORD_MODES)}")
    if word is not None and complete:
        return ("word", word), None
    if ended:
        return ("reject", EMPTY), None
    if depth >= max_new_tokens:
        return ("reject", TRUNCATED), None
    return ("open", ""), (word if mode == "exact" else None)

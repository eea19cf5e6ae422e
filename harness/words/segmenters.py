"""Where a word ends in scripts that do not put spaces between words, and what a character is.

Why its own module: the word rule (``harness.words.rules``) cuts human responses and model samples alike, and in
Chinese, Japanese or Thai whitespace does not end a word, so a model's sample would run to its token budget and count as
one "word" while people typed one. A *segmenter* says where the first word of a run of letters ends:

* ``spaces``: whitespace ends a word (the default; English, German, ...);
* ``characters``: every user-perceived character (an extended grapheme cluster, so ``👩‍💻``, a flag or ``é`` written
  with a combining accent is one) is a word: the dependency-free choice for any script;
* ``jieba``: Chinese words, by jieba's dictionary (``pip install 'variability-harness[zh]'``);
* ``fugashi``: Japanese words, by MeCab with the UniDic Lite dictionary (``pip install 'variability-harness[ja]'``).

A segmenter other than ``spaces`` looks at most ``WINDOWS[name]`` characters of a run (the first whitespace-separated
chunk, normalised: punctuation removed, as people's answers are): the first word is the first word of those
characters. That makes the word a function of a bounded prefix, so the trie sampler can stop a sample as soon as
the run is closed (whitespace, end of sequence) or has more characters than the window,
and stays exact in distribution for this definition. What is lost: a dictionary segmenter that would cut the first
word differently when it saw characters beyond the window (a word longer than the window, or an ambiguity only
resolved further on) is cut as if the run ended there, on both sides alike.
"""

from __future__ import annotations

import functools
import logging
import unicodedata
from collections.abc import Callable, Iterator

import regex

from harness.extras import require_extras

#: The segmenters, in the order the docs list them.
SEGMENTERS = ("spaces", "characters", "jieba", "fugashi")
#: Characters of a run a segmenter looks at: one for ``characters``; for a dictionary segmenter, more than its
#: longest common words (Chinese and Japanese words are one to four characters; eight leaves room for compounds).
WINDOWS = {"characters": 1, "jieba": 8, "fugashi": 8}
#: The extra each dictionary segmenter needs (``harness.extras``).
SEGMENTER_EXTRAS = {"jieba": "zh", "fugashi": "ja"}
#: Segmenters that cut by a dictionary, whose cut of a word depends on the text around it (jieba cuts ``走到`` in
#: ``走到了`` as one word, alone as ``走`` and ``到``): a word they gave is not always their cut of itself.
DICTIONARY_SEGMENTERS = frozenset(SEGMENTER_EXTRAS)

_CLUSTER = regex.compile(r"\X")
#: Clusters kept although their first character is a symbol: emoji (presented as emoji, or asked to be with U+FE0F)
#: and flags (pairs of regional indicators).
_EMOJI = regex.compile(r"\p{Emoji_Presentation}|\uFE0F|\p{Regional_Indicator}|\p{Extended_Pictographic}\u200D")
#: Scripts written without spaces between words.
SPACELESS = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Tibetan}]")
_SCRIPT_NAMES = (
    ("Han", r"\p{Han}"),
    ("Hiragana", r"\p{Hiragana}"),
    ("Katakana", r"\p{Katakana}"),
    ("Thai", r"\p{Thai}"),
    ("Lao", r"\p{Lao}"),
    ("Khmer", r"\p{Khmer}"),
    ("Myanmar", r"\p{Myanmar}"),
    ("Tibetan", r"\p{Tibetan}"),
)


def clusters(text: str) -> Iterator[str]:
    """The extended grapheme clusters of ``text`` (UAX #29), in order.

    >>> [len(c) for c in clusters("a👩\\u200d💻🇩🇪e\\u0301")]  # a, woman ZWJ laptop, a flag, e + combining accent
    [1, 3, 2, 2]
    """
    for match in _CLUSTER.finditer(text):
        yield match.group()


def is_space(cluster: str) -> bool:
    return cluster[0].isspace()


def is_dropped(cluster: str) -> bool:
    """Whether the word rule removes this cluster: punctuation or a symbol that is not an emoji or a flag, or only
    invisible format characters (a lone zero-width joiner or space, a soft hyphen)."""
    category = unicodedata.category(cluster[0])
    if category[0] in ("P", "S"):
        return cluster.isascii() or _EMOJI.search(cluster) is None  # ASCII holds no emoji
    return all(unicodedata.category(ch) == "Cf" for ch in cluster)


def spaceless_script(text: str) -> str | None:
    """The name of the first script without spaces between words that ``text`` uses, or None.

    >>> spaceless_script("der Tisch"), spaceless_script("苹果"), spaceless_script("ねこ")
    (None, 'Han', 'Hiragana')
    """
    found = SPACELESS.search(text)
    if found is None:
        return None
    for name, pattern in _SCRIPT_NAMES:
        if regex.match(pattern, found.group()):
            return name
    return "spaceless"


def check_segmenter(name: str) -> None:
    """Refuse a segmenter whose extra is missing (one line with the pip command) before any data or model loads."""
    if name not in SEGMENTERS:
        raise ValueError(f"unknown segmenter {name!r} (known: {', '.join(SEGMENTERS)})")
    extra = SEGMENTER_EXTRAS.get(name)
    if extra:
        require_extras((extra,), f"the segmenter '{name}'")


def first_segment(run: str, segmenter: str) -> str:
    """The first word of ``run`` (letters without whitespace or punctuation, case already folded), looking at no
    more than the segmenter's window.

    >>> first_segment("苹果树", "characters"), first_segment("👩\\u200d💻x", "characters")
    ('苹', '👩\\u200d💻')
    """
    if segmenter == "spaces":
        return run
    window = WINDOWS[segmenter]
    head: list[str] = []
    for cluster in clusters(run):
        head.append(cluster)
        if len(head) >= window:
            break
    if segmenter == "characters":
        return head[0] if head else ""
    words = _cutter(segmenter)("".join(head))
    return next((w for w in words if w.strip()), "")


@functools.cache
def _cutter(segmenter: str) -> Callable[[str], list[str]]:
    """The dictionary segmenter, loaded once per process."""
    check_segmenter(segmenter)
    if segmenter == "jieba":
        import jieba

        jieba.setLogLevel(logging.WARNING)
        tokenizer = jieba.Tokenizer()
        return lambda text: list(tokenizer.cut(text, HMM=True))
    if segmenter == "fugashi":
        import fugashi

        tagger = fugashi.Tagger()
        return lambda text: [word.surface for word in tagger(text)]
    raise ValueError(f"no dictionary for segmenter {segmenter!r}")

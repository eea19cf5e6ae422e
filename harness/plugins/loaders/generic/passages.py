"""``generic_cloze``'s ``passages`` option: a cloze study's contexts and corpus words read from its passages.

Provo-like cloze studies publish a table of (text id, word position, responses) and the passages themselves, as
text files (one per passage) or as a column of a table. The context of a position is then not in the data: it is
the passage's words before the position, which a template cannot build from a file. This module reads the
passages, counts their words, and gives each group of rows its context and the passage's word at its position.

Why the text is cleaned before it is cut: passages are typed or copied from PDFs and web pages, so the same
printed text arrives with CRLF or CR line ends, a byte order mark, non-breaking spaces, a stray NEL (U+0085, a
Latin-1 line end read as UTF-8) or invisible zero-width characters. Read by these rules, every such copy gives the
contexts of the clean one, character for character:

* the bytes are UTF-8 (``file_rows.utf8_text``: a leading byte order mark dropped; UTF-16, UTF-32, bytes that are
  not UTF-8, or NUL bytes are one line naming the file);
* a byte order mark (U+FEFF), a zero-width space (U+200B) or a word joiner (U+2060) inside the text is removed: it
  prints as nothing, and a word typed from the printed passage never has one; a zero-width joiner (U+200D) is
  removed too, except between two characters outside ASCII, where it is part of the spelling (emoji sequences such
  as 👩‍💻, conjuncts of Indic scripts);
* the tokens are Python's ``str.split()``: any run of Unicode white space separates two tokens, so line ends (LF,
  CRLF, CR, NEL, U+2028, U+2029), tabs, NBSP (U+00A0), U+3000 and the other spaces are all one separator, and
  none is part of a token;
* the context of a position is the tokens before its word joined by single spaces (the Provo seed code's rule:
  "the first Word_Number - 1 space-separated tokens of the passage"); the word itself is the token as printed
  (``target_raw``, punctuation included), and ``target`` is its ``normalise_word``.

Two counting rules say which tokens are word positions (position 1 is the first word counted):

* ``whitespace``: every token is a word (Provo counts this way: "—" between spaces is a word of its own);
* ``alphanumeric``: only a token with at least one letter or digit is a word, so a lone dash, "-", "…" or "&" is
  not a position; it is still in the context of every word after it.

Every position is checked: a position that is not a whole number, below 1 or beyond the passage's words, a text id
without a passage, and, when ``word`` names the data's own copy of the corpus word, every position where the
passage's word and the data's differ after ``normalise_word``; each is one line naming the file, the row, the text
and the position, and all are reported together (``build.build_all``).

The passages' bytes are part of the data's hash, so an edited passage never reuses stored responses.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.api import (
    HarnessError,
    Option,
    OptionError,
    Options,
    hash_files,
    normalise_word,
    one_of,
    optional,
    resolve_data_paths,
    shorten,
    shorten_repr,
)
from harness.data.tables.file_rows import utf8_text
from harness.plugins.loaders.generic.build import Group, text, whole_number
from harness.plugins.loaders.generic.fields import Field, RowError
from harness.plugins.loaders.generic.table import key_text

COUNTINGS = ("whitespace", "alphanumeric")
#: Invisible characters removed wherever they are (see the module docstring).
_INVISIBLE = re.compile("[\ufeff\u200b\u2060]")
#: A zero-width joiner that does not stand between two characters outside ASCII (white space counts as ASCII).
_LOOSE_JOINER = re.compile(r"(?<![^\x00-\x7f\s])\u200d|\u200d(?![^\x00-\x7f\s])")


# ----------------------------------------------------------------------------------------------------- options


@dataclass(frozen=True)
class PassagesSpec:
    """Where the passages are and how the rows point into them (the ``passages`` data option, parsed)."""

    #: Paths or globs of passage files, one passage per file (the id from the file name by ``id``) ...
    files: tuple[str, ...] | None
    #: ... or each text id's file, as the YAML maps them (ids as written: ``key_text``) ...
    by_id: dict[str, str] | None
    #: ... or the rows' column holding the passage's text.
    column: str | None
    #: The file name with ``*`` standing for the text id (None: the name without its extension).
    id_pattern: str | None
    #: The rows' column naming the passage (with ``files``; optional with ``column``, for messages).
    key: str | None
    #: The rows' column holding the word's position (1: the passage's first word).
    position: str
    counting: str
    #: The rows' column holding the corpus word, checked against the passage's word at the position.
    word: str | None


def _files(value: Any) -> tuple[str, ...] | dict[str, str]:
    if isinstance(value, str) and value.strip():
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return tuple(value)
    if isinstance(value, Mapping) and value:
        by_id: dict[str, str] = {}
        for key, path in value.items():
            if isinstance(key, (list, dict)) or key is None or not isinstance(path, str) or not path.strip():
                raise ValueError(f"expected text id: file path, got {shorten_repr(key)}: {shorten_repr(path)}")
            by_id[key_text(key)] = path
        return by_id
    raise ValueError(
        f"expected a path or glob, a list of them, or a mapping of text id to file, got {shorten_repr(value)}"
    )


_files.type_name = "path | glob | list | {id: path}"  # type: ignore[attr-defined]


def _id_pattern(value: Any) -> str:
    if not isinstance(value, str) or value.count("*") != 1 or "/" in value or "\\" in value:
        raise ValueError(
            f"expected a file name with one * standing for the text id (text_*.txt), got {shorten_repr(value)}"
        )
    return value


_id_pattern.type_name = "file name with one *"  # type: ignore[attr-defined]


def _column(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a column name, got {shorten_repr(value)}")
    return value


PASSAGES_OPTIONS = Options(
    Option(
        "files", optional(_files), None, "passage files: a path, a glob or a list (one passage per file), or {id: path}"
    ),
    Option(
        "id", optional(_id_pattern), None, "with a glob: the file name, * standing for the text id (default: the stem)"
    ),
    Option("column", optional(_column), None, "instead of files: the rows' column holding the passage's text", "str"),
    Option("key", optional(_column), None, "the rows' column naming the passage (required with files)", "str"),
    Option(
        "position", optional(_column), None, "the rows' column with the word's position, 1 = first (required)", "str"
    ),
    Option("counting", one_of(*COUNTINGS), "whitespace", "which tokens are words", " | ".join(COUNTINGS)),
    Option(
        "word", optional(_column), None, "the rows' column with the corpus word, checked against the passage", "str"
    ),
)


def passages_option(value: Any) -> PassagesSpec:
    """The ``passages`` data option; a bad combination is a ``ValueError`` (one line, from ``Option.check``)."""
    if not isinstance(value, Mapping):
        raise ValueError(
            f"expected a mapping {{files or column, key, position, counting, word}}, got {shorten_repr(value)}"
        )
    try:
        parsed = PASSAGES_OPTIONS.parse(value, "passages")
    except OptionError as exc:  # said under the loader's name by ``Option.check``, as every other bad value is
        raise ValueError(str(exc).removeprefix("passages: ")) from None
    files, column = parsed["files"], parsed["column"]
    if (files is None) == (column is None):
        raise ValueError("give exactly one of 'files' (passage files) and 'column' (the passage's text in the rows)")
    if parsed["position"] is None:
        raise ValueError("'position' is required: the rows' column with the word's position (1 = the first word)")
    if files is not None and parsed["key"] is None:
        raise ValueError("'key' is required with 'files': the rows' column naming the passage (its text id)")
    if parsed["id"] is not None and not isinstance(files, tuple):
        raise ValueError(
            "'id' reads the text id from a file name: give 'files' as a path or glob, not with 'column' or a mapping"
        )
    return PassagesSpec(
        files=files if isinstance(files, tuple) else None,
        by_id=files if isinstance(files, dict) else None,
        column=column,
        id_pattern=parsed["id"],
        key=parsed["key"],
        position=parsed["position"],
        counting=parsed["counting"],
        word=parsed["word"],
    )


passages_option.type_name = "{files | column, id, key, position, counting, word}"  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------------------- words


def tokens_of(raw: str) -> tuple[str, ...]:
    """The passage's tokens by the module's rules (invisible characters removed, any white space a separator)."""
    return tuple(_LOOSE_JOINER.sub("", _INVISIBLE.sub("", raw)).split())


def is_word(token: str, counting: str) -> bool:
    """Whether ``token`` is a word position under ``counting``."""
    return counting == "whitespace" or any(ch.isalnum() for ch in token)


@dataclass(frozen=True)
class Passage:
    """One passage's tokens and which of them are word positions."""

    #: How messages name it: ``text 3``, or the passage's first words when no text id is known.
    name: str
    #: Where it was read: a file, or a column.
    label: str
    tokens: tuple[str, ...]
    #: The index in ``tokens`` of word 1, word 2, ...
    words: tuple[int, ...]

    @classmethod
    def read(cls, raw: str, name: str, label: str, counting: str) -> Passage:
        tokens = tokens_of(raw)
        return cls(name, label, tokens, tuple(i for i, t in enumerate(tokens) if is_word(t, counting)))

    def at(self, position: int) -> tuple[str, str]:
        """The context before word ``position`` (from 1) and the word as printed; the caller checked the range."""
        index = self.words[position - 1]
        return " ".join(self.tokens[:index]), self.tokens[index]


# ----------------------------------------------------------------------------------------------------- reading


@dataclass
class Passages:
    """The passages of one load, and what the data source records about them."""

    spec: PassagesSpec
    #: By text id (``key_text``), for ``files``; empty for ``column`` (read from the rows: ``_by_text``).
    by_id: dict[str, Passage]
    paths: list[Path]
    #: ``column``'s passages by (text id or None, text), each read once.
    _by_text: dict[tuple[str | None, str], Passage] = field(default_factory=dict)

    def locate(self, group: Group) -> tuple[str, str]:
        """The group's context and the passage's word at its position, as printed; a bad position, an unknown
        text id or a word that differs from the data's is a ``RowError`` naming the file, the row and the field."""
        where, spec = group.where, self.spec
        key = None if spec.key is None else group.same(Field("passages.key", column=spec.key, given=spec.key))
        passage = self._passage(group, key)
        given = group.same(Field("passages.position", column=spec.position, given=spec.position))
        position = whole_number(given, where, "passages.position", "a word position (a whole number from 1)")
        if not 1 <= position <= len(passage.words):
            words = f"its words are 1 to {len(passage.words)}" if passage.words else "it has no words"
            raise RowError(
                f"{where}: field 'passages.position': {passage.name} has no word {position}: {words} (counting: "
                f"{spec.counting}; {passage.label})"
            )
        context, printed = passage.at(position)
        if spec.word is not None:
            data_word = text(
                group.same(Field("passages.word", column=spec.word, given=spec.word)), where, "passages.word"
            )
            if normalise_word(printed) != normalise_word(data_word):
                raise RowError(
                    f"{where}: field 'passages.word': {passage.name} word {position}: the passage has "
                    f"{shorten_repr(printed, 40)}, the data {shorten_repr(data_word, 40)} (column {spec.word!r})"
                )
        return context, printed

    def _passage(self, group: Group, key: Any) -> Passage:
        spec = self.spec
        if spec.column is None:
            found = self.by_id.get(key_text(key))
            if found is None:
                known = ", ".join(sorted(self.by_id, key=_natural))
                raise RowError(
                    f"{group.where}: field 'passages.key': text id {shorten_repr(key)} has no passage (passages: "
                    f"{shorten(known, 120)}; ids are compared as written: 01 is not 1)"
                )
            return found
        column = Field("passages.column", column=spec.column, given=spec.column)
        raw = text(group.same(column), group.where, "passages.column")
        memo = (None if key is None else key_text(key), raw)
        found = self._by_text.get(memo)
        if found is None:
            words = " ".join(tokens_of(raw)[:4])
            name = f"the passage {shorten_repr(words, 40)}" if memo[0] is None else f"text {memo[0]}"
            found = self._by_text[memo] = Passage.read(raw, name, f"column {spec.column!r}", spec.counting)
        return found

    def data_hash(self, table_hash: str) -> str:
        """The table's hash with the passage files' (a passage column is in the table's already)."""
        if not self.paths:
            return table_hash
        return "sha256:" + hashlib.sha256((table_hash + hash_files(self.paths)).encode()).hexdigest()

    def source(self) -> dict[str, Any]:
        """What results.json records: where the passages came from, the counting rule, how many were read."""
        where: dict[str, Any] = (
            {"column": self.spec.column} if self.spec.column is not None else {"files": [str(p) for p in self.paths]}
        )
        n = len(self._by_text) if self.spec.column is not None else len(self.by_id)
        return {**where, "counting": self.spec.counting, "n_passages": n}


def read_passages(spec: PassagesSpec, data_dir: Path) -> Passages:
    """The passages ``spec`` names, read (nothing to read for ``column``: the rows hold them)."""
    if spec.column is not None:
        return Passages(spec, {}, [])
    if spec.by_id is not None:
        named = [(ident, _one_file(path, ident, data_dir)) for ident, path in spec.by_id.items()]
    else:
        assert spec.files is not None
        named = _ids_from_names(resolve_data_paths(spec.files, data_dir, "passages.files"), spec.id_pattern)
    by_id: dict[str, Passage] = {}
    for ident, path in named:
        passage = Passage.read(_read_text(path), f"text {ident}", str(path), spec.counting)
        if not passage.words:
            raise HarnessError(f"{path}: passage {ident!r}: no words (counting: {spec.counting})")
        by_id[ident] = passage
    return Passages(spec, by_id, [path for _, path in named])


def _one_file(given: str, ident: str, data_dir: Path) -> Path:
    paths = resolve_data_paths((given,), data_dir, f"passages.files.{ident}")
    if len(paths) != 1:
        raise HarnessError(
            f"data option 'passages.files': text id {ident!r}: {given!r} matches {len(paths)} files (one passage is "
            "one file)"
        )
    return paths[0]


def _ids_from_names(paths: list[Path], pattern: str | None) -> list[tuple[str, Path]]:
    """Each file's text id from its name: the part ``*`` stands for in ``pattern``, or the name's stem."""
    regex = None if pattern is None else re.compile("(.+)".join(re.escape(part) for part in pattern.split("*")))
    named: list[tuple[str, Path]] = []
    seen: dict[str, Path] = {}
    for path in paths:
        match = None if regex is None else regex.fullmatch(path.name)
        if regex is not None and match is None:
            raise HarnessError(
                f"{path}: data option 'passages.id': the name {path.name!r} does not match {pattern!r} (* stands for "
                "the text id; narrow 'passages.files' to the passages)"
            )
        ident = path.stem if match is None else match.group(1)
        if ident in seen:
            raise HarnessError(f"{path}: data option 'passages.id': text id {ident!r} is also the id of {seen[ident]}")
        seen[ident] = path
        named.append((ident, path))
    return named


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    return utf8_text(path, data)


def _natural(ident: str) -> tuple[int, str]:
    """Text ids in the order people number them (2 before 10)."""
    return (int(ident), "") if ident.isdigit() else (1 << 62, ident)

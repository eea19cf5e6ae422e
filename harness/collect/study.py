"""A study file (YAML): what `harness collect` serves, to how many people, and what it asks of them.

Why a checked schema: a study runs for days with real participants, so a typo (``participants_per_itme``) or a
missing consent text must stop ``harness collect serve`` before the first participant arrives, in one line naming
the file and the field, exactly as a task file does. The study's digest (over its checked content and the bytes of
its texts file) is stored with the responses, so a database is never continued under a study that changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, shorten_repr
from harness.files import read_bytes
from harness.options import (
    Option,
    OptionError,
    Options,
    boolean,
    integer,
    non_negative_int,
    one_of,
    optional,
    positive_int,
    text,
)
from harness.task_config import read_yaml

#: The study kinds, each an item layout and a participant page (docs/collect.md).
KINDS = ("passage_cloze", "sentence_completion", "next_token_game", "which_one_game")
#: Kinds whose items come from a model's tokenizer (and, for the which-one game, its samples).
GAME_KINDS = ("next_token_game", "which_one_game")
#: The which-one game's answers, in percent: the probability that token A is the original (Shlegeris et al.'s 11).
JUDGMENT_PERCENTS = (1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 99)
#: URL parameters crowdsourcing platforms pass the participant's id in (Prolific, MTurk, CloudResearch, SONA).
DEFAULT_ID_PARAMS = ("PROLIFIC_PID", "workerId", "participantId", "id")
#: The longest answer a participant may type; longer submissions are refused, never cut.
MAX_ANSWER_CHARS = 100
#: The keys of ``completion``: what finishing participants and excluded ones are given.
COMPLETION_KEYS = ("code", "url", "excluded_code", "excluded_url")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_PARAM = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")


@dataclass(frozen=True)
class TextSource:
    """Where the study's texts come from: a data file (relative to the study file) or a task's instances."""

    file: Path | None = None
    id_field: str = "id"
    text_field: str = "text"
    #: A column giving an item's own number of participants (instead of ``participants_per_item``).
    participants_field: str | None = None
    task: str | None = None
    limit: int | None = None

    def describe(self) -> str:
        return f"task {self.task}" if self.task else str(self.file)


@dataclass(frozen=True)
class CatchItem:
    """An attention check: a prompt with a known answer. Cloze kinds and the next-token game show ``text`` and
    accept any of ``answers`` (compared case-folded, surrounding space ignored); the which-one game shows
    ``text`` with ``true_token`` and ``sampled_token``, and a check is passed when the judgment gives the true token
    more than 50%."""

    text: str
    answers: tuple[str, ...] = ()
    true_token: str = ""
    sampled_token: str = ""


@dataclass(frozen=True)
class Study:
    """A checked study file. ``digest`` identifies it in the database and in every export."""

    path: Path
    name: str
    kind: str
    texts: TextSource
    participants_per_item: int
    items_per_participant: int
    consent: str
    instructions: str
    practice: tuple[CatchItem, ...]
    attention_checks: tuple[CatchItem, ...]
    attention_every: int
    attention_max_failures: int
    response_seconds: int | None
    session_minutes: int
    completion_code: str | None
    completion_url: str | None
    #: What an excluded participant (failed attention checks, or excluded by the organiser) is given instead of the
    #: completion code: the platform's own code for them (Prolific's "screened out" or "failed checks"), or nothing.
    excluded_code: str | None
    excluded_url: str | None
    #: The page title participants see (the tab's title and the heading): never the internal ``study`` name.
    title: str
    id_params: tuple[str, ...]
    allow_skip: bool
    first_word: int
    model: str | None
    position_start: int
    position_every: int
    positions_per_text: int | None
    samples_per_position: int
    seed: int
    digest: str = field(default="", compare=False)
    #: The study file as parsed (JSON-ready), and the SHA-256 of its texts file: kept in the database, so that a
    #: later start can tell which fields changed (``harness.collect.edits``) and ``status`` can report the study
    #: as it was served.
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    texts_sha256: str = field(default="", compare=False)

    @property
    def is_game(self) -> bool:
        return self.kind in GAME_KINDS


_TOP = Options(
    Option("study", text, None, "the study's name: letters, digits, _ . - (it names the export)"),
    Option("title", text, "Research study", "the title participants see (the browser tab, the pages' heading)"),
    Option("kind", one_of(*KINDS), None, "what participants do: " + ", ".join(KINDS)),
    Option("texts", lambda v: v, None, "{file, id, text, participants, limit} or {task, limit}: the items' texts"),
    Option("participants_per_item", positive_int, 40, "people who should see each item"),
    Option("items_per_participant", positive_int, 5, "items (passages, sentences, texts, rounds) per person"),
    Option("consent", text, None, "the consent text, shown first (plain text; blank lines separate paragraphs)"),
    Option("instructions", text, None, "the instructions, shown after consent"),
    Option("practice", lambda v: v, [], "practice items, shown before the real ones and never exported"),
    Option("attention_checks", lambda v: v, None, "{every, max_failures, items: [...]}: catch items"),
    Option("time_limits", lambda v: v, {}, "{response_seconds, session_minutes}"),
    Option(
        "completion",
        lambda v: v,
        {},
        "{code, url, excluded_code, excluded_url}: the platform's completion code and link, and those for excluded "
        "participants (default: none)",
    ),
    Option("participant_id_params", lambda v: v, list(DEFAULT_ID_PARAMS), "URL parameters holding the platform id"),
    Option("allow_skip", boolean, False, "whether a participant may leave an answer empty"),
    Option("first_word", positive_int, 2, "passage cloze: the first word number guessed (Provo: 2)"),
    Option("model", optional(text), None, "games: the model whose tokenizer (and samples) the game uses"),
    Option("positions", lambda v: v, {}, "games: {start, every, per_text}: which token positions are played"),
    Option("samples_per_position", positive_int, 1, "which-one game: sampled tokens (rounds) per position"),
    Option("seed", integer, 0, "seeds the sampled tokens and the order items are shown in"),
)


def load_study(path: Path) -> Study:
    """The checked study at ``path``; every problem is one ``HarnessError`` line naming the file and the field."""
    raw = read_yaml(path)
    if not isinstance(raw, Mapping):
        raise HarnessError(f"{path}: expected a mapping of study fields, got {type(raw).__name__}")
    return parse_study(raw, path)


def parse_study(raw: Mapping[str, Any], path: Path, stored: tuple[str, str] | None = None) -> Study:
    """The checked study of ``raw`` (the study file at ``path`` as parsed). ``stored``: (digest, texts SHA-256) of a
    copy kept in a study database, read without its texts file (which may have changed since)."""
    where = str(path)
    try:
        values = _TOP.parse(raw, where, noun="field")
    except OptionError as exc:
        raise HarnessError(str(exc)) from None
    for required in ("study", "kind", "texts", "consent", "instructions"):
        if values[required] is None:
            raise HarnessError(f"{where}: field '{required}': missing ({_TOP.by_name[required].help})")
    name, kind = values["study"], values["kind"]
    if not _NAME.match(name):
        raise HarnessError(
            f"{where}: field 'study': expected letters, digits, _ . - (at most 64), got {shorten_repr(name)}"
        )
    texts = _texts(values["texts"], path, check_file=stored is None)
    limits = _mapping(values["time_limits"], where, "time_limits", ("response_seconds", "session_minutes"))
    completion = _mapping(values["completion"], where, "completion", COMPLETION_KEYS)
    positions = _mapping(values["positions"], where, "positions", ("start", "every", "per_text"))
    checks = values["attention_checks"] or {}
    checks = _mapping(checks, where, "attention_checks", ("every", "max_failures", "items"))
    model = values["model"]
    if kind in GAME_KINDS and not model:
        raise HarnessError(f"{where}: field 'model': missing (the {kind} needs a model, e.g. hf:smollm2-135m)")
    if kind not in GAME_KINDS and model:
        raise HarnessError(f"{where}: field 'model': only the games use a model, not a {kind}")
    url, excluded_url = (_url(completion, key, where) for key in ("url", "excluded_url"))
    study = Study(
        path=path,
        name=name,
        kind=kind,
        texts=texts,
        participants_per_item=values["participants_per_item"],
        items_per_participant=values["items_per_participant"],
        consent=_nonblank(values["consent"], where, "consent"),
        instructions=_nonblank(values["instructions"], where, "instructions"),
        practice=_catch_items(values["practice"], where, "practice", kind, need_answer=False),
        attention_checks=_catch_items(checks.get("items", []), where, "attention_checks.items", kind, need_answer=True),
        attention_every=_opt(checks, "every", positive_int, where, "attention_checks") or 0,
        attention_max_failures=_opt(checks, "max_failures", non_negative_int, where, "attention_checks") or 0,
        response_seconds=_opt(limits, "response_seconds", positive_int, where, "time_limits"),
        session_minutes=_opt(limits, "session_minutes", positive_int, where, "time_limits") or 120,
        completion_code=_opt(completion, "code", text, where, "completion"),
        completion_url=url,
        excluded_code=_opt(completion, "excluded_code", text, where, "completion"),
        excluded_url=excluded_url,
        title=_nonblank(values["title"], where, "title"),
        id_params=_id_params(values["participant_id_params"], where),
        allow_skip=values["allow_skip"],
        first_word=values["first_word"],
        model=model,
        position_start=_opt(positions, "start", non_negative_int, where, "positions") or 0,
        position_every=_opt(positions, "every", positive_int, where, "positions") or 1,
        positions_per_text=_opt(positions, "per_text", positive_int, where, "positions"),
        samples_per_position=values["samples_per_position"],
        seed=values["seed"],
    )
    if study.attention_checks and not study.attention_every:
        raise HarnessError(f"{where}: field 'attention_checks.every': missing (show one check after every N items)")
    canonical = json.dumps(raw, sort_keys=True, ensure_ascii=False, default=str)
    if stored is not None:
        return replace(study, digest=stored[0], source=json.loads(canonical), texts_sha256=stored[1])
    return _with_digest(study, canonical)


def _with_digest(study: Study, canonical: str) -> Study:
    """The digest covers the study's text (as parsed, so comments and layout do not count: ``canonical``, its
    sorted JSON) and the texts file."""
    hasher = hashlib.sha256(canonical.encode("utf-8"))
    texts_sha256 = ""
    if study.texts.file is not None:
        content = read_bytes(study.texts.file, "texts file")
        hasher.update(content)
        texts_sha256 = hashlib.sha256(content).hexdigest()
    return replace(study, digest=hasher.hexdigest()[:16], source=json.loads(canonical), texts_sha256=texts_sha256)


def _texts(value: Any, path: Path, check_file: bool = True) -> TextSource:
    where = f"{path}: field 'texts'"
    if not isinstance(value, Mapping):
        raise HarnessError(f"{where}: expected {{file, id, text}} or {{task}}, got {shorten_repr(value)}")
    known = {"file", "id", "text", "participants", "task", "limit"}
    unknown = sorted(str(k) for k in value if k not in known)
    if unknown:
        raise HarnessError(f"{where}: unknown key '{unknown[0]}' (accepted: {', '.join(sorted(known))})")
    limit = _opt(value, "limit", positive_int, str(path), "texts")
    if ("file" in value) == ("task" in value):
        raise HarnessError(f"{where}: give exactly one of 'file' (a CSV, TSV, JSONL or TXT file) and 'task'")
    if "task" in value:
        return TextSource(task=_opt(value, "task", text, str(path), "texts"), limit=limit)
    file = path.parent / str(value["file"])
    if check_file and not file.is_file():
        raise HarnessError(f"{where}.file: no such file {file}")
    return TextSource(
        file=file,
        id_field=_opt(value, "id", text, str(path), "texts") or "id",
        text_field=_opt(value, "text", text, str(path), "texts") or "text",
        participants_field=_opt(value, "participants", text, str(path), "texts"),
        limit=limit,
    )


def _mapping(value: Any, where: str, name: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise HarnessError(
            f"{where}: field '{name}': expected a mapping with {', '.join(keys)}, got {shorten_repr(value)}"
        )
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        raise HarnessError(f"{where}: field '{name}': unknown key '{unknown[0]}' (accepted: {', '.join(keys)})")
    return value


def _opt(values: Mapping[str, Any], key: str, convert: Any, where: str, parent: str) -> Any:
    if key not in values or values[key] is None:
        return None
    try:
        return convert(values[key])
    except (ValueError, TypeError) as exc:
        raise HarnessError(f"{where}: field '{parent}.{key}': {exc}") from None


def _url(completion: Mapping[str, Any], key: str, where: str) -> str | None:
    url = _opt(completion, key, text, where, "completion")
    if url is not None and not url.startswith(("https://", "http://")):
        raise HarnessError(f"{where}: field 'completion.{key}': expected an http(s) URL, got {shorten_repr(url)}")
    return url


def _nonblank(value: str, where: str, name: str) -> str:
    if not value.strip():
        raise HarnessError(f"{where}: field '{name}': expected a text, got an empty one")
    return value.strip()


def _id_params(value: Any, where: str) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and _PARAM.match(n) for n in names):
        raise HarnessError(
            f"{where}: field 'participant_id_params': expected URL parameter names such as PROLIFIC_PID, "
            f"got {shorten_repr(value)}"
        )
    return tuple(names)


def _catch_items(value: Any, where: str, name: str, kind: str, *, need_answer: bool) -> tuple[CatchItem, ...]:
    """Practice items and attention checks: plain texts, or mappings (``text`` and ``answer``; the which-one game:
    ``context``, ``true_token``, ``sampled_token``)."""
    if not isinstance(value, list):
        raise HarnessError(f"{where}: field '{name}': expected a list, got {shorten_repr(value)}")
    items = []
    for i, entry in enumerate(value):
        here = f"{where}: field '{name}[{i}]'"
        if kind == "which_one_game":
            keys = ("context", "true_token", "sampled_token")
            if not isinstance(entry, Mapping) or any(not isinstance(entry.get(k), str) for k in keys):
                raise HarnessError(f"{here}: expected {{context, true_token, sampled_token}} (strings)")
            if entry["true_token"] == entry["sampled_token"]:
                raise HarnessError(f"{here}: true_token and sampled_token must differ")
            items.append(CatchItem(entry["context"], (), entry["true_token"], entry["sampled_token"]))
            continue
        if isinstance(entry, str):
            entry = {"text": entry}
        if not isinstance(entry, Mapping) or not isinstance(entry.get("text"), str) or not entry["text"].strip():
            raise HarnessError(f"{here}: expected a text or {{text, answer}}, got {shorten_repr(entry)}")
        unknown = sorted(str(k) for k in entry if k not in ("text", "answer"))
        if unknown:
            raise HarnessError(f"{here}: unknown key '{unknown[0]}' (accepted: answer, text)")
        answer = entry.get("answer", [])
        if isinstance(answer, (bool, int, float)):
            raise HarnessError(
                f"{here}: field 'answer': YAML read {answer!r}, not a word (YAML reads yes, no, on, off, true, "
                'false and numbers as values): quote the word, e.g. answer: "yes"'
            )
        answers = [answer] if isinstance(answer, str) else answer
        if not isinstance(answers, list) or not all(isinstance(a, str) and a.strip() for a in answers):
            raise HarnessError(f"{here}: field 'answer': expected a word or a list of words")
        if need_answer and not answers:
            raise HarnessError(f"{here}: field 'answer': missing (an attention check needs its known answer)")
        items.append(CatchItem(entry["text"].strip(), tuple(a.strip() for a in answers)))
    return tuple(items)

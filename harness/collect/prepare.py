"""Opening a study: check the study file, make its items the first time (the games load their model for it), and
keep them in the database, so the server, ``status`` and ``export`` all see the same items."""

from __future__ import annotations

from pathlib import Path

from harness.collect.edits import changed_fields, check_edit
from harness.collect.flow import StudyFlow
from harness.collect.items import GamePreparer, Item, Text, build_items, read_texts
from harness.collect.store import StudyStore
from harness.collect.study import Study, load_study
from harness.errors import HarnessError


def default_db(study_path: Path) -> Path:
    """``STUDY.yaml`` keeps its responses beside it in ``STUDY.sqlite`` unless ``--db`` says otherwise."""
    return study_path.with_suffix(".sqlite")


def open_study(study_path: Path, db_path: Path | None = None, data_dir: str | None = None) -> StudyFlow:
    """The study's flow over its database, installing the items on first use. A later start continues the
    database under the study file when it is the study that was served or a safe edit of it (consent, instructions,
    completion, more participants per item, a longer hold: ``harness.collect.edits``), and refuses any other change
    in one line naming the field."""
    study = load_study(study_path)
    store = StudyStore(db_path or default_db(study_path))
    if not store.is_installed():
        store.install(study, make_items(study, data_dir)[1])
        return StudyFlow(study, store)
    served = store.served_study(study_path)
    if served is None or served.digest == study.digest:
        if served is None and store.meta("digest") != study.digest:
            raise HarnessError(
                f"{store.path}: this database holds study '{store.meta('study')}' version {store.meta('digest')}, "
                f"not '{study.name}' version {study.digest}, and keeps no copy of the study to compare the change "
                "with (made by an older harness): give a new --db, or undo the change"
            )
        if served is None:
            store.record_edit(study, [])
        return StudyFlow(study, store)
    fields = check_edit(served, study, str(study_path))
    store.record_edit(study, fields)
    return StudyFlow(study, store)


def make_items(study: Study, data_dir: str | None) -> tuple[list[Text], list[Item]]:
    """The study's texts and every item made from them (a game loads its model for them): what ``open_study``
    installs and ``harness collect check`` counts."""
    texts = read_texts(study, data_dir)
    return texts, build_items(study, texts, _game_preparer(study))


def open_existing(study_path: Path, db_path: Path | None = None) -> tuple[StudyFlow, str | None]:
    """The study's flow for reading (``status``, ``export``, ``exclude``, ``release``), and a warning when the study
    file changed since the server last started on the database. The database must exist and hold this study (by
    name); a changed file does not lock the organiser out: the study is read as it was served, from the copy kept
    in the database, and its items are always the stored ones."""
    study = load_study(study_path)
    path = db_path or default_db(study_path)
    if not path.is_file():
        raise HarnessError(f"{path}: no study database (run 'harness collect serve {study_path}' first, or give --db)")
    store = StudyStore(path)
    if not store.is_installed():
        raise HarnessError(f"{path}: the study database has no items yet (the server never started on it)")
    if store.meta("study") != study.name:
        raise HarnessError(
            f"{path}: this database holds study '{store.meta('study')}', not '{study.name}' (give its own --db)"
        )
    if store.meta("digest") == study.digest:
        return StudyFlow(study, store), None
    served = store.served_study(study_path)
    if served is None:
        return StudyFlow(study, store), (
            f"{study_path} changed since the server last started on {path} (version {store.meta('digest')}, now "
            f"{study.digest}), and this database keeps no copy of the study: read with the file's settings"
        )
    fields = ", ".join(changed_fields(served.source, study.source)) or "the texts file's content"
    return StudyFlow(served, store), (
        f"{study_path} changed since the server last started on {path} ({fields}): read as the study was served "
        f"(version {served.digest}); 'harness collect serve' applies the change if it is safe"
    )


def _game_preparer(study: Study) -> GamePreparer | None:
    if not study.is_game:
        return None
    from harness.collect.games import prepare_game_items

    return prepare_game_items

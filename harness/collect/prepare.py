"""Opening a study: check the study file, make its items the first time (the games load their model for it), and
keep them in the database, so the server, ``status`` and ``export`` all see the same items."""

from __future__ import annotations

from pathlib import Path

from harness.collect.flow import StudyFlow
from harness.collect.items import GamePreparer, Item, Text, build_items, read_texts
from harness.collect.store import StudyStore
from harness.collect.study import Study, load_study


def default_db(study_path: Path) -> Path:
    """``STUDY.yaml`` keeps its responses beside it in ``STUDY.sqlite`` unless ``--db`` says otherwise."""
    return study_path.with_suffix(".sqlite")


def open_study(study_path: Path, db_path: Path | None = None, data_dir: str | None = None) -> StudyFlow:
    """The study's flow over its database, installing the items on first use (a later run checks the study's
    digest against the stored one and refuses a changed study)."""
    study = load_study(study_path)
    store = StudyStore(db_path or default_db(study_path))
    if store.is_installed():
        store.install(study.name, study.digest, [])  # only checks the digest
    else:
        store.install(study.name, study.digest, make_items(study, data_dir)[1])
    return StudyFlow(study, store)


def make_items(study: Study, data_dir: str | None) -> tuple[list[Text], list[Item]]:
    """The study's texts and every item made from them (a game loads its model for them): what ``open_study``
    installs and ``harness collect check`` counts."""
    texts = read_texts(study, data_dir)
    return texts, build_items(study, texts, _game_preparer(study))


def open_existing(study_path: Path, db_path: Path | None = None) -> StudyFlow:
    """The study's flow for reading (``status``, ``export``): the database must exist and match the study."""
    from harness.errors import HarnessError

    study = load_study(study_path)
    path = db_path or default_db(study_path)
    if not path.is_file():
        raise HarnessError(f"{path}: no study database (run 'harness collect serve {study_path}' first, or give --db)")
    store = StudyStore(path)
    if not store.is_installed():
        raise HarnessError(f"{path}: the study database has no items yet (the server never started on it)")
    store.install(study.name, study.digest, [])
    return StudyFlow(study, store)


def _game_preparer(study: Study) -> GamePreparer | None:
    if not study.is_game:
        return None
    from harness.collect.games import prepare_game_items

    return prepare_game_items

"""Reading Tsvilodub et al.'s forced-choice task descriptions (``descriptions: tsvilodub``), one per phenomenon."""

from __future__ import annotations

from pathlib import Path

from harness.api import DataNotFoundError
from harness.plugins.loaders.pragmatics_release import TSVILODUB_NAMES, TSVILODUB_PROMPTS, TSVILODUB_REPO_URL
from harness.plugins.loaders.text_files import read_utf8


def tsvilodub_path(root: Path, phenomenon: str) -> Path:
    """One place for the name, since both the reader and the download need it."""
    return root / TSVILODUB_PROMPTS / f"{TSVILODUB_NAMES[phenomenon]}_instructions_FC.txt"


def read_tsvilodub(root: Path, phenomena: tuple[str, ...], files: list[Path], note: str = "") -> dict[str, str]:
    """Each phenomenon's forced-choice instruction from Tsvilodub et al.'s prompt folder."""
    texts: dict[str, str] = {}
    for phenomenon in phenomena:
        path = tsvilodub_path(root, phenomenon)
        if not path.is_file():
            raise DataNotFoundError(
                f"pragmatics-mcq task description not found: looked for {path} (prompt/prompts/ in "
                f"{TSVILODUB_REPO_URL}); put it there, or set the data option 'descriptions: hu' to open prompts "
                "with the instructions shown to participants instead; 'harness data fetch pragmatics-mcq' "
                "downloads it." + note
            )
        texts[phenomenon] = read_utf8(path, "data file").strip()
        files.append(path)
    return texts

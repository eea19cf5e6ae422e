"""Which reader reads an outputs file: named with ``format=``, or recognised from the file (``auto``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from harness.api import HarnessError
from harness.plugins.replay.generic import read_generic
from harness.plugins.replay.hu2023 import is_hu2023, read_hu2023
from harness.plugins.replay.outputs import RecordedOutputs
from harness.plugins.replay.provo_released import CHATGPT_SETTINGS, read_bloom, read_chatgpt, read_gpt2

Reader = Callable[[Path, str | None], RecordedOutputs]


def _no_setting(read: Callable[[Path], RecordedOutputs], name: str) -> Reader:
    def reader(path: Path, setting: str | None) -> RecordedOutputs:
        if setting is not None:
            raise HarnessError(f"--model-args setting: format '{name}' takes no setting (got {setting!r})")
        return read(path)

    return reader


def _chatgpt(path: Path, setting: str | None) -> RecordedOutputs:
    if setting is None:
        raise HarnessError(f"--model-args setting: format 'provo-chatgpt' needs one of {', '.join(CHATGPT_SETTINGS)}")
    return read_chatgpt(path, setting)


#: Format name -> reader(path, setting). ``jsonl`` is the harness's own format (``harness.plugins.replay.generic``).
READERS: dict[str, Reader] = {
    "jsonl": _no_setting(read_generic, "jsonl"),
    "provo-gpt2": _no_setting(read_gpt2, "provo-gpt2"),
    "provo-bloom": _no_setting(read_bloom, "provo-bloom"),
    "provo-chatgpt": _chatgpt,
    "hu2023": read_hu2023,
}
FORMATS: tuple[str, ...] = ("auto", *READERS)


def detect(path: Path) -> str:
    """The format of ``path`` from its name: a released file keeps the name its study gave it."""
    name = path.name
    if path.is_dir():
        names = {p.name for p in path.iterdir()}
        if any(n.startswith("Paragraphs") and n.endswith(".json") for n in names):
            return "provo-gpt2"
        if "bloom_generations.json" in names:
            return "provo-bloom"
        if "processed_chatgpt.json" in names:
            return "provo-chatgpt"
        if is_hu2023(path):
            return "hu2023"
    elif name.endswith(".jsonl"):
        return "jsonl"
    elif name.startswith("Paragraphs") and name.endswith(".json"):
        return "provo-gpt2"
    elif name == "bloom_generations.json":
        return "provo-bloom"
    elif name == "processed_chatgpt.json":
        return "provo-chatgpt"
    elif is_hu2023(path):
        return "hu2023"
    raise HarnessError(f"{path}: cannot tell the outputs format from the name; give format= ({', '.join(READERS)})")


@lru_cache(maxsize=8)
def read_outputs(path: Path, fmt: str, setting: str | None) -> RecordedOutputs:
    """The recorded outputs of ``path`` (read once per process: the runner asks before and while answering)."""
    if not path.exists():
        raise HarnessError(f"--model-args path: {path} does not exist")
    name = detect(path) if fmt == "auto" else fmt
    return READERS[name](path, setting)

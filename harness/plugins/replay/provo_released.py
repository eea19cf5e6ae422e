"""Readers for the Provo generations released with Ilia & Aziz (2024), ``evgeniael/predict_next_word``.

The files (``provo/reference_outputs/TVD/`` in the data folder; see its ``SOURCE.md``):

* ``GPT2/Generations/Paragraphs-*.json`` (1,000 unbiased samples per position, passages 1-4 and 45-55) and
  ``GPT2_Temp/Generations/Paragraphs_temp-*.json`` (40 samples per position, all passages):
  ``{text_id: {word_num: {"context": {"text"}, "ancestral_samples": [{"pred", "count"}], ...}}}``. Only the words
  the study cut from each 5-token continuation were released, not the continuations, so these are replayed as
  words (``provo-gpt2``); the study's failure marker ``Failed to generate word`` is kept as written, so the word
  rule decides what it is (``harness.words.replies.recorded_word``).
* ``BLOOM/Generations/bloom_generations.json``: ``{"0": {"context", "original_positioning": {text_id, word_num},
  "original_generations": [40 raw continuations]}}`` for 670 positions (``provo-bloom``). The continuations were
  cut off after a token budget, so they did not end where the model stopped.
* ``ChatGPT/Generations/processed_chatgpt.json``: ``[[context, {text_id, word_num}, {"unbiased_temp_1": [40
  replies], "unbiased_temp_2": [40 replies], "diverse": "1. later\\n2. ago ..."}, {processed words}], ...]`` for
  501 positions (``provo-chatgpt``, ``setting`` picks one of the three). The raw replies are read from the third
  element (``chatgpt_generations.json`` holds the same raw texts for two of the three settings only); a reply
  ended where the model stopped. ``diverse`` is one reply listing 40 guesses.

Instance ids are the ``provo`` loader's ``<text_id>-<word_num>``. The BLOOM and ChatGPT files were drawn with
repeats: 670 records hold 657 positions, 501 hold 488. A position is scored once, from its first record (the study
averaged over records, so a repeated position counted twice); the repeats are listed in the results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.api import HarnessError, read_json, shorten_repr
from harness.plugins.replay.outputs import RecordedEntry, RecordedOutputs

CHATGPT_SETTINGS = ("unbiased_temp_1", "unbiased_temp_2", "diverse")


def _position_id(positioning: Any, where: str) -> str:
    if not isinstance(positioning, dict) or "text_id" not in positioning or "word_num" not in positioning:
        raise HarnessError(f"{where}: expected a position {{text_id, word_num}}, got {shorten_repr(positioning)}")
    return f"{int(positioning['text_id'])}-{int(positioning['word_num'])}"


def _json_files(path: Path, pattern: str) -> list[Path]:
    if path.is_dir():
        files = sorted(path.glob(pattern))
        if not files:
            raise HarnessError(f"{path}: no {pattern} files in this folder")
        return files
    return [path]


def read_gpt2(path: Path) -> RecordedOutputs:
    """A ``Paragraphs*.json`` file, or a folder of them (read in name order)."""
    files = _json_files(path, "Paragraphs*.json")
    outputs = RecordedOutputs("provo-gpt2", files, meta={"samples": "ancestral_samples"})
    for file in files:
        data = read_json(file)
        if not isinstance(data, dict):
            raise HarnessError(f"{file}: expected an object of text_id -> word_num -> position")
        for text_id, positions in data.items():
            if not isinstance(positions, dict):
                raise HarnessError(f"{file}: text {text_id}: expected an object of word_num -> position")
            for word_num, position in positions.items():
                where = f"{file}: text {text_id} word {word_num}"
                samples = position.get("ancestral_samples") if isinstance(position, dict) else None
                if not isinstance(samples, list) or not samples:
                    raise HarnessError(f"{where}: no 'ancestral_samples' list")
                words: dict[str, int] = {}
                for sample in samples:
                    if not isinstance(sample, dict) or not isinstance(sample.get("pred"), str):
                        raise HarnessError(f"{where}: a sample without a 'pred' string: {shorten_repr(sample)}")
                    count = sample.get("count")
                    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                        raise HarnessError(f"{where}: sample {sample['pred']!r}: 'count' is not a positive integer")
                    words[sample["pred"]] = words.get(sample["pred"], 0) + count
                context = position.get("context", {}).get("text") if isinstance(position.get("context"), dict) else None
                key = f"{int(text_id)}-{int(word_num)}"
                if key in outputs.entries:
                    raise HarnessError(f"{where}: position {key} appears twice")
                outputs.entries[key] = RecordedEntry(words=words, context=context)
    return outputs


def read_bloom(path: Path) -> RecordedOutputs:
    """``bloom_generations.json`` (or the folder holding it)."""
    file = path / "bloom_generations.json" if path.is_dir() else path
    data = read_json(file)
    if not isinstance(data, dict):
        raise HarnessError(f"{file}: expected an object of index -> generation record")
    outputs = RecordedOutputs("provo-bloom", [file])
    for index, record in data.items():
        where = f"{file}: record {index}"
        if not isinstance(record, dict):
            raise HarnessError(f"{where}: expected an object")
        key = _position_id(record.get("original_positioning"), where)
        texts = record.get("original_generations")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise HarnessError(f"{where}: 'original_generations' is not a list of strings")
        context = record.get("context") if isinstance(record.get("context"), str) else None
        outputs.add(key, RecordedEntry(texts=tuple(texts), ended=False, context=context))
    return outputs


def read_chatgpt(path: Path, setting: str) -> RecordedOutputs:
    """``processed_chatgpt.json`` (or the folder holding it), one of ``CHATGPT_SETTINGS``."""
    if setting not in CHATGPT_SETTINGS:
        raise HarnessError(f"--model-args setting: expected one of {', '.join(CHATGPT_SETTINGS)}, got {setting!r}")
    file = path / "processed_chatgpt.json" if path.is_dir() else path
    data = read_json(file)
    if not isinstance(data, list):
        raise HarnessError(f"{file}: expected a list of [context, position, replies, processed] records")
    outputs = RecordedOutputs("provo-chatgpt", [file], meta={"setting": setting})
    for index, record in enumerate(data):
        where = f"{file}: record {index}"
        if not isinstance(record, list) or len(record) < 3 or not isinstance(record[2], dict):
            raise HarnessError(f"{where}: expected [context, position, replies, ...]")
        key = _position_id(record[1], where)
        replies = record[2].get(setting)
        if setting == "diverse":
            if not isinstance(replies, str):
                raise HarnessError(f"{where}: '{setting}' is not one reply string")
            texts: tuple[str, ...] = (replies,)
        elif isinstance(replies, list) and replies and all(isinstance(t, str) for t in replies):
            texts = tuple(replies)
        else:
            raise HarnessError(f"{where}: '{setting}' is not a list of replies")
        context = record[0] if isinstance(record[0], str) else None
        outputs.add(key, RecordedEntry(texts=texts, ended=True, listed=setting == "diverse", context=context))
    return outputs

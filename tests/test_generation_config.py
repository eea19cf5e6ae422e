"""Generation task configuration: decoding sweeps, prompt templates, rendering for causal, chat and seq2seq models."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.decoding import decoding_labels
from harness.errors import TaskConfigError
from harness.instances import GenerationInstance
from harness.prompts.generation import render_input
from harness.registry.manager import get_registry
from harness.registry.task_loading import resolve_tasks
from harness.registry.task_validation import load_task_file
from harness.requests import DecodingConfig, GenerateRequest, GenerateResponse
from tests.helpers import REPO


def _task(tmp_path: Path, **params: object) -> Path:
    raw = {
        "task": "gen",
        "version": 1,
        "loader": "asset",
        "data": {"split": "test"},
        "request": "generate",
        "params": params,
        "scorers": ["lexical"],
    }
    path = tmp_path / "gen.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_decoding_labels_are_canonical() -> None:
    assert DecodingConfig().label == "ancestral"
    assert DecodingConfig.parse("top_p=0.90").label == "top_p=0.9"
    assert DecodingConfig.parse("top_k=50+temperature=0.7").label == "temperature=0.7+top_k=50"
    assert DecodingConfig.parse("typical_p=0.2") == DecodingConfig(typical_p=0.2)
    assert decoding_labels("ancestral; top_p=0.9 ;typical_p=0.95") == ["ancestral", "top_p=0.9", "typical_p=0.95"]
    assert decoding_labels(["temperature=1"]) == ["ancestral"]
    for bad, message in [
        ("top_p=1.5", "top_p must be in"),
        ("beam=4", "expected one of temperature"),
        ("top_k=x", "not a number"),
        ("ancestral;temperature=1.0", "given twice"),
    ]:
        with pytest.raises(ValueError, match=message):
            decoding_labels(bad)


def test_generate_params_defaults_and_errors(tmp_path: Path) -> None:
    config = load_task_file(_task(tmp_path))
    assert config.params["n_samples"] == 10
    assert config.params["max_new_tokens"] == 100
    assert config.params["decoding"] == ["ancestral"]
    assert config.params["stop"] == []
    with pytest.raises(TaskConfigError, match=r"params.decoding.*top_p must be in \(0, 1\]"):
        load_task_file(_task(tmp_path, decoding="top_p=2"))
    with pytest.raises(TaskConfigError, match=r"params.prompt_template.*placeholders"):
        load_task_file(_task(tmp_path, prompt_template="Translate {sentence}"))
    with pytest.raises(TaskConfigError, match=r"params.stop"):
        load_task_file(_task(tmp_path, stop="\n"))
    overridden = load_task_file(_task(tmp_path), {"decoding": "ancestral;top_k=30", "n_samples": 4})
    assert overridden.params["decoding"] == ["ancestral", "top_k=30"]
    assert overridden.params["n_samples"] == 4


def test_a_decoding_sweep_is_one_task_per_setting(tmp_path: Path) -> None:
    path = _task(tmp_path, decoding=["ancestral", "top_p=0.9"])
    registry = get_registry()
    tasks = resolve_tasks([str(path)], {}, registry)
    assert [t.name for t in tasks] == ["gen@ancestral", "gen@top_p=0.9"]
    assert [t.config.params["decoding"] for t in tasks] == [["ancestral"], ["top_p=0.9"]]
    assert tasks[0].scorers[0] is not tasks[1].scorers[0]
    human = resolve_tasks([str(path)], {}, registry, expand_decoding=False)
    assert [t.name for t in human] == ["gen"]


def test_rendering_for_causal_chat_and_seq2seq_models() -> None:
    params = {
        "prompt_template": "Simplify.\nSentence: {source}\nSimplified:",
        "seq2seq_prefix": "Simplify: ",
        "system_prompt": "Be brief.",
        "turn_separator": "\n",
    }
    inst = GenerationInstance(id="1", source="A long sentence.", references=("Short.",))
    rendered = render_input(inst, params)
    assert rendered.prompt == "Simplify.\nSentence: A long sentence.\nSimplified:"
    assert rendered.messages == (("system", "Be brief."), ("user", rendered.prompt))
    assert rendered.source == "Simplify: A long sentence."

    dialogue = GenerationInstance(id="2", turns=("Hi!", "Hello, how are you?", "Fine. And you?"), references=("Ok",))
    rendered = render_input(dialogue, {"prompt_template": "{context}\n", "turn_separator": " | "})
    assert rendered.prompt == "Hi! | Hello, how are you? | Fine. And you?\n"
    # The last turn is the user's; roles alternate backwards from it.
    assert rendered.messages == (("user", "Hi!"), ("assistant", "Hello, how are you?"), ("user", "Fine. And you?"))
    two_turns = GenerationInstance(id="3", turns=("Hi!", "Hello."), references=("Ok",))
    assert render_input(two_turns, {}).messages == (("assistant", "Hi!"), ("user", "Hello."))


def test_build_request_from_a_shipped_task() -> None:
    config = load_task_file(REPO / "harness" / "tasks" / "asset-test.yaml", {"decoding": "top_p=0.9", "n_samples": 3})
    inst = GenerationInstance(id="7", source="The cat sat.", references=("A cat sat.",))
    request = get_registry().kind(config.request).build(config, inst, 11, [])
    assert isinstance(request, GenerateRequest)
    assert request.prompt == "Simplify the following sentence.\nSentence: The cat sat.\nSimplified sentence:"
    assert request.source == "Simplify: The cat sat."
    assert request.decoding == DecodingConfig(top_p=0.9)
    assert (request.n, request.seed, request.stop, request.max_new_tokens) == (3, 11, ("\n",), 100)


def test_generate_response_round_trips() -> None:
    response = GenerateResponse(texts=[" a", "b "], finish_reasons=["eos", "stop"], n_tokens=[2, 3], tokens_evaluated=9)
    assert GenerateResponse.from_record(response.to_record()) == response


@pytest.mark.parametrize("name", ["wmt14-en-de", "wmt14-en-fr", "asset-valid", "asset-test", "dailydialog-pp"])
def test_shipped_generation_tasks_validate(name: str) -> None:
    config = load_task_file(REPO / "harness" / "tasks" / f"{name}.yaml")
    assert config.request == "generate"
    assert [s.name for s in config.scorers] == ["lexical", "syntactic", "semantic"]

"""Shared test helpers: where the real data lives, and how to run the CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The real data sets: ``HARNESS_DATA_DIR`` if set, else ``../shared/data`` beside the repository."""
    env = os.environ.get("HARNESS_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


def require_provo() -> Path:
    data = shared_data_dir()
    if not (data / "provo" / "provo_positions.jsonl").is_file():
        pytest.skip(f"Provo data not found under {data}")
    return data


def run_cli(
    *args: str, env: dict[str, str] | None = None, check: bool = True, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HARNESS_NO_PROGRESS": "1", **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=REPO,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"harness {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def tiny_gpt2(tokenizer: Any, **config: Any) -> Any:
    """A tiny random GPT-2 on ``tokenizer``'s vocabulary (seed 0); ``config`` overrides, e.g. ``initializer_range``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    settings = {"n_layer": 2, "n_embd": 64, "n_head": 2, "n_positions": 128, "bos_token_id": 1, "eos_token_id": 2}
    return GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), **{**settings, **config})).eval()


def tiny_llama(vocab_size: int, **config: Any) -> Any:
    """A tiny random Llama (seed 0) over ``vocab_size`` tokens: the family the shared-prefix paths serve; ``config``
    overrides, e.g. ``hidden_size`` or ``initializer_range``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    settings = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 256,
    }
    return LlamaForCausalLM(LlamaConfig(vocab_size=vocab_size, **{**settings, **config})).eval()


def tiny_t5(tokenizer: Any, **config: Any) -> Any:
    """A tiny random T5 on ``tokenizer``'s vocabulary (seed 0, decoder start 0); ``config`` overrides."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    settings = {
        "d_model": 32,
        "d_kv": 8,
        "d_ff": 64,
        "num_layers": 2,
        "num_heads": 2,
        "pad_token_id": 0,
        "eos_token_id": 2,
    }
    model_config = T5Config(vocab_size=len(tokenizer), **{**settings, **config})
    model_config.decoder_start_token_id = 0
    return T5ForConditionalGeneration(model_config).eval()


def source_of(run_dir: Path, task: str) -> Path:
    """The timestamped results file that holds ``task``'s latest result in a run folder."""
    from harness.outputs.run_dir import task_sources

    return next(s.results_path for s in task_sources(run_dir) if s.task == task)


def samples_of(run_dir: Path, task: str) -> Path:
    """The samples file of ``task``'s latest result in a run folder."""
    from harness.outputs.run_dir import task_sources

    return next(s.samples_path for s in task_sources(run_dir) if s.task == task)


def rescored_mock_provo(
    cli: Callable[..., Any], folder: Path, limit: int, n_samples: int, scorers: str, task_args: str | None = None
) -> tuple[dict[str, Any], Path]:
    """A mock Provo run scored again with ``--scorers scorers``: the new results and the folder they are in (the
    way the further analyses are added to a finished run)."""
    require_provo()
    cli("run", "--tasks", "provo", "--model", "mock:a", "--limit", str(limit), "--task-args", f"n_samples={n_samples}",
        "--output-dir", str(folder))  # fmt: skip
    cli("score", str(folder / "mock__a"), "--scorers", scorers, *(["--task-args", task_args] if task_args else []))
    scored = folder / "mock__a" / "rescored"
    return json.loads((scored / "results.json").read_text()), scored


def write(root: Path, name: str, text: str | bytes) -> Path:
    """A data file under ``root`` (folders made), its text written as UTF-8 bytes exactly (no newline translation)."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def jsonl(root: Path, name: str, records: list[dict[str, Any]]) -> Path:
    """A JSON Lines file of ``records`` under ``root``."""
    return write(root, name, "".join(json.dumps(r) + "\n" for r in records))


def load(loader: str, options: dict[str, Any], root: Path) -> Any:
    """The registered loader ``loader`` called on ``options`` with ``root`` as the data root."""
    from harness.registry.manager import get_registry

    return get_registry().loader(loader)(options, root)


#: A Mechanical Turk batch results file: two HITs of two sentences each; W3's assignment was rejected, W4 left the
#: second sentence empty.
MTURK = """\
HITId,WorkerId,AssignmentStatus,Input.sentence01,Input.sentence02,Answer.sentence01,Answer.sentence02
H1,W1,Approved,The cat sat on the,She drank a cup of,mat,tea
H1,W2,Approved,The cat sat on the,She drank a cup of,Mat.,coffee
H1,W3,Rejected,The cat sat on the,She drank a cup of,asdf,asdf
H2,W1,Approved,I went to the,He opened the,store,door
H2,W4,Approved,I went to the,He opened the,park,
"""

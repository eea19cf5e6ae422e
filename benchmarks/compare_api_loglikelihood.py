"""How closely an OpenAI-compatible server's prompt log-probabilities, as the ``openai`` adapter reads them, match
the ``hf`` adapter on the same weights.

Meant for llama-cpp-python's server with the packaged SmolLM2 GGUF (``docs/api-models.md`` says how to start it):
its echo is read with the shift the adapter measures on load, so this shows the correction at work. llama.cpp
computes with the 4-bit weights, ``hf`` with them dequantised to float32, so small differences are expected; the
tests allow 0.15 nats per token (``tests/test_openai_server.py``). Prints every token's two values and the largest
difference.

    .venv/bin/python benchmarks/compare_api_loglikelihood.py --base-url http://127.0.0.1:8765/v1
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from harness.models import ModelSpec
from harness.plugins.hf.loading.model import load_hf_model
from harness.plugins.hf.queries.scoring import QueryScorer
from harness.plugins.openai_api.adapter import OpenAIAdapter
from harness.requests import LoglikelihoodRequest

#: The queries behind the documented agreement; tests/test_openai_server.py checks the same ones.
QUERIES = [
    LoglikelihoodRequest("The capital of France is", " Paris"),
    LoglikelihoodRequest("One, two, three,", " four, five"),
    LoglikelihoodRequest("She opened the door and", " walked into the room."),
    LoglikelihoodRequest("The cat sat on the", " mat"),
    # " 4" is " " then "4"; " " shares its text with other tokens in the server's alternatives (a collision).
    LoglikelihoodRequest("Question: What is 2+2?\nAnswer:", " 4"),
    LoglikelihoodRequest("Question: What is 2+2?\nAnswer: ", "4"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="server URL up to /v1")
    parser.add_argument("--model", default="smollm2", help="the model name the server serves (default smollm2)")
    parser.add_argument("--hf-model", default="smollm2-135m", help="the same weights for the hf adapter")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        spec = ModelSpec("openai", args.model, {"base_url": args.base_url, "chat": "false"}, cache_dir=Path(cache))
        api = OpenAIAdapter(spec)
        print(f"server {api.server}, echo alignment {api.info()['echo_alignment']}")
        api_answers = api.loglikelihood_many(QUERIES)
    loaded = load_hf_model(args.hf_model, device="cpu", dtype="float32")
    hf_answers = QueryScorer(loaded.model, loaded.tokenizer, device=loaded.device, batch_size=8).loglikelihood_many(
        QUERIES
    )
    largest = 0.0
    for query, a, h in zip(QUERIES, api_answers, hf_answers, strict=True):
        print(f"{query.context!r} + {query.continuation!r}")
        for token, x, y in zip(a.tokens, a.token_logprobs, h.token_logprobs, strict=True):
            largest = max(largest, abs(x - y))
            print(f"  {token!r:>12}  api {x:8.3f}  hf {y:8.3f}  diff {x - y:+.3f}")
    print(f"largest difference per token: {largest:.3f} nats")


if __name__ == "__main__":
    main()

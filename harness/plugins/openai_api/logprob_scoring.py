"""``loglikelihood`` and ``next_token`` over an OpenAI-compatible API, from log-probabilities the server returns.

On ``/completions`` (``chat=false``) both are read from the prompt's echoed log-probabilities: one request with
``echo`` per context and continuation, read with the alignment the server was measured to use on load
(``harness.plugins.openai_api.echo``); a ``next_token`` label is scored over all its tokens, as ``hf`` does. On
``/chat/completions`` only ``next_token`` is answered, from the ``top_logprobs`` of the reply's first token, where a
label must be one of the listed alternatives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness.api import (
    HarnessError,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
    add_usage,
)
from harness.plugins.openai_api.echo import (
    PROBE_ALTERNATIVES,
    PROBE_TEXT,
    SAFE_ALTERNATIVES,
    EchoLogprobs,
    continuation_logprobs,
    detect_shift,
    fill_collided,
)
from harness.plugins.openai_api.endpoint import REFUSALS, EndpointSetup, usage_of
from harness.plugins.openai_api.transport import ApiCall

#: One continuation read from an echo: its token log-probabilities (``None``: not trusted, read again), its token
#: strings, and the usage of the requests it took.
_Reading = tuple[list[float | None], list[str], dict[str, int]]


class LogprobScorer:
    """Answers ``loglikelihood`` and ``next_token`` requests through ``setup``'s endpoint. On ``/completions`` it
    measures the echo alignment when built (one probe request, stored like every other)."""

    def __init__(self, setup: EndpointSetup) -> None:
        self.setup = setup
        #: Alignment of echoed prompt log-probabilities (``harness.plugins.openai_api.echo``), measured once on load.
        self.echo_shift: int | None = None
        self.echo_problem: str | None = None
        #: Share of the probe's positions each shift explains (``echo.detect_shift``), reported by ``alignment``.
        self.echo_shares: dict[int, float] = {}
        if setup.endpoint == "completions":
            self._probe_echo()

    def alignment(self) -> dict[str, Any]:
        """The measured echo alignment, or why there is none (``config.model_info.echo_alignment``)."""
        if self.echo_shift is not None:
            return {"shift": self.echo_shift, "fit": self.echo_shares}
        return {"unavailable": self.echo_problem}

    # -- the echo alignment ---------------------------------------------------------------------------------------

    def _probe_echo(self) -> None:
        body = {
            "model": self.setup.settings.model,
            "prompt": PROBE_TEXT,
            "max_tokens": 1,
            "echo": True,
            "logprobs": PROBE_ALTERNATIVES,
            "temperature": 0.0,
        }
        try:
            (reply,) = self.setup.transport.run([ApiCall("completions", body)])
            echo = EchoLogprobs.from_response(reply, PROBE_TEXT, "echo probe")
        except HarnessError as exc:
            self.echo_problem = f"the server's /completions does not return echoed prompt log-probabilities ({exc})"
            return
        shift, shares = detect_shift(echo)
        self.echo_shares = shares
        if shift is None:
            self.echo_problem = (
                "the server's echoed prompt log-probabilities fit no known alignment (share of probe tokens "
                f"explained by shift 0 / 1: {shares[0]:.2f} / {shares[1]:.2f}); refusing to report them"
            )
        self.echo_shift = shift

    def _require_echo(self, kind: str) -> int:
        if self.setup.endpoint != "completions":
            raise HarnessError(f"model {self.setup.label}: {REFUSALS[(True, 'loglikelihood')]}")
        if self.echo_shift is None:
            raise HarnessError(f"model {self.setup.label} cannot answer {kind} requests: {self.echo_problem}")
        return self.echo_shift

    # -- loglikelihood and next_token from the echo ---------------------------------------------------------------

    def loglikelihood_many(self, requests: list[LoglikelihoodRequest]) -> list[LoglikelihoodResponse]:
        """One echoed request per request; the server (llama.cpp, vLLM) reuses the shared context's cache itself."""
        out = []
        for logprobs, tokens, usage in self._echo_calls([(r.context, r.continuation) for r in requests]):
            out.append(LoglikelihoodResponse(logprobs, tokens, usage=usage))
        return out

    def next_token_many(self, requests: list[NextTokenRequest]) -> list[NextTokenResponse]:
        """Over every token of each label on ``/completions`` (echo), from ``top_logprobs`` on chat."""
        if self.setup.endpoint != "completions":
            return self._top_logprob_labels(requests)
        pairs = [(r.context, c) for r in requests for c in r.candidates]
        scored = self._echo_calls(pairs)
        out, k = [], 0
        for request in requests:
            part = scored[k : k + len(request.candidates)]
            k += len(request.candidates)
            usage: dict[str, int] = {}
            for _, _, u in part:
                add_usage(usage, u)
            out.append(
                NextTokenResponse(
                    logprobs=[math.fsum(lp) for lp, _, _ in part],
                    tokens=[toks[0] for _, toks, _ in part],
                    n_tokens=[len(toks) for _, toks, _ in part],
                    usage=usage,
                )
            )
        return out

    def _echo_calls(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[float], list[str], dict[str, int]]]:
        """Log-probabilities, tokens and usage of each (context, continuation), collisions read a second time."""
        shift = self._require_echo("loglikelihood")
        # Shifted servers are read from the alternatives listed one position early: ask for enough of them.
        asked = 1 if shift == 0 else self.setup.settings.echo_logprobs
        readings = self._echo_read(pairs, shift, asked)
        out = []
        retry = [k for k, (values, _, _) in enumerate(readings) if any(v is None for v in values)]
        second = dict(zip(retry, self._echo_read([pairs[k] for k in retry], shift, SAFE_ALTERNATIVES), strict=True))
        for k, (values, tokens, usage) in enumerate(readings):
            again: list[float | None] = list(values)
            if k in second:
                again, _, extra = second[k]
                add_usage(usage, extra)
            out.append((fill_collided(values, again, self._echo_where(pairs[k][1])), tokens, usage))
        return out

    def _echo_where(self, continuation: str) -> str:
        return f"model {self.setup.label}: loglikelihood of {continuation[:40]!r}"

    def _echo_read(self, pairs: Sequence[tuple[str, str]], shift: int, asked: int) -> list[_Reading]:
        setup = self.setup
        calls = []
        for context, continuation in pairs:
            body = setup.body(prompt=context + continuation, max_tokens=1, echo=True, logprobs=asked, temperature=0.0)
            calls.append(ApiCall("completions", body))
        out: list[_Reading] = []
        for (context, continuation), reply in zip(pairs, setup.transport.run(calls), strict=True):
            where = self._echo_where(continuation)
            echo = EchoLogprobs.from_response(reply, context + continuation, where)
            # lm-evaluation-harness's split: whitespace that ends the context belongs to the continuation.
            boundary = len(context.rstrip()) if context.strip() else len(context)
            values, tokens = continuation_logprobs(echo, boundary, shift, where, asked)
            out.append((values, tokens, usage_of([reply])))
        return out

    # -- next_token from chat top_logprobs ------------------------------------------------------------------------

    def _top_logprob_labels(self, requests: list[NextTokenRequest]) -> list[NextTokenResponse]:
        """The first token of the reply, with its ``top_logprobs`` alternatives. A chat reply starts a new message,
        so labels are matched without leading whitespace, and variants of a label that differ only in surrounding
        whitespace (``"1"``, ``" 1"``) are summed. A label not among the alternatives has an unknown probability:
        the run stops and says so rather than guess."""
        setup = self.setup
        n_top = setup.settings.top_logprobs
        calls = [
            ApiCall(
                "chat",
                setup.body(prompt=r.context, max_tokens=1, logprobs=True, top_logprobs=n_top, temperature=1.0),
            )
            for r in requests
        ]
        out = []
        for request, reply in zip(requests, setup.transport.run(calls), strict=True):
            try:
                first = reply["choices"][0]["logprobs"]["content"][0]
                listed = [(str(t["token"]), float(t["logprob"])) for t in first["top_logprobs"]]
            except (KeyError, IndexError, TypeError, ValueError):
                raise HarnessError(
                    f"model {setup.label}: the chat response has no top_logprobs; this server cannot score labels"
                ) from None
            logprobs = []
            for candidate in request.candidates:
                label = candidate.strip()
                matches = [lp for token, lp in listed if token.strip() == label]
                if not matches:
                    shown = ", ".join(repr(t) for t, _ in listed[:8])
                    raise HarnessError(
                        f"model {setup.label}: label {candidate!r} is not among the {len(listed)} first-token "
                        f"alternatives the server listed ({shown}, ...), so its probability is unknown; raise "
                        "--model-args top_logprobs=N where the server allows it, or use chat=false with an "
                        "echo-capable server"
                    )
                top = max(matches)
                logprobs.append(top + math.log(math.fsum(math.exp(lp - top) for lp in matches)))
            out.append(
                NextTokenResponse(
                    logprobs=logprobs,
                    tokens=[c.strip() for c in request.candidates],
                    n_tokens=[1] * len(request.candidates),
                    usage=usage_of([reply]),
                )
            )
        return out

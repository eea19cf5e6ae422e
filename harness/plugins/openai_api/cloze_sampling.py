"""``sample_words`` over an OpenAI-compatible API, in the two ways the original Provo study asked ChatGPT.

``cloze=independent``: one request per sample, each with its own seed. On ``/completions`` the context is continued
as plain text and the first complete word is taken exactly as the ``hf`` adapter takes it
(``harness.words.rules.decide_word``); on chat the model is asked for one plausible next word and the reply's first word
is taken. ``cloze=list``: one request asks for a numbered list of ``n`` words. The prompts and the reply parsing are
``harness.plugins.openai_api.cloze``'s.
"""

from __future__ import annotations

from harness.api import DecodingConfig, SampleWordsRequest, SampleWordsResponse, decide_word
from harness.plugins.openai_api.cloze import ONE_WORD_PROMPT, WORD_LIST_PROMPT, first_word_of_reply, parse_word_list
from harness.plugins.openai_api.endpoint import EndpointSetup, choice_text, completion_tokens, sample_seed, usage_of
from harness.plugins.openai_api.transport import ApiCall


class ClozeSampler:
    """Answers ``sample_words`` requests through ``setup``'s endpoint, in the style ``--model-args cloze`` names."""

    def __init__(self, setup: EndpointSetup) -> None:
        self.setup = setup

    def sample_words_many(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        if self.setup.settings.cloze == "list":
            return self._word_lists(requests)
        return self._independent(requests)

    def _independent(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        """One request per sample; every sample of every request goes out together."""
        setup = self.setup
        calls = []
        for request in requests:
            decoding = DecodingConfig(temperature=request.temperature)
            if setup.endpoint == "chat":
                body = setup.body(
                    prompt=ONE_WORD_PROMPT.format(context=request.context),
                    max_tokens=request.max_new_tokens,
                    **setup.sampling(decoding),
                )
            else:
                limit = 5 if request.mode == "paper" else request.max_new_tokens
                body = setup.body(prompt=request.context, max_tokens=limit, **setup.sampling(decoding))
            calls.append(
                [ApiCall(setup.endpoint, setup.seeded(body, sample_seed(request.seed, i)), i) for i in range(request.n)]
            )
        flat = setup.transport.run([c for group in calls for c in group])
        out: list[SampleWordsResponse] = []
        offset = 0
        for request, group in zip(requests, calls, strict=True):
            replies = flat[offset : offset + len(group)]
            offset += len(group)
            counts: dict[str, int] = {}
            rejected: dict[str, int] = {}
            for reply in replies:
                choice = reply["choices"][0]
                text = choice_text(choice, setup.endpoint)
                ended = choice.get("finish_reason") != "length"
                if setup.endpoint == "chat":
                    word = first_word_of_reply(text, request.mode, request.segmenter)
                    outcome = ("word", word) if word else ("reject", "empty" if ended else "truncated")
                else:
                    depth = completion_tokens(reply) or 0
                    outcome = decide_word(
                        text,
                        ended=ended,
                        depth=depth,
                        mode=request.mode,
                        max_new_tokens=request.max_new_tokens,
                        segmenter=request.segmenter,
                    )
                    if outcome[0] == "open":  # the server stopped early for a reason of its own (a stop string)
                        outcome = ("reject", "truncated")
                bucket = counts if outcome[0] == "word" else rejected
                bucket[outcome[1]] = bucket.get(outcome[1], 0) + 1
            usage = usage_of(replies)
            out.append(
                SampleWordsResponse(
                    counts=counts,
                    n_requested=request.n,
                    rejected=rejected,
                    tokens_evaluated=usage["prompt_tokens"] + usage["completion_tokens"],
                    usage=usage,
                )
            )
        return out

    def _word_lists(self, requests: list[SampleWordsRequest]) -> list[SampleWordsResponse]:
        """One request per request, asking for a list of ``n`` words; a short list shows as ``missing``."""
        setup = self.setup
        calls = []
        for request in requests:
            body = setup.body(
                prompt=WORD_LIST_PROMPT.format(context=request.context, n=request.n),
                max_tokens=max(request.max_new_tokens, 8 * request.n + 32),
                **setup.sampling(DecodingConfig(temperature=request.temperature)),
            )
            calls.append(ApiCall(setup.endpoint, setup.seeded(body, sample_seed(request.seed, 0))))
        out: list[SampleWordsResponse] = []
        for request, reply in zip(requests, setup.transport.run(calls), strict=True):
            # The study's rule was never applied to listed words: a list is cut by the first-word rule then.
            mode = "exact" if request.mode == "paper" else request.mode
            words = parse_word_list(choice_text(reply["choices"][0], setup.endpoint), mode, request.segmenter)
            counts: dict[str, int] = {}
            for word in words[: request.n]:
                counts[word] = counts.get(word, 0) + 1
            missing = request.n - min(len(words), request.n)
            usage = usage_of([reply])
            out.append(
                SampleWordsResponse(
                    counts=counts,
                    n_requested=request.n,
                    rejected={"missing": missing} if missing else {},
                    tokens_evaluated=usage["prompt_tokens"] + usage["completion_tokens"],
                    usage=usage,
                    listed=len(words),
                )
            )
        return out

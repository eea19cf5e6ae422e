"""How a generation task shows an input to a model: a prompt for causal LMs, chat turns for chat templates, and
the encoder input of sequence-to-sequence models.

All three are rendered by the task from the same instance and travel in one ``GenerateRequest``; the adapter uses
the one its model takes. Templates use ``str.format`` placeholders:

* ``{source}``: the input text; for a dialogue, its turns joined with ``turn_separator``;
* ``{context}``: the same as ``{source}`` (reads better in dialogue templates);
* ``{last_turn}``: a dialogue's last turn (the source itself for other tasks).

Chat messages: a dialogue becomes its turns, with roles alternating so that the last turn is the user's (the
model answers it); any other input becomes one user message rendered from ``chat_template`` (default: the prompt
template). ``system_prompt``, when given, comes first.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.instances import GenerationInstance

PROMPT_FIELDS: tuple[str, ...] = ("source", "context", "last_turn")


def template_fields(template: str) -> list[str]:
    """The placeholder names in ``template``; ValueError if it is not a valid format string or uses positions."""
    names: list[str] = []
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not name or name.isdigit() or spec or conversion:
            raise ValueError(f"placeholder {{{name}}} is not a plain named field")
        names.append(name)
    return names


@dataclass(frozen=True)
class RenderedInput:
    prompt: str
    messages: tuple[tuple[str, str], ...]
    source: str
    #: The input before any template or prefix (the source, or the turns joined).
    input: str = ""


def render_input(instance: GenerationInstance, params: Mapping[str, Any]) -> RenderedInput:
    """Render ``instance`` with the task's ``params`` (``prompt_template``, ``chat_template``, ``system_prompt``,
    ``seq2seq_prefix``, ``turn_separator``)."""
    separator = str(params.get("turn_separator", "\n"))
    if instance.turns:
        text = separator.join(instance.turns)
        last = instance.turns[-1]
    else:
        text = last = instance.source
    fields = {"source": text, "context": text, "last_turn": last}
    template = str(params.get("prompt_template", "{source}"))
    prompt = template.format_map(fields)

    messages: list[tuple[str, str]] = []
    system = params.get("system_prompt")
    if system:
        messages.append(("system", str(system)))
    if instance.turns:
        n = len(instance.turns)
        # Roles counted back from the last turn, which is the user's: the model plays the other speaker.
        messages.extend(
            ("user" if (n - 1 - i) % 2 == 0 else "assistant", turn) for i, turn in enumerate(instance.turns)
        )
    else:
        chat_template = params.get("chat_template") or template
        messages.append(("user", str(chat_template).format_map(fields)))
    source = str(params.get("seq2seq_prefix", "")) + text
    return RenderedInput(prompt=prompt, messages=tuple(messages), source=source, input=text)

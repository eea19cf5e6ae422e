"""How a forward pass takes and returns its key/value cache, across transformers versions, and how it is asked for
the last position's logits only.

Transformers 5 renamed the ``past_key_values`` argument and output field to ``cache`` (the old name warns on every
call and goes in 5.40). Both engines, the exact search and the query scorer pass caches on every forward pass, so
the name is read once from the model's signature here instead of at every call site.
"""

from __future__ import annotations

import inspect
from typing import Any


def cache_keyword(model: Any) -> str:
    """``"cache"`` where the model's ``forward`` takes it, else ``"past_key_values"`` (older transformers)."""
    parameters = inspect.signature(model.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def output_cache(output: Any) -> Any:
    """The updated cache of a forward pass's output, under either name."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def last_logits_kwargs(model: Any) -> dict[str, Any]:
    """``{"logits_to_keep": 1}`` where the model's ``forward`` takes it, else nothing: the engines read only the last
    position's logits, and skipping the others saves a vocabulary-sized product per earlier position."""
    parameters = inspect.signature(model.forward).parameters
    return {"logits_to_keep": 1} if "logits_to_keep" in parameters else {}

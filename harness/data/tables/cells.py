"""What counts as an empty cell, in one place for every reader of a table's rows.

Why one definition: the generic loaders decide by it what is no answer (a blank box), which slots of a numbered
family are unused, and which participant cells hold no answer, and ``harness data inspect`` counts empty cells by
it; were the two to differ, the inspection would describe cells the loaders read otherwise. Only a missing value,
blank text or a NaN (a Parquet null) is empty: ``NA``, ``null`` and ``NULL`` are words a participant may have typed,
and stay as written.
"""

from __future__ import annotations

import math
from typing import Any


def is_empty(value: Any) -> bool:
    """No value, blank text (white space only), or NaN."""
    return (
        value is None
        or (isinstance(value, str) and not value.strip())
        or (isinstance(value, float) and math.isnan(value))
    )

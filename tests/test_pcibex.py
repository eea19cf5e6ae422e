"""PCIbex results files (``format: pcibex``): columns named by the file's comment blocks, read as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.data.tables.file_rows import file_rows
from harness.errors import HarnessError
from tests.helpers import write

RESULTS = """\
# Results on Saturday November 28 2026 10:20:00 UTC
# USER AGENT: Mozilla/5.0
#
# Columns below this comment are as follows:
# 1. Results reception time.
# 2. MD5 hash of participant's IP address.
# 3. Label.
# 4. Value.
1732780000,abc,instructions,NULL
# Columns below this comment are as follows:
# 1. Results reception time.
# 2. MD5 hash of participant's IP address.
# 3. Label.
# 4. Value.
# 5. sentence.
1732780000,abc,cloze,mat,"Well, the cat sat on the"
"""


def test_each_line_is_named_by_the_block_above_it_and_every_row_has_every_column(tmp_path: Path) -> None:
    rows = file_rows(write(tmp_path, "results.csv", RESULTS), "pcibex")
    # By hand: the trailing periods go, NULL stays as written, a quoted comma is inside its cell, and the first
    # block's row has the second block's extra column, empty.
    assert rows == [
        {
            "Results reception time": "1732780000",
            "MD5 hash of participant's IP address": "abc",
            "Label": "instructions",
            "Value": "NULL",
            "sentence": "",
        },
        {
            "Results reception time": "1732780000",
            "MD5 hash of participant's IP address": "abc",
            "Label": "cloze",
            "Value": "mat",
            "sentence": "Well, the cat sat on the",
        },
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1,2,3\n", "line 1: a data line before any '# Columns below this comment are as follows:' block"),
        (RESULTS + "1,abc,cloze,mat,x,extra\n", "line 17: 6 fields, but the block of column comments above it names 5"),
        ("# The lines below this comment are in groups of 2.\n1,2\n", "line 1: the older Ibex layout"),
        (
            "# Columns below this comment are as follows:\n# 1. A.\n# 3. C.\n1,2\n",
            "line 3: column 3 follows column 1 in its block",
        ),
        (
            "# Columns below this comment are as follows:\n# 1. A.\n# 2. A.\n1,2\n",
            "line 3: column 2 is named 'A', as column 1 of its block is",
        ),
        (
            "# Columns below this comment are as follows:\n# 1. A.\n",
            "no rows (no data lines under its column comments)",
        ),
    ],
)
def test_a_damaged_results_file_is_one_line_naming_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(HarnessError) as caught:
        file_rows(write(tmp_path, "results.csv", text), "pcibex")
    assert message in str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / "results.csv"))
    assert "\n" not in str(caught.value)

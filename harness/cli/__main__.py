"""``python -m harness.cli`` is the same as the ``harness`` command (``python -m harness`` too)."""

import sys

from harness.cli import main

if __name__ == "__main__":
    sys.exit(main())

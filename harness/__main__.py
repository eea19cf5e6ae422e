"""``python -m harness`` is the same as the ``harness`` command."""

import sys

from harness.cli import main

if __name__ == "__main__":
    sys.exit(main())

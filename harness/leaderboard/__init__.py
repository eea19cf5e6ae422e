"""``harness leaderboard``: many runs side by side, with the human control as the reference row.

``collect`` folds results files into rows and refuses results that cannot be compared; ``instances`` reads the
per-instance data the figures and the page need from the samples files; ``plots`` draws the PNG figures; ``page``
writes the static HTML page; ``build`` ties them together.
"""

from harness.leaderboard.build import build

__all__ = ["build"]

"""The download helpers the loaders use (``from harness.plugins.loaders import downloads``): they live in
:mod:`harness.data.downloads`, shared with ``harness data fetch``; this module keeps the loaders' import path.

Every loader fetch goes through them: a temporary file renamed into place only when complete, a size cap and a
deadline, a body shorter than its ``Content-Length`` refused, and ``HARNESS_DATA_MIRROR`` honoured.
"""

from __future__ import annotations

from harness.data.downloads import (
    MIRROR_ENV,
    TRANSFER_ERRORS,
    Deadline,
    DownloadFailed,
    Opener,
    copy_limited,
    describe,
    fetch_atomic,
    fetch_to_temp,
    mirrored,
    one_line,
    open_url,
)

__all__ = [
    "MIRROR_ENV",
    "TRANSFER_ERRORS",
    "Deadline",
    "DownloadFailed",
    "Opener",
    "copy_limited",
    "describe",
    "fetch_atomic",
    "fetch_to_temp",
    "mirrored",
    "one_line",
    "open_url",
]

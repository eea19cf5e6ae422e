"""Where the pragmatics releases keep their files and what they name things: the phenomena, their task codes and
option counts, the local folder layout, and the repositories and pinned commits each folder is a copy of.

Every other ``pragmatics_*`` module reads these names from here, so the layout is described once.
"""

from __future__ import annotations

from pathlib import Path

HU_REPO = "jennhu/lm-pragmatics"
HU_COMMIT = "9fd4be5c0e43162c9d6e09b6024cc000e40b3398"
HU_REPO_URL = f"https://github.com/{HU_REPO}"
TSVILODUB_REPO = "polina-tsvilodub/LLM_link"
TSVILODUB_COMMIT = "2cfc65228c5c8f9d8d4f6660d68b1c7487b4b773"
TSVILODUB_REPO_URL = f"https://github.com/{TSVILODUB_REPO}"

#: Phenomena in instance order, with the task code of the release's first column and the number of options.
PHENOMENA = ("CoherenceInference", "Deceits", "Humour", "IndirectSpeech", "Irony", "Maxims", "Metaphor")
TASK_CODES = {
    "CoherenceInference": "CIV",
    "Deceits": "DV",
    "Humour": "HV",
    "IndirectSpeech": "ISV",
    "Irony": "IV",
    "Maxims": "MV",
    "Metaphor": "MPV",
}
N_OPTIONS = {
    "CoherenceInference": 2,
    "Deceits": 4,
    "Humour": 5,
    "IndirectSpeech": 4,
    "Irony": 4,
    "Maxims": 4,
    "Metaphor": 5,
}
#: The file-name stem of each phenomenon's instruction in Tsvilodub et al.'s ``prompt/prompts/``.
TSVILODUB_NAMES = {
    "CoherenceInference": "coherence",
    "Deceits": "deceits",
    "Humour": "humour",
    "IndirectSpeech": "indirect_speech",
    "Irony": "irony",
    "Maxims": "maxims",
    "Metaphor": "metaphor",
}
COHERENCE_OPTIONS = ("Coherent", "Incoherent")
SIMPLE_LABELS = ("Correct", "Incorrect")

HU_DIR = Path("hu2023")
RAW_DIR = HU_DIR / "fj_raw_data"
HUMAN_DIR = HU_DIR / "human_data" / "fj"
JSONL_NAME = "pragmatics_items_human_counts.jsonl"
TSVILODUB_DIR = Path("tsvilodub2024")
TSVILODUB_PROMPTS = TSVILODUB_DIR / "prompt" / "prompts"
#: The local folder of each release and the repository and pinned commit it is a copy of; below the folder, the
#: paths are the repository's own.
RELEASES = {
    HU_DIR.name: (HU_REPO, HU_COMMIT),
    TSVILODUB_DIR.name: (TSVILODUB_REPO, TSVILODUB_COMMIT),
}

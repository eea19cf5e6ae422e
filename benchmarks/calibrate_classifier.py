"""Choose the similarity threshold of the ``match_similarity`` answer classifier against a human mapping.

Tsvilodub et al. (2024) let four models (flan-t5-xl, Llama-2-7b, gpt-3.5-turbo-instruct, text-davinci-002) answer
the Hu et al. (2023) items in their own words and mapped every answer to an option role (``target``,
``competitor``, ``distractor_*``, ...) or to ``error`` by hand. That mapping is the reference here: the script
classifies the same answers against the same option texts (``tsvilodub2024/data/data_hu_*.csv``; the free prompts
did not show the options, so there are no labels) and prints, per threshold:

* ``agreement``: share of responses where the classifier gives the study's option, or both give none (``error``);
* ``acc(both)``: share agreeing among the responses both mapped to an option;
* ``unclassified``: the classifier's unclassified rate (the study's ``error`` rate is printed once);
* ``study-error unclassified``: share of the study's ``error`` responses the classifier leaves unclassified;
* ``study-mapped unclassified``: share of the responses the study mapped that the classifier leaves unclassified.

How the study's files are read, and why:

* only ``*_annotated.csv`` files carry the mapping (column ``response_option``, or ``annotation_tsvilodub`` /
  ``annotation_wang``); some are ``;``-separated; byte-identical duplicates (the temperature 0.1 flan-t5-xl runs
  are copied into every seed folder) are counted once, so no response is weighted by how often it was copied;
* Llama-2 and some gpt-3.5 responses repeat the prompt before the answer; the prompt is cut off, as the harness
  only ever classifies the continuation;
* role names are repaired where the annotators misspelled them (``funny_nonsequitor``, ...), and ``competitor``
  in Deceits and Maxims, whose tables call that role ``incorrect_literal``, is mapped to it: the files that use
  ``competitor`` there never use ``incorrect_literal``. Responses with a role that names no option are dropped and
  counted;
* CoherenceInference is left out by default (``--phenomena`` takes it): its answers are yes/no judgements of a
  story (``Yes, the story is coherent.``) and its options the single words ``coherent`` / ``incoherent``, which
  measures negation handling rather than the threshold.

The classifier runs once with threshold -1 (every non-empty answer that matches no label or text gets its most
similar option and that cosine); a threshold ``t`` then classifies exactly the answers whose cosine is >= ``t``,
which is what running the classifier at ``t`` gives, without embedding everything six times.

Example (the numbers quoted in ``scorers/choice/classify.py``)::

    python benchmarks/calibrate_classifier.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.scorers.choice.classify import (  # noqa: E402
    Classification,
    ClassifyItem,
    MatchThenSimilarityClassifier,
)

#: Option role columns of each ``data_hu_<phenomenon>.csv``, in the order used as the option order here.
ROLES: dict[str, tuple[str, ...]] = {
    "coherence": ("target", "competitor"),
    "deceits": ("target", "incorrect_literal", "incorrect_lexical_overlap", "incorrect_social_convention"),
    "humour": (
        "target",
        "incorrect_straightforward",
        "associative_nonsequitur",
        "funny_nonsequitur",
        "neutral_nonsequitur",
    ),
    "indirect_speech": ("target", "competitor", "distractor_lexical_overlap", "distractor_associative"),
    "irony": ("target", "competitor", "distractor_associate", "distractor_nonsequitur"),
    "maxims": ("target", "incorrect_literal", "incorrect_nonliteral", "incorrect_associate"),
    "metaphor": ("target", "competitor", "distractor_plausibleliteral", "distractor_literal", "distractor_nonsequitut"),
}
#: Misspelt or renamed roles in the annotations, per phenomenon ("*": any).
ROLE_FIXES: dict[str, dict[str, str]] = {
    "*": {"funny_nonsequitor": "funny_nonsequitur", "distractor_plausiliteral": "distractor_plausibleliteral"},
    "deceits": {"competitor": "incorrect_literal"},
    "maxims": {"competitor": "incorrect_literal"},
    "metaphor": {"distractor_nonsequitur": "distractor_nonsequitut"},
    "indirect_speech": {"distractor_associate": "distractor_associative"},
}
LABEL_COLUMNS = ("response_option", "annotation_tsvilodub", "annotation_wang")
DEFAULT_PHENOMENA = ("deceits", "humour", "indirect_speech", "irony", "maxims", "metaphor")
#: 0.30-0.80 is the range asked about; 0.10-0.25 are included because agreement peaks below 0.30.
THRESHOLDS = tuple(round(0.1 + 0.05 * i, 2) for i in range(15))


@dataclass(frozen=True)
class Response:
    model: str
    phenomenon: str
    text: str
    options: tuple[str, ...]
    #: The study's option (index into ``options``), None for ``error``.
    reference: int | None


def read_csv(path: Path) -> list[dict[str, str]]:
    """Rows of a study CSV, whichever of ``,`` and ``;`` it was saved with (both occur)."""
    text = path.read_text(encoding="utf-8-sig")
    header = text.split("\n", 1)[0]
    delimiter = ";" if header.count(";") > header.count(",") else ","
    return list(csv.DictReader(text.splitlines(keepends=True), delimiter=delimiter))


def load_options(data: Path) -> dict[tuple[str, int], tuple[str, ...]]:
    options = {}
    for phenomenon, roles in ROLES.items():
        for row in read_csv(data / "tsvilodub2024" / "data" / f"data_hu_{phenomenon}.csv"):
            options[(phenomenon, int(row["item_number"]))] = tuple(" ".join(row[r].split()) for r in roles)
    return options


def load_responses(data: Path, phenomena: tuple[str, ...]) -> tuple[list[Response], Counter[str]]:
    options = load_options(data)
    root = data / "reference_outputs" / "tsvilodub2024" / "results" / "free"
    seen: set[str] = set()
    dropped: Counter[str] = Counter()
    responses = []
    for path in sorted(root.glob("*/seed*/temperature*/*_annotated.csv")):
        rows = [row for row in read_csv(path) if row["phenomenon"] in phenomena]
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest in seen:
            dropped["rows of duplicate files"] += len(rows)
            continue
        seen.add(digest)
        for row in rows:
            phenomenon = row["phenomenon"]
            column = next((c for c in LABEL_COLUMNS if c in row), None)
            role = (row.get(column) or "").strip() if column else ""
            role = ROLE_FIXES.get(phenomenon, {}).get(role, ROLE_FIXES["*"].get(role, role))
            opts = options[(phenomenon, int(row["item_id"]))]
            roles = ROLES[phenomenon]
            if role != "error" and role not in roles:
                dropped[f"role {role!r}"] += 1
                continue
            text, prompt = row["response"].strip(), row["prompt"].strip()
            if prompt and text.startswith(prompt):
                text = text[len(prompt) :].strip()
            reference = None if role == "error" else roles.index(role)
            responses.append(Response(path.parts[-4], phenomenon, text, opts, reference))
    return responses, dropped


def outcome(c: Classification, threshold: float) -> int | None:
    if c.how == "similarity" and c.similarity is not None and c.similarity < threshold:
        return None
    return c.option


def _share(flags: Iterable[bool]) -> float:
    values = list(flags)
    return sum(values) / len(values) if values else float("nan")


def main() -> None:
    default_data = os.environ.get("HARNESS_DATA_DIR") or str(REPO.parent / "shared" / "data")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=default_data, help="data root holding pragmatics-mcq/")
    parser.add_argument("--phenomena", default=",".join(DEFAULT_PHENOMENA), help="comma-separated")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()

    data = Path(args.data_dir) / "pragmatics-mcq"
    if not (data / "reference_outputs" / "tsvilodub2024" / "results" / "free").is_dir():
        sys.exit(f"free-production results not found under {data} (set --data-dir or HARNESS_DATA_DIR)")
    phenomena = tuple(p.strip() for p in args.phenomena.split(",") if p.strip())
    responses, dropped = load_responses(data, phenomena)
    # Identical (answer, item, reference) rows from different runs are one judgement; count each once.
    unique = list(dict.fromkeys(responses))
    print(f"{len(responses)} responses, {len(unique)} distinct; dropped: {dict(dropped) or 'none'}")
    study_error = sum(r.reference is None for r in unique) / len(unique)
    print(f"study's unclassified ('error') rate: {study_error:.3f}")

    classifier = MatchThenSimilarityClassifier(model=args.model, threshold=-1.0, device=args.device)
    start = time.perf_counter()
    results = classifier.classify([ClassifyItem(r.text, r.options) for r in unique])
    print(f"classified in {time.perf_counter() - start:.1f} s on {classifier.describe()['device']}")
    hows = Counter(c.how for c in results)
    print("how (before the threshold): " + ", ".join(f"{k} {v}" for k, v in sorted(hows.items())))

    print(
        "\nthreshold  agreement  acc(both classified)  unclassified  "
        + "study-error unclassified  study-mapped unclassified"
    )
    for threshold in THRESHOLDS:
        got = [outcome(c, threshold) for c in results]
        pairs = list(zip(got, (r.reference for r in unique), strict=True))
        agree = sum(g == ref for g, ref in pairs) / len(pairs)
        both = [g == ref for g, ref in pairs if g is not None and ref is not None]
        acc = sum(both) / len(both) if both else float("nan")
        unclassified = sum(g is None for g, _ in pairs) / len(pairs)
        caught = _share(g is None for g, ref in pairs if ref is None)
        lost = _share(g is None for g, ref in pairs if ref is not None)
        print(f"{threshold:<9.2f}  {agree:<9.3f}  {acc:<20.3f}  {unclassified:<12.3f}  {caught:<23.3f}  {lost:.3f}")

    print("\nagreement per model at each threshold")
    models = sorted({r.model for r in unique})
    print("threshold  " + "  ".join(f"{m:>22}" for m in models))
    for threshold in THRESHOLDS:
        cells = []
        for m in models:
            pairs = [(outcome(c, threshold), r.reference) for c, r in zip(results, unique, strict=True) if r.model == m]
            cells.append(f"{sum(g == ref for g, ref in pairs) / len(pairs):>22.3f}")
        print(f"{threshold:<9.2f}  " + "  ".join(cells))


if __name__ == "__main__":
    main()

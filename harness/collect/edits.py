"""Which edits of a study file a running study accepts, and which would change what its answers mean.

Why: a study runs for days, and an organiser will fix a typo in the consent text, raise ``participants_per_item``
to recruit more people, or give participants more time. Those change nothing about what an answer means, so the
server continues the database under the edited file. Every other change (the texts, the items, the kind, the
attention checks, the answer time limit) would mix answers given under two studies in one database, so it is
refused with one line naming the field. The database keeps the study as last served (``StudyStore.served_study``),
so a change is judged field by field against what participants actually saw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.collect.study import Study
from harness.errors import HarnessError

#: Fields (dotted: ``completion.code``) any change of which is accepted: texts participants read, codes they get.
FREE_FIELDS = ("title", "consent", "instructions", "completion")
#: Numbers that may only grow while the study runs: more people per item, a longer hold of a place.
GROWING_FIELDS = {
    "participants_per_item": lambda s: s.participants_per_item,
    "time_limits.session_minutes": lambda s: s.session_minutes,
}
ACCEPTED = (
    "consent, instructions, title, completion, a larger participants_per_item and a longer time_limits.session_minutes"
)


def changed_fields(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The fields that differ between two parsed study files, dotted one level into mappings (``completion.url``),
    in sorted order; a field given in one and left out (its default) in the other counts as changed."""
    changed = []
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key), new.get(key)
        if isinstance(a, Mapping) or isinstance(b, Mapping):  # a mapping left out is an empty one
            a, b = ({} if a is None else a), ({} if b is None else b)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            changed += [f"{key}.{k}" for k in sorted(set(a) | set(b), key=str) if a.get(k) != b.get(k)]
        elif a != b:
            changed.append(str(key))
    return changed


def check_edit(served: Study, edited: Study, where: str) -> list[str]:
    """The fields ``edited`` changes against the study as ``served``, when every change is safe to continue the
    database with; otherwise one ``HarnessError`` naming the first field that is not."""
    if served.name != edited.name:
        raise HarnessError(
            f"{where}: this database holds study '{served.name}', not '{edited.name}' (give a new --db for a new study)"
        )
    fields = changed_fields(served.source, edited.source)
    if served.texts_sha256 != edited.texts_sha256 and "texts" not in fields:
        fields.append("texts.file (its content)")
    for name in fields:
        if name.split(".")[0] in FREE_FIELDS:
            continue
        grow = GROWING_FIELDS.get(name)
        if grow is not None and grow(edited) >= grow(served):
            continue
        why = f"lowered from {grow(served)} to {grow(edited)}" if grow is not None else "changed"
        raise HarnessError(
            f"{where}: field '{name}' {why} since the study started, which would mix answers given under two "
            f"studies (while a study runs only {ACCEPTED} may change): undo the change, or give a new --db"
        )
    return fields

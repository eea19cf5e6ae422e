"""Hostile task files for the generic loaders: templates that recurse, build gigabytes or loop for hours, and counts
of people no draw can take. Each ends in one line within seconds (``harness.plugins.loaders.generic.limits``,
``harness.scorers.distributions``), never a ``RecursionError`` traceback, a ``MemoryError`` or a hang.

The cases run ``harness validate`` (the first rows through the mapping) or, for the counts, ``harness run
--human-only`` (the human control draws people from the counts).
"""

from __future__ import annotations

from tests.malformed.case import Case

#: The rows of a small cloze study; ``{big}`` is the count of the last guess.
NORMS = """sentence,position,context,word,guess,n
s1,1,The cat sat on the,mat,mat,5
s1,1,The cat sat on the,mat,floor,3
s1,2,She drank a cup of,tea,tea,1000000000
s1,2,She drank a cup of,tea,coffee,{big}
"""
TASK = """task: hostile
version: 1
loader: generic_cloze
data:
  files: cloze/norms.csv
  group_by: [sentence, position]
  context: {context}
  target: word
  human: {{shape: long, responses: guess, counts: n}}{extra}
request: sample_words
params: {{n_samples: 10}}
scorers: [tvd, human_control]
"""
VALIDATE = ("validate", "{tmp}/task.yaml", "--data-dir", "{tmp}/data")
RUN = (
    "run",
    "--tasks",
    "{tmp}/task.yaml",
    "--human-only",
    "--data-dir",
    "{tmp}/data",
    "--output-dir",
    "{tmp}/out",
)


def files(context: str = "context", extra: str = "", big: int = 4) -> dict[str, bytes | str]:
    """A task file over ``data/cloze/norms.csv`` with the ``context`` field (and data options) given."""
    return {
        "task.yaml": TASK.format(context=context, extra=extra),
        "data/cloze/norms.csv": NORMS.format(big=big),
    }


CASES = [
    Case(
        "template-recursive-macro",
        VALIDATE,
        "row 1: field 'context': template '{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}' stopped: calls nested "
        "more than 50 deep",
        files(context='"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"'),
    ),
    Case(
        "template-huge-string",
        VALIDATE,
        "field 'context': template \"{{ 'a' * 10**9 }}\" stopped: '*' would build a value of 1,000,000,000",
        files(context="\"{{ 'a' * 10**9 }}\""),
    ),
    Case(
        "template-huge-power",
        VALIDATE,
        "field 'context': template '{{ 10 ** (10 ** 9) }}' stopped: '**' would build an integer",
        files(context='"{{ 10 ** (10 ** 9) }}"'),
    ),
    Case(
        "template-filter-nested-ranges",
        VALIDATE,
        "field 'filter': template '{% for i in range(100000) %}",
        files(
            extra='\n  filter: "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}'
            '{{ true }}"'
        ),
    ),
    Case(
        "template-filter-nested-loops",
        VALIDATE,
        "stopped: more than 1,000,000 steps",
        files(
            extra='\n  filter: "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}'
            '{{ true }}"'
        ),
    ),
    Case(
        "template-output-doubling",
        VALIDATE,
        "stopped: '~' would build a value of 1,048,576 characters",
        files(
            context="\"{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
            '{% endfor %}{{ ns.s }}"'
        ),
    ),
    Case("count-10-to-the-15", RUN, "'1000000000000000' is more than 1,000,000,000 people", files(big=10**15)),
    Case(
        "count-total-over-a-billion",
        RUN,
        "field 'human.counts' (column 'n'): the instance's counts add up to 2,000,000,000 people, more than "
        "999,999,999: not counts of people",
        files(big=10**9),
    ),
]

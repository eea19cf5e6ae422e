"""Resource limits: the generic loaders' templates (``harness.plugins.loaders.generic.limits``) and the draws of
people from counts (``harness.scorers.distributions``), checked by hand on small cases. Everything here is fast:
each hostile template stops within a fraction of a second, and no test lists more than a few people."""

from __future__ import annotations

import time
import tracemalloc
from collections import Counter
from typing import Any

import numpy as np
import pytest

from harness.instances import ClozeInstance
from harness.plugins.loaders.generic import limits
from harness.plugins.loaders.generic.fields import Field, TemplateLimitError, column_or_template
from harness.scorers import distributions
from harness.scorers.distributions import (
    EXPAND_LIMIT,
    MAX_DRAWN,
    TooManyPeopleError,
    counts_tvd,
    draw_from_counts,
    expand,
    split_halves,
    subsample,
)
from harness.scorers.human_control import HumanControlScorer
from harness.scorers.paper_provo import expand_responses
from harness.scorers.replacement import disjoint_groups

ROW: dict[str, Any] = {"passage": "The cat sat on the mat", "word_num": 4, "refs": ["b", "c"], "first": "a"}
WHERE = "DATA/cloze.csv: row 2"


def field(source: str, *, native: bool = False) -> Field:
    converted: Field = column_or_template("context", native=native)(source)
    return converted


def render(source: str, *, native: bool = False, row: dict[str, Any] | None = None) -> Any:
    return field(source, native=native).value(ROW if row is None else row, WHERE)


def refused(source: str, *, native: bool = False) -> str:
    """The one line a hostile template gives; it must come fast."""
    start = time.perf_counter()
    with pytest.raises(TemplateLimitError) as caught:
        render(source, native=native)
    assert time.perf_counter() - start < 3.0
    message = str(caught.value)
    assert message.startswith(f"{WHERE}: field 'context': template ") and "\n" not in message
    return message


# ------------------------------------------------------------------------------------------------ normal templates


@pytest.mark.parametrize(
    ("source", "native", "expected"),
    [
        ("{{ passage.split(' ')[:word_num - 1] | join(' ') }}", False, "The cat sat"),
        ("{{ [first] + refs }}", True, ["a", "b", "c"]),
        ("{{ word_num * 2 }}", True, 8),
        ("{{ 'ab' * 3 }}", False, "ababab"),
        ("{{ 2 ** 10 }}", True, 1024),
        ("{{ '%03d' % word_num }}-{{ '{}!'.format(first) }}", False, "004-a!"),
        ("{{ first ~ word_num }}", False, "a4"),
        ("{% for w in refs %}{{ loop.index }}{{ w }}{% endfor %}", False, "1b2c"),
        ("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ n }}{% endif %}{% endmacro %}{{ f(3) }}", False, "123"),
        ("{{ range(3) | map('string') | join(',') }}", False, "0,1,2"),
        ("{{ passage | replace('cat', 'dog') | upper | center(24) }}", False, " THE DOG SAT ON THE MAT "),
    ],
)
def test_normal_templates_render_as_before(source: str, native: bool, expected: Any) -> None:
    assert render(source, native=native) == expected


def test_a_template_is_reused_for_equal_inputs_but_a_list_is_never_shared() -> None:
    context = field("{{ passage.split(' ')[:word_num - 1] | join(' ') }}")
    assert context.inputs == ("passage", "word_num")
    assert context.value(ROW, WHERE) == "The cat sat"
    assert context.value({**ROW, "word_num": 2}, WHERE) == "The"
    assert context.value({**ROW, "other": 1}, WHERE) == "The cat sat"
    refs = field("{{ [first] + refs }}", native=True)
    first, second = refs.value(ROW, WHERE), refs.value(ROW, WHERE)
    assert first == second == ["a", "b", "c"] and first is not second
    assert field("{{ row['first'] }}").inputs is None  # reads any column: rendered every time


# ----------------------------------------------------------------------------------------------- hostile templates


def test_a_macro_that_calls_itself_is_one_line() -> None:
    message = refused("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}")
    assert f"nested more than {limits.MAX_TEMPLATE_DEPTH} deep" in message
    # A recursive loop is the same limit.
    assert "MAX_TEMPLATE_DEPTH" in refused("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ 'a' * 10**9 }}", "'*' would build a value of 1,000,000,000 characters"),
        ("{{ ['x' * 1000000] * 1000 }}", "'*' would build a value of 1,000,006,000"),
        ("{{ 10 ** (10 ** 9) }}", "'**' would build an integer of about 3,000,000,000 bits"),
        ("{{ (2 ** 5000) * (2 ** 5000) * 2 }}", "built an integer of 10,001 bits"),
        ("{{ 'a'.ljust(10**9) }}", "ljust() would build a value of 1,000,000,000"),
        ("{{ 'a' | center(1000000000) }}", "filter 'center' would build"),
        ("{{ range(10000) | join('x' * 1000000) }}", "filter 'join' would build"),
        ("{{ ('x' * 1000000).replace('x', 'yy') }}", "replace() would build a value of 2,000,000"),
        ("{{ '%1000000000d' % 1 }}", "'%' would build"),
        ("{{ '{:>1000000000}'.format(1) }}", "format() would build"),
        ("{{ [1] | batch(1000000000, 'x') | list }}", "filter 'batch' would build"),
        ("{{ ('\t' * 1000000).expandtabs(1000) }}", "expandtabs() would build"),
        ("{{ ('a\\n' * 400000) | indent(100) }}", "filter 'indent' would build"),
        # Doubling in a loop: refused at the first value over the limit, with ~ or +.
        ("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "'~'"),
        ("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", "'+'"),
        # The output: a thousand copies of a long text, and a list of references turned into text.
        ("{% set b = 'x' * 1000000 %}{% for i in range(1000) %}{{ b }}{% endfor %}", "the output would build"),
        (
            "{% set b = 'x' * 100000 %}{% set ns = namespace(l=[]) %}{% for i in range(100) %}"
            "{% set ns.l = ns.l + [b] %}{% endfor %}{{ ns.l | string }}",
            "filter 'string' would build a value of 10,000,",
        ),
        # Many values each under the limit: the total a render builds.
        ("{% set b = 'x' * 1000000 %}{{ ([none] * 1000) | map('default', b, true) | list | length }}", "in all"),
        ("{% for i in range(100000) %}{% endfor %}", "range of 100,000 numbers"),
    ],
)
def test_a_template_that_would_build_too_much_stops_before_building_it(source: str, expected: str) -> None:
    tracemalloc.start()
    try:
        message = refused(source)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert expected in message, message
    assert peak < 200 * 2**20  # a few copies of a megabyte at most, never the gigabytes asked for


def test_nested_loops_stop_at_the_step_limit() -> None:
    message = refused("{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}{{ true }}")
    assert "more than 1,000,000 steps" in message and "MAX_TEMPLATE_STEPS" in message


def test_slow_steps_stop_at_the_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_TEMPLATE_SECONDS", 0.0)
    assert "ran for more than 0 s" in refused("{% for i in range(1000) %}{{ i }}{% endfor %}")
    assert render("{% for i in range(100) %}{% endfor %}x") == "x"  # the clock is read every CLOCK_EVERY steps


def test_a_breach_is_not_a_bad_row_but_stops_the_load() -> None:
    from harness.plugins.loaders.generic.fields import RowError

    assert not issubclass(TemplateLimitError, RowError)


# ------------------------------------------------------------------------------------ people drawn from counts


def test_below_the_expansion_limit_the_draws_are_the_ones_of_the_list() -> None:
    """The original algorithm, by hand: the guesses in sorted order, a permutation, the first floor(N/2)."""
    counts = {"b": 2, "a": 3}
    a, b = split_halves(counts, np.random.default_rng(7))
    order = np.random.default_rng(7).permutation(5)
    guesses = ["a", "a", "a", "b", "b"]
    assert a == dict(sorted(Counter(guesses[i] for i in order[:2]).items()))
    assert b == dict(sorted(Counter(guesses[i] for i in order[2:]).items()))


def test_drawing_from_counts_is_a_split_without_replacement(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two a and two b split into halves of 2: half A holds one a with probability 4/6 (TVD 0 between the halves)
    and two or none with 1/6 each (TVD 1), so the mean TVD is 1/3 on either path."""
    counts = {"a": 2, "b": 2}
    for limit in (EXPAND_LIMIT, 0):  # the list, then the counts
        monkeypatch.setattr(distributions, "EXPAND_LIMIT", limit)
        rng = np.random.default_rng(1)
        splits = [split_halves(counts, rng) for _ in range(3000)]
        assert all(Counter(a) + Counter(b) == Counter(counts) and sum(a.values()) == 2 for a, b in splits)
        ones = sum(1 for a, _ in splits if a.get("a") == 1) / len(splits)
        assert ones == pytest.approx(4 / 6, abs=0.03), limit
        assert np.mean([counts_tvd(a, b) for a, b in splits]) == pytest.approx(1 / 3, abs=0.03), limit


def test_draw_from_counts_by_hand() -> None:
    rng = np.random.default_rng(0)
    assert draw_from_counts([5, 0, 3], 8, rng) == [5, 0, 3]  # everyone
    assert draw_from_counts([5, 0, 3], 0, rng) == [0, 0, 0]
    assert draw_from_counts([0, 4], 3, rng) == [0, 3]
    with pytest.raises(TooManyPeopleError, match="at most 999,999,999"):
        draw_from_counts([MAX_DRAWN, 1], 2, rng)


def test_half_a_billion_people_split_without_memory() -> None:
    """5e8 people said "a" and one "b". Half A has 250,000,000 people: if "b" is among them, A is 249,999,999 a and
    1 b against B's 250,000,000 a, TVD 1/250,000,000 = 4e-9; else A is 250,000,000 a against B's 250,000,000 a and
    1 b, TVD 1/250,000,001. Both happen, each about half the time."""
    counts = {"a": 500_000_000, "b": 1}
    tracemalloc.start()
    try:
        splits = [split_halves(counts, np.random.default_rng(seed)) for seed in range(40)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20  # a megabyte: no list of people
    tvds = set()
    for a, b in splits:
        assert sum(a.values()) == 250_000_000 and sum(b.values()) == 250_000_001
        tvds.add(counts_tvd(a, b))
    assert tvds == {1 / 250_000_000, 1 / 250_000_001}
    # A subsample and two disjoint groups, from the same counts.
    sub = subsample(counts, 10, np.random.default_rng(0))
    assert sum(sub.values()) == 10 and set(sub) <= {"a", "b"}
    first, second = disjoint_groups(counts, 3, np.random.default_rng(0))
    assert sum(first.values()) == sum(second.values()) == 3


def test_human_control_on_counts_of_a_billion() -> None:
    instance = ClozeInstance(id="p1", context="x", target="a", human_counts={"a": 600_000_000, "b": 2})
    scorer = HumanControlScorer(n_splits=3)
    scorer.prepare([instance], [None])
    row = scorer.score(instance, None, np.random.default_rng(5))
    assert row["half_sizes"] == [300_000_001, 300_000_001]
    # b in the same half: TVD 2/300000001; split one and one: both halves have 300,000,000 a and one b, TVD 0.
    assert set(row["tvd_human_halves"]) <= {0.0, 2 / 300_000_001}
    # A total no draw can take is refused before scoring anything, naming the instance.
    huge = ClozeInstance(id="p2", context="x", target="a", human_counts={"a": 10**15, "b": 1})
    with pytest.raises(TooManyPeopleError, match="instance 'p2' has 1,000,000,000,000,001 people"):
        scorer.prepare([instance, huge], [None, None])
    with pytest.raises(TooManyPeopleError, match="lists the people one by one"):
        HumanControlScorer(variant="paper").prepare([ClozeInstance(id="p3", human_counts={"a": 2_000_000})], [None])


def test_nothing_lists_more_than_the_expansion_limit() -> None:
    with pytest.raises(TooManyPeopleError):
        expand({"a": EXPAND_LIMIT + 1})
    with pytest.raises(TooManyPeopleError):
        expand_responses({"a": EXPAND_LIMIT, "b": 1})
    assert expand_responses({"b": 2, "a": 1}) == ["b", "b", "a"]

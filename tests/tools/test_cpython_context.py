"""CPython's own test modules run with every test under an identity plugin (issue 3, "What
must be shown", point 1): ``python -m splice.tools.cpython_tests --mode context,hooked``.
Each module runs natively, under a plugin that recurses everywhere (``context``) and under
one with no-op hooks on every call (``hooked``), in three subprocesses; the multisets of
(test id, outcome) must agree, except differences that ``EXPECTED`` explains (expected
limits, or known runtime bugs with their repros in test_context_findings.py).

CI runs a bounded subset (about 75 s of the two cores); the whole list is the README's
command, ``python -m splice.tools.cpython_tests --mode context,hooked``."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice.tools.cpython_tests import (
    CONTEXT_MODES,
    DEFAULT,
    EXPECTED,
    REASONS,
    Comparison,
    explained,
    run_many,
    run_one,
    stale_entries,
    verdict,
)

#: CPython's test modules under plugins: minutes (CI runs them on 3.11 only: .ci/run)
pytestmark = pytest.mark.slow

JOBS = 2
TIMEOUT = 240.0
#: the cheapest modules of DEFAULT under a plugin (identical in both modes) and some that
#: show expected limits and known bugs (test_tomllib, test_dis, test_gettext, test_copy,
#: test_abc, test_warnings)
SUBSET = [
    "test_colorsys", "test_copyreg", "test_bisect", "test_html", "test_linecache",
    "test_stat", "test_pulldom", "test_fractions", "test_string", "test_textwrap",
    "test_hmac", "test_shlex", "test_http_cookies", "test_sax", "test_htmlparser",
    "test_getopt", "test_heapq", "test_operator",
    "test_tomllib", "test_dis", "test_gettext", "test_copy", "test_abc", "test_warnings",
]


def _compare(test: str) -> list[Comparison]:
    # no second run decides: an intermittent divergence is a divergence
    return run_many([test], jobs=JOBS, timeout=TIMEOUT, modes=CONTEXT_MODES)


def test_subset_is_part_of_the_default_list() -> None:
    assert set(SUBSET) <= set(DEFAULT)
    assert len(SUBSET) >= 20


def test_expected_differences_are_well_formed() -> None:
    for modes, test, _, reason in EXPECTED:
        assert set(modes) <= {*CONTEXT_MODES, "oracle", "rebuilt"}
        assert test in DEFAULT, test
        assert reason in REASONS
    assert {r.kind for r in REASONS.values()} <= {"limit", "bug"}  # no known bug left: fine


@pytest.mark.parametrize("test", SUBSET)
def test_cpython_module_under_plugin(test: str) -> None:
    for c in _compare(test):
        assert c.native.status == "ran", c.native.detail
        assert c.native.tests_run > 0
        if c.other.status == "ran":
            # the test bodies themselves ran transformed, or the comparison is vacuous
            assert c.other.explain["entered"].get("tests", 0) > 0, c.other.explain
        unexplained = [tid for tid, found in explained(c).items() if found is None]
        assert verdict(c) != "NO", (c.mode, unexplained, c.differences())
        assert stale_entries(c) == [], "a known difference is gone: remove its entry"


def test_harness_sees_a_divergence_under_a_plugin() -> None:
    """A plugin that intercepts ``textwrap.dedent`` (called by test_textwrap's test methods)
    and changes its result must make test_textwrap's outcomes differ: the test bodies'
    calls really go through the plugin."""
    sabotage = f"{Path(__file__).with_name('sabotage_plugin.py')}:DedentPlugin"
    native = run_one("test_textwrap", "native", timeout=TIMEOUT)
    broken = run_one("test_textwrap", "context", timeout=TIMEOUT, plugin=sabotage)
    c = Comparison("test_textwrap", native, broken)
    assert broken.status == "ran" and broken.entered() > 0
    assert verdict(c) == "NO"
    assert any("dedent" in tid.lower() and found is None
               for tid, found in explained(c).items())

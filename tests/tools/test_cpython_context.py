"""CPython's own test modules run with every test under an identity plugin (issue 3, "What
must be shown", point 1): ``python -m splice.tools.cpython_tests --mode context,hooked``.
Each module runs natively, under a plugin that recurses everywhere (``context``) and under
one with no-op hooks on every call (``hooked``), in three subprocesses; the multisets of
(test id, outcome) must agree, except differences that ``EXPECTED`` explains (expected
limits, or known runtime bugs with their repros in test_context_findings.py).

CI runs a bounded subset (about 75 s of the two cores); the whole list is the README's
command, ``python -m splice.tools.cpython_tests --mode context,hooked``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
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
#: the cheapest modules of DEFAULT under a plugin (identical in both modes), two whose
#: differences are entries of EXPECTED (test_tomllib, test_dis: every id they name must
#: still differ), and test_gettext, test_copy, test_abc and test_warnings, identical now
#: (the first, second and last had entries of EXPECTED until their causes were fixed)
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


#: a test's id (dotted names; a doctest's is its object's, ``typing._collect_parameters``),
#: or a subtest's: the test's id, then unittest's description of the subtest, ``[msg]``
#: and/or ``(params)``
_TEST_ID = re.compile(r"(?P<test>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)"
                      r"(?: (?:\[[^\]]*\](?: \(.*\))?|\(.*\)))?")


_LIST_IDS = """
import json, sys, unittest

def ids(tests):
    for test in tests:
        if isinstance(test, unittest.TestSuite):
            yield from ids(test)
        else:
            yield test.id()

loaded = __import__("test." + sys.argv[1], fromlist=["_"])
print(json.dumps(sorted(ids(unittest.defaultTestLoader.loadTestsFromModule(loaded)))))
"""


def _test_ids(module: str) -> set[str]:
    """The ids of the tests of CPython's ``test.<module>``, loaded as the tool loads them,
    in a fresh interpreter: in this one an earlier test may have changed the standard
    library's modules (a doctest a module's ``load_tests`` adds, such as test_typing's of
    ``typing._collect_parameters``, is found only while its function is the original)."""
    done = subprocess.run([sys.executable, "-c", _LIST_IDS, module], capture_output=True,
                          text=True, timeout=300, check=True)
    return set(json.loads(done.stdout))


def test_expected_entries_name_exact_test_ids() -> None:
    """Each entry of EXPECTED names the tests it excuses (issue 14): a tuple of exact ids of
    tests, or of subtests, that this Python's test module has, each named by one entry
    per mode; no pattern, wildcard or prefix standing for several."""
    ids_of: dict[str, set[str]] = {}
    named: set[tuple[str, str, str]] = set()
    for modes, test, tids, _ in EXPECTED:
        assert isinstance(tids, tuple) and tids, (test, tids)
        if test not in ids_of:
            ids_of[test] = _test_ids(test)
        for tid in tids:
            assert isinstance(tid, str), tid
            if tid != "<module>":
                found = _TEST_ID.fullmatch(tid)
                assert found, f"{test}: {tid!r} is not a test id"
                assert found["test"] in ids_of[test], f"{test} has no test {found['test']!r}"
            for mode in modes:
                assert (mode, test, tid) not in named, f"{mode} {tid} named twice"
                named.add((mode, test, tid))


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

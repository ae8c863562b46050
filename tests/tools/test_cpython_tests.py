"""CPython's own test modules, natively and with the module under test rebuilt through the
round trip: the multisets of (test id, outcome) must be identical. Each test module is one
test id, whose native and rebuilt runs go in two parallel subprocesses."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice.tools.cpython_tests import DEFAULT, Comparison, run_many, run_one

#: CPython's test modules natively and round-tripped, minutes: CI runs them on 3.11 only
#: (.ci/run)
pytestmark = pytest.mark.slow

JOBS = 2
TIMEOUT = 240.0
#: the issue's list, also run in literal mode (renest=False: every temporary a hidden local)
LITERAL = DEFAULT[:18]
#: literal-mode divergences found (see .notes/corpus-findings.md): strict xfails, so a fix
#: shows up and the mark must go
LITERAL_KNOWN: dict[str, str] = {}


def _compare(test: str, *, renest: bool = True) -> Comparison:
    """``test`` natively and rebuilt, the two runs in parallel. Each test id runs its own
    pair, so pytest-xdist can spread them (a shared fixture would run everything in every
    worker)."""
    (comparison,) = run_many([test], jobs=JOBS, timeout=TIMEOUT, renest=renest)
    # no second run decides: an intermittent divergence is a divergence
    return comparison


def test_enough_modules() -> None:
    assert len(DEFAULT) >= 15


def check(c: Comparison) -> None:
    assert c.native.status == "ran", c.native.detail
    assert c.rebuilt.status == "ran", c.rebuilt.detail
    assert c.native.tests_run > 0
    assert c.rebuilt.replaced() > 0, "nothing was rebuilt: the comparison would be vacuous"
    assert c.rebuilt.failed() == []  # no internal error while rebuilding
    assert c.differences() == []
    assert c.identical


@pytest.mark.parametrize("test", DEFAULT)
def test_cpython_module(test: str) -> None:
    check(_compare(test))


@pytest.mark.parametrize("test", [
    pytest.param(t, marks=pytest.mark.xfail(reason=LITERAL_KNOWN[t], strict=True))
    if t in LITERAL_KNOWN else t for t in LITERAL])
def test_cpython_module_literal(test: str) -> None:
    check(_compare(test, renest=False))


def test_harness_sees_a_divergence() -> None:
    """A stand-in round trip that changes the string constants of one textwrap method must
    make test_textwrap's outcomes differ."""
    sabotage = f"{Path(__file__).with_name('sabotage.py')}:roundtrip"
    native = run_one("test_textwrap", "native", timeout=TIMEOUT)
    broken = run_one("test_textwrap", "rebuilt", timeout=TIMEOUT, roundtrip=sabotage)
    c = Comparison("test_textwrap", native, broken)
    assert broken.status == "ran" and broken.replaced() > 0
    assert not c.identical
    assert broken.counts()["fail"] + broken.counts()["error"] > 0
    assert any("native ['pass']" in d for d in c.differences())

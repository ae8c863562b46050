"""Shared fixtures. ``mode``: every differential case runs with the round trip in both code
generation modes, ``renest`` (temporaries folded back: the production mode) and ``literal``
(``renest=False``: every temporary a hidden local, which tests lowering alone)."""

from __future__ import annotations

import os

import pytest

# The code cache on disk stays off for the suite (subprocesses inherit it): a test's result
# must not depend on what an earlier test or run wrote. The cache's own tests turn it on,
# each in a folder of its own (tests/cache/test_disk_cache.py).
os.environ["SPLICE_CACHE"] = "0"

pytest.register_assert_rewrite("tests.differential")


@pytest.fixture(params=["renest", "literal", "context", "hooked"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A differential case known to diverge in one mode (``@case(xfail_literal=...)``) is a
    strict xfail in that mode only."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            continue
        case, mode = callspec.params.get("case"), callspec.params.get("mode")
        reason = getattr(case, "xfail", {}).get(mode) if mode else None
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))

"""Shared configuration of the tools tests: ``slow`` tests (the whole standard library
corpus, about 40 s) are skipped unless selected with ``-m slow`` or ``SPLICE_SLOW=1``."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    markexpr = str(config.getoption("markexpr", "") or "")
    if os.environ.get("SPLICE_SLOW") == "1" or ("slow" in markexpr
                                                 and "not slow" not in markexpr):
        return
    skip = pytest.mark.skip(reason="slow: select with -m slow or SPLICE_SLOW=1")
    for item in items:
        if "slow" in item.keywords and str(item.path).startswith(os.path.dirname(__file__)):
            item.add_marker(skip)

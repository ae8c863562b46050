"""Differential tests (native vs round-tripped and under plugins): implicit calls through
attributes, async for, chained comparisons and class statements."""

from __future__ import annotations

import pytest

from tests import differential as d
from tests.ir.cases import rt_implicit as cases


@pytest.mark.parametrize("case", d.collect(cases), ids=lambda c: c.id)
def test_roundtrip(case: d.Case, mode: str) -> None:
    d.check(case, mode)

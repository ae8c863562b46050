"""The optimisation stage: literal folding (never of an operation that raises or grows
large), and reads of definitions never removed; differential against native runs."""

from __future__ import annotations

import math
from typing import Any

import pytest

import splice
from splice.ir.nodes import Assign, BinOp, FunctionIR, GetAttr
from splice.ir.tools import walk
from splice.ir.typed_tools import match_calls


def folds(x):  # type: ignore[no-untyped-def]
    return x + 2 * 3 - (4 ** 2)


def raises(x):  # type: ignore[no-untyped-def]
    if x:
        return 1 / 0
    return x < 10 ** 100000


def ops(ir: FunctionIR, kind: type) -> list[Any]:
    return [s.op for s in walk(ir) if isinstance(s, Assign) and isinstance(s.op, kind)]


def test_literal_operations_are_folded() -> None:
    ci = splice.compile(None, folds, int)
    assert len(ops(ci.optimized, BinOp)) < len(ops(ci.typed, BinOp))
    assert any("folded" in line for line in ci.optimizations)
    assert splice.invoke(ci, 5) == folds(5)


def test_raising_or_huge_operations_are_not_folded() -> None:
    ci = splice.compile(None, raises, int)
    assert not any("folded" in line for line in ci.optimizations)
    assert splice.invoke(ci, 0) is raises(0)
    with pytest.raises(ZeroDivisionError):
        splice.invoke(ci, 1)


class _Drop(splice.Plugin):
    """Replaces math.floor(x) by a constant function: the read of math.floor is dead."""

    def typed(self, ir: FunctionIR) -> None:
        for call in match_calls(ir, math.floor, float):
            call.callee = _seven


def _seven(x):  # type: ignore[no-untyped-def]
    return 7


class Box:
    floor = staticmethod(math.ceil)


def reads(x):  # type: ignore[no-untyped-def]
    return math.floor(x) + Box.floor(x)


def test_reads_a_replacement_made_unused_are_kept_for_its_check() -> None:
    """The read of ``math.floor`` is no longer what the rewritten call calls, but it is
    never removed: the replacement's use-site check compares it with ``math.floor`` (and a
    callee deleting it while the instance runs must make the read raise, as natively)."""
    ci = splice.compile(_Drop(), reads, float)
    names = [op.name for op in ops(ci.optimized, GetAttr)]
    assert names.count("floor") == 2  # math.floor and Box.floor
    assert not any("removed" in line for line in ci.optimizations)
    assert any("checked where it is called" in line for line in ci.optimizations)
    assert splice.invoke(ci, 2.5) == 7 + 3

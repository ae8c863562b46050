"""Type-aware IR tools: querying a value's type and matching calls by callee and types."""

from __future__ import annotations

import math

import splice
from splice.infer.lattice import ANY, Const, Exact
from splice.ir.nodes import Const as ConstOperand
from splice.ir.nodes import Temp, Var
from splice.ir.typed_tools import match_calls, type_of, typed_calls


def mixed(x, y):  # type: ignore[no-untyped-def]
    a = math.sin(x)
    b = math.sin(y)
    return math.hypot(a, b)


def test_type_of_operands() -> None:
    temp = Temp(1)
    assert type_of(temp) is ANY
    temp.annotation = Exact(float)
    assert type_of(temp) == Exact(float)
    assert type_of(ConstOperand(2)) == Const(2)
    assert type_of(Var("x")) is ANY


def test_match_calls_by_callee_and_argument_types() -> None:
    ci = splice.compile(None, mixed, float, int | float)
    ir = ci.typed
    sins = [c for c in typed_calls(ir) if c.callee is math.sin]
    assert len(sins) == 2
    assert [str(c.arg_types[0]) for c in sins][0] == "float"
    matched = match_calls(ir, math.sin, float)
    assert [c.stmt for c in matched] == [sins[0].stmt]
    assert match_calls(ir, math.sin, int | float) and len(match_calls(ir, math.sin, object)) == 2
    assert match_calls(ir, math.hypot, float, float)
    assert match_calls(ir, math.cos, float) == []
    assert sins[0].result_type <= float

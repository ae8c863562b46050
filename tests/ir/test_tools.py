"""The compiler tools: rewriting IR and running the result against native code."""

from __future__ import annotations

import functools
import math
import operator

import pytest

import splice
from splice.ir import compile_ir, lower, verify
from splice.ir.nodes import Assign, Call, Const, Copy, FunctionIR, Handler, Store, Try
from splice.ir.tools import (
    Builder,
    calls,
    definitions,
    find_calls,
    insert_after,
    insert_before,
    local_names,
    locations,
    remove,
    replace_uses,
    scopes,
    uses,
    walk,
)

LOG: list[object] = []


def fast_sin(x: float) -> float:
    return x - x**3 / 6


def simulate(n: int) -> float:
    total = 0.0
    for i in range(n):
        total += math.sin(i / n)
    return total


def nested(xs: list[int]) -> list[int]:
    def inner(y: int) -> int:
        return abs(y) + 1

    return [inner(x) for x in xs if x]


def test_find_calls_by_object_and_path() -> None:
    ir = lower(simulate)
    sites = find_calls(ir, math.sin)
    assert len(sites) == 1
    assert sites[0].callee_path == "math.sin"
    assert find_calls(ir, path="range")[0].callee is range
    assert {s.callee_path for s in calls(ir)} == {"range", "math.sin"}


def test_replacing_the_callee_changes_only_that_call() -> None:
    ir = lower(simulate)
    for site in ir.calls():
        if site.callee is math.sin:
            site.callee = fast_sin
    verify(ir)
    rewritten = compile_ir(ir, simulate)
    assert rewritten(50) == pytest.approx(sum(fast_sin(i / 50) for i in range(50)))
    assert rewritten(50) != simulate(50)
    # original untouched (added up in order: from 3.12 ``sum`` of floats compensates
    # rounding, Neumaier summation)
    assert simulate(50) == functools.reduce(operator.add, (math.sin(i / 50) for i in range(50)),
                                            0.0)


def test_builder_inserts_calls_before_and_after() -> None:
    ir = lower(simulate)
    site = find_calls(ir, math.sin)[0]
    before = Builder(ir, at=site.stmt)
    before.call(LOG.append, Const("before"))
    insert_before(ir, site.stmt, before.stmts)
    after = Builder(ir, at=site.stmt)
    assert site.result is not None
    after.call(LOG.append, site.result)
    insert_after(ir, site.stmt, after.stmts)
    verify(ir)
    LOG.clear()
    value = compile_ir(ir, simulate)(3)
    assert value == simulate(3)
    assert ["before", math.sin(0), "before", math.sin(1 / 3), "before", math.sin(2 / 3)] == LOG
    assert "@" in splice.ir.generate(ir)  # the inserted objects travel as closure cells


def test_remove_and_replace_uses() -> None:
    def f(a: int) -> int:
        b = a + 1
        print("unused")
        return b

    ir = lower(f)
    printing = find_calls(ir, print)[0]
    remove(ir, printing.stmt)
    store = next(s for s in walk(ir) if isinstance(s, Store))
    assert replace_uses(ir, store.value, Const(41)) == 1
    verify(ir)
    assert compile_ir(ir, f)(0) == 41


def test_definitions_uses_and_scopes() -> None:
    ir = lower(nested)
    defs = definitions(ir)
    for temp, stmt in defs.items():
        assert temp in stmt.results
        assert uses(ir, temp), f"{temp} is defined but never used"
    names = [s.qualname for s in scopes(ir)]
    assert names[0].endswith("nested")
    assert any(n.endswith("<listcomp>") for n in names)
    assert any(n.endswith("inner") for n in names)
    assert {"xs", "inner"} <= local_names(ir)


def test_resolution_does_not_run_user_code() -> None:
    class Tricky:
        def __getattr__(self, name: str) -> object:
            LOG.append(("getattr", name))
            return print

    tricky = Tricky()

    def f() -> None:
        tricky.anything()

    LOG.clear()
    site = calls(lower(f))[0]
    assert site.callee is None
    assert LOG == []


def test_copy_is_independent() -> None:
    ir = lower(simulate)
    copy = ir.copy()
    find_calls(copy, math.sin)[0].callee = fast_sin
    assert find_calls(ir, math.sin), "rewriting the copy changed the original"
    assert compile_ir(ir, simulate)(10) == simulate(10)


class Tally:
    """A stateful callable; picklable, so a copy made by pickling would count apart."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args: object) -> None:
        self.calls += 1


def _constants(ir: FunctionIR) -> list[Const]:
    return [o for scope in scopes(ir) for s in walk(scope) for o in s.operands()
            if isinstance(o, Const)]


def test_copy_shares_constants_callees_and_annotations() -> None:
    ir = lower(simulate)
    site = find_calls(ir, math.sin)[0]
    tally, marker = Tally(), Tally()
    b = Builder(ir, at=site.stmt)
    b.call(tally, Const(2.5), Const((1, "one")))
    insert_before(ir, site.stmt, b.stmts)
    site.op.callee = tally  # as inference resolves it
    assert site.result is not None
    site.result.annotation = marker
    copy = ir.copy()
    # constants (and so their values), callees and annotations are the same objects...
    before, after = _constants(ir), _constants(copy)
    assert len(after) == len(before) and any(c.value is tally for c in after)
    assert all(a.value is b.value for a, b in zip(before, after, strict=True))
    twin = find_calls(copy, math.sin)[0]
    assert twin.op.callee is tally
    assert twin.result is not None and twin.result.annotation is marker
    assert copy.origin is ir.origin and copy.function is ir.function
    # ...the structure is not
    assert twin.stmt is not site.stmt and twin.result is not site.result
    assert compile_ir(copy, simulate)(4) == simulate(4)
    assert tally.calls == 4


def test_verify_rejects_a_use_before_definition() -> None:
    ir = lower(simulate)
    site = find_calls(ir, math.sin)[0]
    stray = ir.new_temp()
    site.op.args = [stray]
    with pytest.raises(splice.ir.VerifyError, match="used before it is defined"):
        verify(ir)


def _wrapped_in_try(handlers: bool) -> FunctionIR:
    """``simulate``'s IR with its first call statement wrapped in a ``try`` (whose result
    is used after it), with an ``except`` clause or only a ``finally``."""
    ir = lower(simulate)
    site = find_calls(ir, math.sin)[0]
    stmt, block = site.stmt, next(loc.block for loc in locations(ir) if loc.stmt is site.stmt)
    pos = stmt.pos
    final = [Assign((ir.new_temp(),), Copy(Const(None, pos)), pos)]
    handler = [Handler(None, None, [Assign((ir.new_temp(),), Copy(Const(None, pos)), pos)],
                       pos)] if handlers else []
    block[block.index(stmt)] = Try([stmt], handler, [], final, False, pos)
    return ir


def test_verify_follows_a_try_without_handlers() -> None:
    verify(_wrapped_in_try(handlers=False))  # the body ran to the end: its result exists
    with pytest.raises(splice.ir.VerifyError, match="used before it is defined"):
        verify(_wrapped_in_try(handlers=True))  # a handler may have fallen through


def test_verify_rejects_a_statement_twice() -> None:
    ir = lower(simulate)
    stmt = next(s for s in walk(ir) if isinstance(s, Assign) and isinstance(s.op, Call))
    ir.body.append(stmt)
    with pytest.raises(splice.ir.VerifyError, match="appears twice"):
        verify(ir)

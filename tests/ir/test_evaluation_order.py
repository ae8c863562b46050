"""The IR keeps CPython's evaluation order itself: a pass that inserts statements between
those lowering made cannot change what the program does.

Every case of ``tests/ir/cases/evaluation_order.py`` runs natively, round tripped in every
mode, and rewritten the way plugins rewrite (``splice.ir.tools.insert_before``): a harmless
recorded call before one call at a time, or before every statement (in lazily evaluated
regions too), compiled with and without re-nesting. The inserted call keeps the statements
around it from folding back into one expression, so what the generated code does is what
the IR says; its events left out, the rewritten function must record exactly the native
events and give the same result (or exception)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from splice.compat import JUMP_THREADING
from splice.ir import compile_ir, lower, verify
from splice.ir.nodes import (
    Assign,
    BoolOp,
    Call,
    Const,
    FunctionIR,
    Splat,
    Starred,
    Stmt,
    Temp,
)
from splice.ir.tools import Builder, calls, insert_after, insert_before, locations, walk
from tests import differential as d
from tests.ir.cases import evaluation_order as cases

CASES = d.collect(cases)
INSERTED = "inserted"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_roundtrip(case: d.Case, mode: str) -> None:
    d.check(case, mode)


def _harmless(ir: FunctionIR, at: Stmt) -> list[Stmt]:
    builder = Builder(ir, at=at)
    builder.call(d.log, Const(INSERTED))
    return builder.stmts


def before_each_call(fn: Callable[..., object]) -> Iterator[tuple[str, FunctionIR]]:
    """One rewrite per call statement of the function (not of nested scopes)."""
    for index in range(len(calls(lower(fn)))):
        ir = lower(fn)
        site = calls(ir)[index]
        insert_before(ir, site.stmt, _harmless(ir, site.stmt))
        yield f"before call {index} (line {site.stmt.pos.lineno})", ir


def before_every_statement(fn: Callable[..., object]) -> Iterator[tuple[str, FunctionIR]]:
    ir = lower(fn)
    for loc in list(locations(ir)):
        insert_before(ir, loc.stmt, _harmless(ir, loc.stmt))
    yield "before every statement", ir


def _without_inserted(observed: object) -> object:
    # (statements inserted between a value's last use and its statement's end keep it in
    # a hidden local: deaths are not what this test compares)
    outcome, events = observed  # type: ignore[misc]
    return outcome, [e for e in events if e != d.describe(INSERTED)]


@pytest.mark.parametrize("renest", [True, False], ids=["renest", "literal"])
@pytest.mark.parametrize("rewrite", [before_each_call, before_every_statement],
                         ids=lambda r: r.__name__)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_inserted_call_keeps_native_order(case: d.Case, rewrite: Callable[..., Iterator[
        tuple[str, FunctionIR]]], renest: bool) -> None:
    native = d.observe(case, case.fn, deaths=False)
    assert d.observe(case, case.fn, deaths=False) == native, \
        "the case is not deterministic natively"
    ran = 0
    for where, ir in rewrite(case.fn):
        verify(ir)
        rewritten = compile_ir(ir, case.fn, renest=renest)
        observed = d.observe(case, rewritten, deaths=False)
        # (a call in a lazily evaluated region may not run)
        ran += d.describe(INSERTED) in observed[1]  # type: ignore[index]
        assert _without_inserted(observed) == native, where
    assert ran, "no inserted call ran"


def test_the_inserted_call_separates_the_keyword_from_the_iteration() -> None:
    """The issue's example: native ``['k', 'iter']``; the rewrite must not iterate first."""
    d.log.clear()
    cases.lone_star_keyword()
    native = d.log.take()
    (where, ir), = list(before_each_call(cases.lone_star_keyword))[-1:]
    compile_ir(ir, cases.lone_star_keyword, renest=True)()
    events = d.log.take()
    assert events.index(d.describe("k")) < events.index(d.describe(INSERTED)) < events.index(
        d.describe(("iter-of-iterator", "x"))), where
    assert [e for e in events if e != d.describe(INSERTED)] == native


def _events(ir: FunctionIR, fn: Callable[..., object], renest: bool) -> list[object]:
    verify(ir)
    d.log.clear()
    compile_ir(ir, fn, renest=renest)()
    return d.log.take()


def _lone_star_call(ir: FunctionIR) -> tuple[Stmt, Call, Temp]:
    site = calls(ir)[-1]
    star = site.op.args[0]
    assert isinstance(star, Starred) and isinstance(star.value, Temp), str(ir)
    return site.stmt, site.op, star.value


def test_codegen_keeps_a_splat_made_by_a_pass_in_place() -> None:
    """A pass that iterates the lone ``*x`` first (a ``splat`` right after ``x``) gets that
    order: codegen does not fold the ``splat`` into ``f(*x, k=g())``, where CPython would
    iterate it after ``g()``."""
    ir = lower(cases.lone_star_keyword)
    _, op, iterable = _lone_star_call(ir)
    splat = ir.new_temp()
    at = next(s for s in walk(ir) if isinstance(s, Assign) and s.results == (iterable,))
    insert_after(ir, at, [Assign((splat,), Splat(iterable), at.pos)])
    op.args = [Starred(splat)]
    literal = _events(ir, cases.lone_star_keyword, renest=False)
    assert literal.index(d.describe(("iter-of-iterator", "x"))) < literal.index(
        d.describe("k"))
    assert _events(ir, cases.lone_star_keyword, renest=True) == literal


def test_codegen_iterates_a_star_that_is_no_longer_lone_in_place() -> None:
    """An argument put before a lone ``*x`` (as the call-site routing puts a method's
    receiver) makes Python iterate ``x`` in place: the keyword computed before the call is
    not folded in after it."""
    ir = lower(cases.lone_star_keyword)
    _, op, _ = _lone_star_call(ir)
    op.args.insert(0, Const("first"))
    literal = _events(ir, cases.lone_star_keyword, renest=False)
    assert literal.index(d.describe("k")) < literal.index(
        d.describe(("iter-of-iterator", "x")))
    assert _events(ir, cases.lone_star_keyword, renest=True) == literal


def test_lowering_marks_only_what_cpython_threads() -> None:
    def f(a: object, b: object, c: object) -> tuple[object, ...]:
        x = (a or b) and c
        y = (
            a or b) and c
        z = ((a or b) if c else a) and b
        if (a or b) and c:
            pass
        return x, y, z

    threaded = [s.pos.lineno - f.__code__.co_firstlineno for s in walk(lower(f))
                if isinstance(s, Assign) and isinstance(s.op, BoolOp) and s.op.threaded]
    assert threaded == ([1] if JUMP_THREADING else [])


def _or_in_and(a: object, b: object, c: object) -> tuple[object, object]:
    return (a or b) and c, (
        a or b) and c


@pytest.mark.parametrize("flag", [False, True])
def test_codegen_follows_the_threaded_flag_a_pass_sets(flag: bool) -> None:
    """Whatever ``threaded`` says (a pass may build or change the ops), both modes test the
    deciding value as often as the IR says: the folded expression only where CPython
    threads alike."""
    ir = lower(_or_in_and)
    inner = [s.op for s in walk(ir) if isinstance(s, Assign) and isinstance(s.op, BoolOp)
             and not isinstance(s.op.first, Temp)]
    assert len(inner) == 2
    for op in inner:
        op.threaded = flag
    runs = []
    for renest in (True, False):
        d.log.clear()
        compile_ir(ir, _or_in_and, renest=renest)(d.R("a"), d.R("b"), d.R("c"))
        runs.append(d.log.take())
    tests_of_a = 2 * (1 if flag else 2)
    assert runs[0] == runs[1]
    assert runs[0].count(d.describe(("bool", "a"))) == tests_of_a

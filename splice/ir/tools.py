"""Compiler tools: reading and rewriting IR, for plugin authors.

Walk a function's statements, find calls and what they call, replace operations, insert and
remove statements, and build new ones::

    ir = splice.ir.lower(simulate)
    for site in find_calls(ir, math.sin):          # every call whose callee is math.sin
        site.callee = fast_sin                     # now calls fast_sin (a constant)
    b = Builder(ir, at=site.stmt)
    t = b.call(print, Const("calling sin"))        # %n = call print("calling sin")
    insert_before(ir, site.stmt, b.stmts)
    verify(ir)
    fast = compile_ir(ir, simulate)                # a new function object

Rewrites keep the IR's invariants if each new operand is a ``Temp`` defined earlier on the
same path, a ``Var`` or a ``Const``; ``splice.ir.verify`` checks that.

The reading that ``FunctionIR.calls()`` itself needs (``Location``, ``locations``,
``definitions``, ``local_names``, ``CallSite``, ``calls``, ``dotted_path``, ``resolve``) is
written in ``splice.ir.nodes``, so that the nodes import nothing above them; this module is
where a plugin author imports it from, with the rest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from splice.ir.nodes import (
    Assign,
    Call,
    CallSite,
    Const,
    For,
    FunctionIR,
    GetAttr,
    Keyword,
    Load,
    Location,
    Op,
    Operand,
    Pos,
    Stmt,
    Store,
    Temp,
    Var,
    With,
    calls,
    definitions,
    dotted_path,
    local_names,
    locations,
    resolve,
)
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Builder", "CallSite", "Location", "calls", "definitions", "dotted_path",
           "find", "find_calls", "insert_after", "insert_before", "local_names",
           "locations", "loop_targets", "redefined", "remove", "replace_op", "replace_uses",
           "resolve", "scopes", "use_counts", "uses", "walk"]

# ---------------------------------------------------------------------------------- walking


def walk(ir: FunctionIR) -> Iterator[Stmt]:
    """Every statement of ``ir`` (see :func:`locations`)."""
    return (loc.stmt for loc in locations(ir))


def scopes(ir: FunctionIR) -> Iterator[FunctionIR]:
    """``ir`` and every scope nested in it (functions, lambdas, classes, comprehensions)."""
    yield ir
    for stmt in walk(ir):
        inner = getattr(stmt, "fn", None)
        if isinstance(stmt, Assign):
            inner = getattr(stmt.op, "fn", None)
        if isinstance(inner, FunctionIR):
            yield from scopes(inner)


def redefined(ir: FunctionIR) -> set[Temp]:
    """The temps of ``ir`` assigned by more than one statement."""
    assigned: set[Temp] = set()
    found: set[Temp] = set()
    for stmt in walk(ir):
        if isinstance(stmt, Assign):
            for result in stmt.results:
                if result in assigned:
                    found.add(result)
                assigned.add(result)
    return found


def use_counts(ir: FunctionIR) -> dict[Temp, int]:
    """How many times each temp of ``ir`` is used (as an operand or a region's value)."""
    counts: dict[Temp, int] = {}
    for stmt in walk(ir):
        for operand in stmt.operands():
            if isinstance(operand, Temp):
                counts[operand] = counts.get(operand, 0) + 1
        for region in stmt.regions():
            if isinstance(region.value, Temp):
                counts[region.value] = counts.get(region.value, 0) + 1
    return counts


def uses(ir: FunctionIR, temp: Temp) -> list[Stmt]:
    """The statements that use ``temp`` as an operand (or as a region's value)."""
    found = []
    for stmt in walk(ir):
        if any(o is temp for o in stmt.operands()) or any(
                r.value is temp for r in stmt.regions()):
            found.append(stmt)
    return found


# ----------------------------------------------------------------------------------- calls


def find_calls(ir: FunctionIR, callee: Any = None, *, path: str | None = None
               ) -> list[CallSite]:
    """Calls whose callee is ``callee`` (by identity, resolved as ``CallSite.callee``)
    and/or whose source path is ``path`` (``"math.sin"``)."""
    found = []
    for site in calls(ir):
        if callee is not None and site.callee is not callee:
            continue
        if path is not None and site.callee_path != path:
            continue
        found.append(site)
    return found


# ------------------------------------------------------------------------------- rewriting


def find(ir: FunctionIR, stmt: Stmt) -> Location:
    """The location of ``stmt`` in ``ir`` (``ValueError`` if it is not there)."""
    for loc in locations(ir):
        if loc.stmt is stmt:
            return loc
    raise ValueError(f"statement {stmt!r} is not in {ir.qualname}")


def insert_before(ir: FunctionIR, stmt: Stmt, new: list[Stmt]) -> None:
    """Insert ``new`` statements right before ``stmt`` (in the same block)."""
    loc = find(ir, stmt)
    loc.block[loc.index:loc.index] = new


def insert_after(ir: FunctionIR, stmt: Stmt, new: list[Stmt]) -> None:
    """Insert ``new`` statements right after ``stmt`` (in the same block)."""
    loc = find(ir, stmt)
    loc.block[loc.index + 1:loc.index + 1] = new


def remove(ir: FunctionIR, stmt: Stmt) -> None:
    """Remove ``stmt``; its results must not be used any more."""
    loc = find(ir, stmt)
    del loc.block[loc.index]


def replace_op(stmt: Assign, op: Op) -> Op:
    """Make ``stmt`` compute ``op`` instead; returns the old op."""
    old, stmt.op = stmt.op, op
    return old


def replace_uses(ir: FunctionIR, old: Operand, new: Operand) -> int:
    """Replace every use of ``old`` by ``new``; returns how many were replaced."""
    count = 0

    def swap(operand: Operand) -> Operand:
        nonlocal count
        if operand is old or (not isinstance(old, Temp) and operand == old):
            count += 1
            return new
        return operand

    for stmt in walk(ir):
        if isinstance(stmt, Assign):
            stmt.op.map_operands(swap)
        for name in ("value", "test", "iterator", "manager", "subject", "exc", "cause"):
            current = getattr(stmt, name, None)
            if isinstance(current, (Temp, Var, Const)):
                setattr(stmt, name, swap(current))
        for region in stmt.regions():
            region.value = swap(region.value)
    return count


class Builder:
    """Builds new statements for ``ir`` at a source position (that of ``at``, by default
    the function's); the statements collect in ``stmts`` for ``insert_before``/``after``::

        b = Builder(ir, at=stmt)
        t = b.call(Const(print), Const("hello"))
        insert_before(ir, stmt, b.stmts)
    """

    def __init__(self, ir: FunctionIR, at: Stmt | None = None, pos: Pos | None = None) -> None:
        self.ir = ir
        self.pos = pos or (at.pos if at is not None else ir.pos)
        self.stmts: list[Stmt] = []

    def emit(self, op: Op, result: bool = True) -> Temp | None:
        """Append ``%n = op`` (or just ``op`` when ``result`` is false)."""
        temp = self.ir.new_temp() if result else None
        self.stmts.append(Assign((temp,) if temp else (), op, self.pos))
        return temp

    def call(self, func: Operand | Any, *args: Operand | Any, **kwargs: Operand | Any) -> Temp:
        """``%n = call func(args..., **kwargs)``; non-operand values become constants."""
        op = Call(self.operand(func), [self.operand(a) for a in args],
                  [Keyword(k, self.operand(v)) for k, v in kwargs.items()])
        temp = self.emit(op)
        assert temp is not None
        return temp

    def getattr(self, obj: Operand | Any, name: str) -> Temp:
        temp = self.emit(GetAttr(self.operand(obj), name))
        assert temp is not None
        return temp

    def load(self, name: str) -> Temp:
        temp = self.emit(Load(Var(name, self.pos)))
        assert temp is not None
        return temp

    def store(self, name: str, value: Operand | Any) -> None:
        self.stmts.append(Store(Var(name, self.pos), self.operand(value), self.pos))

    def operand(self, value: Operand | Any) -> Operand:
        if isinstance(value, (Temp, Var, Const)):
            return value
        return Const(value, self.pos)


def loop_targets(ir: FunctionIR) -> dict[Temp, For | With]:
    """Temps bound by ``for`` loops and ``with ... as`` (not by ``Assign``)."""
    found: dict[Temp, For | With] = {}
    for stmt in walk(ir):
        if isinstance(stmt, (For, With)) and stmt.target is not None:
            found[stmt.target] = stmt
    return found

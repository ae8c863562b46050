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
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from splice.ir.nodes import (
    Assign,
    Call,
    Const,
    DeleteVar,
    For,
    FunctionDef,
    FunctionIR,
    GetAttr,
    Import,
    ImportFrom,
    Keyword,
    Load,
    Op,
    Operand,
    Pos,
    Starred,
    Stmt,
    Store,
    Temp,
    TypeAlias,
    Var,
    Walrus,
    With,
)
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

# ---------------------------------------------------------------------------------- walking


@dataclass(frozen=True, slots=True)
class Location:
    """Where a statement is: the list holding it and its index there."""

    stmt: Stmt
    block: list[Stmt]
    index: int


def locations(ir: FunctionIR) -> Iterator[Location]:
    """Every statement of ``ir`` (nested blocks and lazily evaluated regions included, nested
    scopes excluded) with the block that holds it, in source order."""
    def block(stmts: list[Stmt]) -> Iterator[Location]:
        for index, stmt in enumerate(stmts):
            for region in stmt.regions():
                yield from block(region.body)
            yield Location(stmt, stmts, index)
            for inner in stmt.blocks():
                yield from block(inner)

    return block(ir.body)


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


def definitions(ir: FunctionIR) -> dict[Temp, Assign]:
    """The statement defining each temp of ``ir``."""
    found: dict[Temp, Assign] = {}
    for stmt in walk(ir):
        if isinstance(stmt, Assign):
            for result in stmt.results:
                found[result] = stmt
    return found


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


def local_names(ir: FunctionIR) -> set[str]:
    """Names bound in this scope (parameters, stores, imports, nested defs), minus the
    ``global``/``nonlocal`` ones: the names a call cannot resolve statically."""
    names = set(ir.args.names())
    for stmt in walk(ir):
        if isinstance(stmt, (Store, DeleteVar, TypeAlias)):
            names.add(stmt.var.name)
        elif isinstance(stmt, Assign) and isinstance(stmt.op, Walrus):
            names.add(stmt.op.var.name)
        elif isinstance(stmt, FunctionDef) or type(stmt).__name__ == "ClassDef":
            names.add(stmt.fn.name)  # type: ignore[attr-defined]
        elif isinstance(stmt, Import):
            names.update((a or n.split(".")[0]) for n, a in stmt.names)
        elif isinstance(stmt, ImportFrom):
            names.update((a or n) for n, a in stmt.names)
    return names - set(ir.globals) - set(ir.nonlocals)


# ----------------------------------------------------------------------------------- calls


_UNRESOLVED = object()


class CallSite:
    """A call statement: ``%r = call f(args..., kw=...)``.

    ``callee`` is the object called when it can be known from the source alone (a global,
    builtin, closure variable or attribute chain of those, looked up now); ``None`` if not.
    Assigning ``callee`` makes the call use a constant instead.
    """

    def __init__(self, ir: FunctionIR, location: Location,
                 defs: dict[Temp, Assign]) -> None:
        self.ir = ir
        self.location = location
        self._defs = defs

    @property
    def stmt(self) -> Assign:
        stmt = self.location.stmt
        assert isinstance(stmt, Assign)
        return stmt

    @property
    def op(self) -> Call:
        op = self.stmt.op
        assert isinstance(op, Call)
        return op

    @property
    def result(self) -> Temp | None:
        return self.stmt.result

    @property
    def args(self) -> list[Operand | Starred]:
        return self.op.args

    @property
    def keywords(self) -> list[Keyword]:
        return self.op.keywords

    @property
    def callee_path(self) -> str | None:
        """The dotted source path of the callee (``"math.sin"``), if it is one."""
        return dotted_path(self.op.func, self._defs)

    @property
    def callee(self) -> Any:
        value = resolve(self.ir, self.op.func, self._defs)
        return None if value is _UNRESOLVED else value

    @callee.setter
    def callee(self, value: Any) -> None:
        self.op.func = Const(value, self.stmt.pos)

    def __repr__(self) -> str:
        path = self.callee_path or repr(self.op.func)
        return f"<CallSite {path}(...) at line {self.stmt.pos.lineno}>"


def calls(ir: FunctionIR) -> list[CallSite]:
    """Every call statement of ``ir`` (nested scopes excluded), in source order."""
    defs = definitions(ir)
    return [CallSite(ir, loc, defs) for loc in locations(ir)
            if isinstance(loc.stmt, Assign) and isinstance(loc.stmt.op, Call)]


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


def dotted_path(operand: Operand, defs: dict[Temp, Assign]) -> str | None:
    """``a.b.c`` for an operand computed by loading ``a`` and getting attributes."""
    if isinstance(operand, Var):
        return operand.name
    if isinstance(operand, Temp):
        stmt = defs.get(operand)
        if stmt is None:
            return None
        op = stmt.op
        if isinstance(op, Load):
            return op.var.name
        if isinstance(op, GetAttr):
            base = dotted_path(op.obj, defs)
            return None if base is None else f"{base}.{op.name}"
    return None


def resolve(ir: FunctionIR, operand: Operand, defs: dict[Temp, Assign] | None = None) -> Any:
    """The object ``operand`` denotes if the source alone determines it (constants,
    globals, builtins, closure variables and attributes of those, read now), else a private
    sentinel. Reading attributes runs no user code: only plain ``__dict__`` lookups are
    made (properties and ``__getattr__`` are not followed)."""
    defs = definitions(ir) if defs is None else defs
    if isinstance(operand, Const):
        return operand.value
    path = dotted_path(operand, defs)
    if path is None:
        return _UNRESOLVED
    head, *rest = path.split(".")
    value = _resolve_name(ir, head)
    for name in rest:
        if value is _UNRESOLVED:
            return _UNRESOLVED
        value = _static_getattr(value, name)
    return value


def _resolve_name(ir: FunctionIR, name: str) -> Any:
    if ir.kind not in ("function", "lambda") or name in local_names(ir):
        return _UNRESOLVED
    function = ir.function
    if function is not None:
        code = function.__code__
        if name in code.co_freevars:
            cell = function.__closure__[code.co_freevars.index(name)]
            try:
                return cell.cell_contents
            except ValueError:
                return _UNRESOLVED
        namespace = function.__globals__
        if name in namespace:
            return namespace[name]
        builtin_ns = namespace.get("__builtins__", builtins)
        builtin_ns = getattr(builtin_ns, "__dict__", builtin_ns)
        if name in builtin_ns:
            return builtin_ns[name]
    return _UNRESOLVED


def _static_getattr(value: Any, name: str) -> Any:
    try:
        namespace = object.__getattribute__(value, "__dict__")
    except AttributeError:
        namespace = None
    if isinstance(namespace, dict) and name in namespace:
        return namespace[name]
    for klass in getattr(type(value), "__mro__", ()):
        if name in klass.__dict__:
            attr = klass.__dict__[name]
            if hasattr(attr, "__get__") and not isinstance(value, type):
                return _UNRESOLVED  # a method or descriptor: its result depends on the call
            return attr
    return _UNRESOLVED


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

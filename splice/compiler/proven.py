"""Values whose class no rebinding can change: use-site checks need not test them.

A use-site check (``splice.compiler.checks``) tests what a rewrite relies on because inference
may have relied on a definition that a callee rebinds while the instance runs. Some values
rely on none: literals, displays and comprehensions (``[...]``, ``{...}``, ``(a, b)``:
always of their exact builtin class), parameters whose class the instance's entry checks
(its argument types, when they are exact classes), the locals that only ever hold such
values, and arithmetic on them with the builtin number types (whose operators no program can change:
``int``, ``float``, ``complex`` and ``bool`` are immutable builtin classes). For those the
class is proven for every execution, and a check of it would always pass.

``proven_classes(ir, argtypes)`` gives, for each such temp and local of ``ir``, its class
and whether its value is fully determined (computed from literals alone, so the constant
inference folded it to is its value in every execution).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from splice.infer import lattice as L
from splice.infer.scopes import _pattern_names, _rebound_by_inner_scopes
from splice.ir.nodes import (
    Assign,
    BinOp,
    BuildDict,
    BuildList,
    BuildSet,
    BuildTuple,
    ClassDef,
    Compare,
    Const,
    Copy,
    DeleteVar,
    FunctionDef,
    FunctionIR,
    Import,
    ImportFrom,
    Load,
    MakeComprehension,
    Match,
    Operand,
    Store,
    Temp,
    Try,
    UnaryOp,
    Var,
    Walrus,
)
from splice.ir.tools import local_names, scopes, walk
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Proven", "proven_classes"]

_RANK = {bool: 0, int: 0, float: 1, complex: 2}
_NUMBERS = (int, float, complex)
_ARITHMETIC = frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod"})
_ORDERING = frozenset({"lt", "le", "gt", "ge"})
_LITERAL_TYPES = (bool, int, float, complex, str, bytes, type(None))
_HEAPTYPE = 1 << 9
#: operations whose result is always of one exact builtin class (not an f-string: one of
#: a single ``{x}`` is what ``x.__format__`` returned, which may be a subclass of str)
_DISPLAYS: dict[type, type] = {BuildList: list, BuildDict: dict, BuildSet: set,
                               BuildTuple: tuple}
_COMPREHENSIONS = {"list": list, "set": set, "dict": dict}


@dataclass(frozen=True, slots=True)
class Proven:
    """The class of a value in every execution, and whether the value itself is fixed
    (computed from literals only)."""

    cls: type
    determined: bool


def _binary(op: str, a: type, b: type) -> type | None:
    if a not in _RANK or b not in _RANK:
        return None
    rank = max(_RANK[a], _RANK[b])
    if op in _ARITHMETIC:
        if op == "truediv":
            rank = max(rank, 1)
        elif op in ("floordiv", "mod") and rank == 2:
            return None  # a TypeError
        return _NUMBERS[rank]
    if op in ("eq", "ne") or (op in _ORDERING and rank < 2):
        return bool
    return None


def _unary(op: str, a: type) -> type | None:
    if op == "not_":
        return bool  # ``not x`` is a bool whatever ``x`` is (or it raises)
    if a not in _RANK:
        return None
    if op in ("neg", "pos"):
        return _NUMBERS[_RANK[a]]
    if op == "invert" and _RANK[a] == 0:
        return int
    return None


def _rebindable(ir: FunctionIR) -> set[str]:
    """Locals bound otherwise than by a plain store (``del``, ``:=``, imports, nested
    definitions, ``except ... as``, ``match`` patterns) or by an inner scope's
    ``nonlocal``."""
    names = set(_rebound_by_inner_scopes(ir))
    for stmt in walk(ir):
        if isinstance(stmt, Assign) and isinstance(stmt.op, MakeComprehension):
            # ``:=`` in a comprehension binds a local of the enclosing function
            names.update(bound.op.var.name for inner in scopes(stmt.op.fn)
                         for bound in walk(inner)
                         if isinstance(bound, Assign) and isinstance(bound.op, Walrus))
        if isinstance(stmt, DeleteVar):
            names.add(stmt.var.name)
        elif isinstance(stmt, Assign) and isinstance(stmt.op, Walrus):
            names.add(stmt.op.var.name)
        elif isinstance(stmt, (FunctionDef, ClassDef)):
            names.add(stmt.fn.name)
        elif isinstance(stmt, (Import, ImportFrom)):
            names.update(alias or name.split(".")[0] for name, alias in stmt.names)
            names.update(alias or name for name, alias in stmt.names)
        elif isinstance(stmt, Try):
            names.update(h.name for h in stmt.handlers if h.name)
        elif isinstance(stmt, Match):
            for case in stmt.cases:
                names.update(_pattern_names(case.pattern))
    return names


def proven_classes(ir: FunctionIR, argtypes: tuple[Any, ...]) -> dict[Any, Proven]:
    """Temps (by identity) and local names (by name) of ``ir`` whose class no rebinding can
    change, given that the leading parameters fit ``argtypes`` exactly (see the module
    docstring)."""
    locals_ = local_names(ir) - _rebindable(ir)
    params = ir.args.names()
    known: dict[Any, Proven] = {}
    unproven: set[Any] = {name for name in params[len(argtypes):]}
    for name, argtype in zip(params, argtypes, strict=False):
        # (an instance of a class statement's class can be given another class, by
        # ``__class__`` assignment; one of a builtin class cannot)
        if isinstance(argtype, L.Exact) and not argtype.cls.__flags__ & _HEAPTYPE:
            known[name] = Proven(argtype.cls, False)
        else:
            unproven.add(name)
    definitions: list[tuple[Any, Any]] = []  # (key, op or operand)
    for stmt in walk(ir):
        if isinstance(stmt, Store):
            if stmt.var.name in locals_:
                definitions.append((stmt.var.name, stmt.value))
        elif isinstance(stmt, Assign):
            if len(stmt.results) == 1 and isinstance(stmt.results[0], Temp):
                definitions.append((stmt.results[0], stmt.op))
            else:
                unproven.update(stmt.results)
        else:
            target = getattr(stmt, "target", None)
            if isinstance(target, Temp):
                unproven.add(target)  # a ``for``/``with`` target: whatever came
    changed = True
    while changed:
        changed = False
        for key, what in definitions:
            if key in unproven:
                continue
            found = _value(what, known, locals_, unproven)
            if found is _PENDING:
                continue
            old = known.get(key)
            if found is None or (old is not None and old.cls is not found.cls):
                unproven.add(key)
                known.pop(key, None)
                changed = True
            elif old is None or (old.determined and not found.determined):
                known[key] = found if old is None else Proven(found.cls, False)
                changed = True
    # a key still depending on a value never computed (unreachable code) is not proven
    pending = [key for key, what in definitions
               if key in known and _value(what, known, locals_, unproven) is _PENDING]
    for key in pending:
        known.pop(key, None)
    return known


_PENDING: Any = object()


def _operand(operand: Operand, known: dict[Any, Proven], locals_: set[str],
             unproven: set[Any]) -> Proven | None:
    if isinstance(operand, Const):
        value = operand.value
        return Proven(type(value), True) if type(value) in _LITERAL_TYPES else None
    key: Any = operand
    if isinstance(operand, Var):
        if operand.name not in locals_:
            return None  # a global, a cell, a name bound otherwise
        key = operand.name
    if key in unproven:
        return None
    found = known.get(key)
    return _PENDING if found is None else found


def _value(what: Any, known: dict[Any, Proven], locals_: set[str], unproven: set[Any]
           ) -> Proven | None:
    """The proven class of an op's result (or of an operand); ``_PENDING`` while an operand
    has none yet."""
    if isinstance(what, (Const, Var, Temp)):
        return _operand(what, known, locals_, unproven)
    if isinstance(what, Copy):
        return _operand(what.value, known, locals_, unproven)
    if isinstance(what, Load):
        return _operand(what.var, known, locals_, unproven)
    if isinstance(what, (BinOp, Compare)):
        left = _operand(what.left, known, locals_, unproven)
        right = _operand(what.right, known, locals_, unproven)
        if left is None or right is None:
            return None
        if left is _PENDING or right is _PENDING:
            return _PENDING
        cls = _binary(what.op, left.cls, right.cls)
        return None if cls is None else Proven(cls, left.determined and right.determined)
    display = _DISPLAYS.get(type(what))
    if display is not None:
        return Proven(display, False)
    if isinstance(what, MakeComprehension):
        made = _COMPREHENSIONS.get(what.kind)
        return None if made is None else Proven(made, False)
    if isinstance(what, UnaryOp):
        if what.op == "not_":
            return Proven(bool, False)
        operand = _operand(what.operand, known, locals_, unproven)
        if operand is None or operand is _PENDING:
            return operand
        cls = _unary(what.op, operand.cls)
        return None if cls is None else Proven(cls, operand.determined)
    return None

"""The IR: a structured, normalised representation of one Python scope.

Control flow stays nested (``If``, ``While``, ``For``, ``Try``, ``With``, ``Match``). Every
operation that can run user code is its own statement with a named result (a ``Temp``) and
simple operands (``Temp``, ``Var`` or ``Const``). Expression-level control flow (``and``/``or``,
conditional expressions, chained comparisons) keeps its lazily evaluated parts in ``Region``s.

Conventions every stage relies on:

* An op's fields that hold operands are listed in *evaluation order* (``SetAttr`` lists the
  value before the object, because Python evaluates ``a.b = v`` as ``v``, then ``a``).
  ``Op.operands()`` yields them in that order.
* A ``Var`` operand is read when its op executes. Lowering captures a name into a temp with
  ``Load`` whenever reading it late could observe a different binding or a different error.
* ``Temp`` objects are unique per scope and compared by identity; most are assigned once.
* Statements have identity (``stmt.id``), a source position, and are cheap to copy.
* Copying IR (``FunctionIR.copy``, ``copy_ir``) copies its structure: statements, ops,
  regions, temps, nested scopes, and the syntax kept in it (unevaluated annotations, match
  patterns). What it refers to is shared by reference, never copied: constants (``Const``
  and its value), temps' annotations, the callees inference resolved (``Call.callee``) and
  each scope's ``origin`` and ``function``. An object a plugin inserts stays that object.

The nodes are the bottom of ``splice.ir``: this module imports no other module of splice's
but ``splice.pristine``, so every module above may import it and none of it reaches up. The
reading and printing that methods of the nodes themselves need live here for that reason:
the call sites ``FunctionIR.calls()`` returns (``CallSite`` and the lookups it resolves
callees with) and the printer ``str(ir)`` lists with. Plugin authors import them from
``splice.ir.tools`` and ``splice.ir.printer``, which offer the same objects.
"""

from __future__ import annotations

import ast
import builtins
import copyreg
import io
import itertools
import pickle
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


class Pos(NamedTuple):
    """A source span: the same four numbers as an ``ast`` node carries."""

    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int

    @classmethod
    def of(cls, node: ast.AST) -> Pos:
        lineno: int = getattr(node, "lineno", 0)
        col: int = getattr(node, "col_offset", 0)
        end_lineno: int = getattr(node, "end_lineno", None) or lineno
        end_col: int = getattr(node, "end_col_offset", None) or col
        return cls(lineno, col, end_lineno, end_col)

    def __str__(self) -> str:
        return f"{self.lineno}:{self.col_offset}"


NOPOS = Pos(0, 0, 0, 0)


# --------------------------------------------------------------------------------- operands


class Temp:
    """A value computed by one statement and used by others (printed ``%n``)."""

    __slots__ = ("id", "annotation", "__weakref__")

    def __init__(self, id: int) -> None:
        self.id = id
        self.annotation: Any = None  # filled by inference (an abstract value)

    def __repr__(self) -> str:
        return f"%{self.id}"


@dataclass(frozen=True, slots=True)
class Var:
    """A source-level name; the compiler resolves its scope (local, cell, global) as usual."""

    name: str
    pos: Pos = field(default=NOPOS, compare=False, hash=False)

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Const:
    """A constant. Its value is passed by reference: copying IR shares ``Const`` nodes, so a
    copy holds the very object (a module, a function, an object a plugin inserted)."""

    value: Any
    pos: Pos = field(default=NOPOS, compare=False, hash=False)

    def __repr__(self) -> str:
        return repr(self.value)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Const)
            and type(other.value) is type(self.value)
            and (other.value is self.value or _safe_eq(other.value, self.value))
        )

    def __hash__(self) -> int:
        try:
            return hash((type(self.value), self.value))
        except TypeError:
            return id(self.value)

    def __deepcopy__(self, memo: dict[int, Any]) -> Const:
        return self  # constants are shared by reference, never copied (modules, functions)


def _safe_eq(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


Operand: typing.TypeAlias = "Temp | Var | Const"


@dataclass(slots=True)
class Starred:
    """``*x`` in a call, class statement or display. ``x`` is usually the result of a
    ``Splat`` (a tuple, iterated where the ``Splat`` is); otherwise the op iterates ``x``
    itself, as Python's expression does: in place, except the lone ``*x`` of a ``Call``,
    iterated at the call after its keyword arguments and ``**`` mappings (what lowering
    makes of ``f(*x, k=v)``, as CPython's ``CALL_FUNCTION_EX`` does)."""

    value: Operand


@dataclass(slots=True)
class Keyword:
    """``name=value`` in a call; ``name is None`` means ``**value`` (usually a ``DoubleSplat``
    result; otherwise the op reads the mapping in place)."""

    name: str | None
    value: Operand


@dataclass(slots=True)
class Region:
    """Statements evaluated lazily, producing ``value`` (used by and/or, ``while`` tests...)."""

    body: list[Stmt]
    value: Operand


# -------------------------------------------------------------------------------------- ops


class Op:
    """An operation. Subclasses list operand fields in evaluation order in ``_operand_fields``."""

    __slots__ = ()
    _operand_fields: ClassVar[tuple[str, ...]] = ()
    #: True when the op cannot run user code nor raise (safe to move across others).
    pure: ClassVar[bool] = False
    #: Short name used by the printer.
    opname: ClassVar[str] = "op"

    def operands(self) -> Iterator[Operand]:
        """The op's operands in evaluation order (``Starred``/``Keyword`` unwrapped)."""
        for name in self._operand_fields:
            yield from _flatten_operands(getattr(self, name))

    def regions(self) -> Iterator[Region]:
        """The regions the op evaluates lazily."""
        return iter(())

    def map_operands(self, fn: Any) -> None:
        """Replace every operand ``o`` by ``fn(o)`` (in place)."""
        for name in self._operand_fields:
            setattr(self, name, _map_operand_field(getattr(self, name), fn))


def _flatten_operands(value: Any) -> Iterator[Operand]:
    if value is None:
        return
    if isinstance(value, (Temp, Var, Const)):
        yield value
    elif isinstance(value, (Starred, Keyword)):
        yield value.value
    elif isinstance(value, list):
        for item in value:
            yield from _flatten_operands(item)


def _map_operand_field(value: Any, fn: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (Temp, Var, Const)):
        return fn(value)
    if isinstance(value, Starred):
        return Starred(fn(value.value))
    if isinstance(value, Keyword):
        return Keyword(value.name, fn(value.value))
    if isinstance(value, list):
        return [_map_operand_field(item, fn) for item in value]
    return value


# ------------------------------------------------------------- CPython version differences
#
# Lowering mirrors the compiler of the running CPython; where 3.11, 3.12 and 3.13 differ
# in an order or a count of effects, the difference is decided in ``splice.compat``
# (``JUMP_THREADING``: ``BoolOp.threaded``). The lone ``*x`` of a call is iterated by
# ``CALL_FUNCTION_EX`` after the keyword arguments in 3.11, 3.12 and 3.13 alike
# (``compiler_call_helper``), class bases in place: no switch needed
# (``splice.ir.lowering._lone_star``).


# The names follow the ``operator`` module, so ``operator.<name>`` is the callee.
BINARY_OPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.MatMult: "matmul",
    ast.Div: "truediv", ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow",
    ast.LShift: "lshift", ast.RShift: "rshift", ast.BitOr: "or_", ast.BitXor: "xor",
    ast.BitAnd: "and_",
}
UNARY_OPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not_"}
COMPARE_OPS = {
    ast.Lt: "lt", ast.LtE: "le", ast.Eq: "eq", ast.NotEq: "ne", ast.Gt: "gt", ast.GtE: "ge",
    ast.Is: "is_", ast.IsNot: "is_not", ast.In: "in", ast.NotIn: "not_in",
}


@dataclass(slots=True)
class Load(Op):
    """Read the current binding of a name (may raise ``NameError``/``UnboundLocalError``)."""

    var: Var
    _operand_fields: ClassVar = ("var",)
    opname: ClassVar = "load"


@dataclass(slots=True)
class Copy(Op):
    """The operand's value, as a temp (a constant stored to several targets, say)."""

    value: Operand
    _operand_fields: ClassVar = ("value",)
    pure: ClassVar = True
    opname: ClassVar = "copy"


@dataclass(slots=True)
class BinOp(Op):
    op: str  # a key of ``operator``: "add", "sub", ...
    left: Operand
    right: Operand
    _operand_fields: ClassVar = ("left", "right")
    opname: ClassVar = "binop"


@dataclass(slots=True)
class InPlace(Op):
    """``target op= value`` without the store: ``operator.i<op>(target, value)``."""

    op: str
    target: Operand
    value: Operand
    _operand_fields: ClassVar = ("target", "value")
    opname: ClassVar = "inplace"


@dataclass(slots=True)
class UnaryOp(Op):
    op: str  # "neg", "pos", "invert", "not_" (``not_`` performs a truth test)
    operand: Operand
    _operand_fields: ClassVar = ("operand",)
    opname: ClassVar = "unary"


@dataclass(slots=True)
class Compare(Op):
    op: str  # "lt", "le", "eq", "ne", "gt", "ge", "is_", "is_not", "in", "not_in"
    left: Operand
    right: Operand
    _operand_fields: ClassVar = ("left", "right")
    opname: ClassVar = "compare"


@dataclass(slots=True)
class BoolOp(Op):
    """``first and r1 and r2 ...`` (or ``or``): short-circuit with truth tests; the result is
    the first operand that decides, or the last one.

    ``in_test``: the result is only consumed by a truth test (``if a and b:``); as in CPython,
    that test reuses this op's own tests instead of testing the deciding operand again.
    ``chain``: the source was a chained comparison ``a < b < c``, written as
    ``(a < b) and (b < c)`` with ``b`` evaluated once into a temp shared by both links.
    ``threaded``: another ``boolop`` tests the result next (as its first operand or a region
    value but its last, maybe through the last operand of a third: ``b or c`` in
    ``(a and (b or c)) or d``), as in ``(a or b) and c``, and CPython threads this op's
    jumps to that test (3.11 only, see ``JUMP_THREADING``): when this op short-circuits,
    the test that decided it decides there too and the value is not tested again; when it
    runs to its last operand, that operand is tested there (once). Never with ``in_test``
    or ``chain``.
    """

    op: str  # "and" | "or"
    first: Operand
    rest: list[Region]
    in_test: bool = False
    chain: bool = False
    threaded: bool = False
    _operand_fields: ClassVar = ("first",)
    opname: ClassVar = "boolop"

    def regions(self) -> Iterator[Region]:
        return iter(self.rest)


@dataclass(slots=True)
class IfExp(Op):
    """``body if test else orelse`` (``test`` is truth-tested)."""

    test: Operand
    body: Region
    orelse: Region
    _operand_fields: ClassVar = ("test",)
    opname: ClassVar = "ifexp"

    def regions(self) -> Iterator[Region]:
        return iter((self.body, self.orelse))


@dataclass(slots=True)
class GetAttr(Op):
    obj: Operand
    name: str
    _operand_fields: ClassVar = ("obj",)
    opname: ClassVar = "getattr"


@dataclass(slots=True)
class SetAttr(Op):
    value: Operand
    obj: Operand
    name: str
    #: the span of the target (``a.b``, ``a[i]``); the statement's is the ``Assign``'s
    target_pos: Pos = NOPOS
    _operand_fields: ClassVar = ("value", "obj")
    opname: ClassVar = "setattr"


@dataclass(slots=True)
class DelAttr(Op):
    obj: Operand
    name: str
    #: the span of the target (``a.b``, ``a[i]``); the statement's is the ``Assign``'s
    target_pos: Pos = NOPOS
    _operand_fields: ClassVar = ("obj",)
    opname: ClassVar = "delattr"


@dataclass(slots=True)
class GetItem(Op):
    obj: Operand
    index: Operand
    _operand_fields: ClassVar = ("obj", "index")
    opname: ClassVar = "getitem"


@dataclass(slots=True)
class SetItem(Op):
    value: Operand
    obj: Operand
    index: Operand
    #: the span of the target (``a.b``, ``a[i]``); the statement's is the ``Assign``'s
    target_pos: Pos = NOPOS
    _operand_fields: ClassVar = ("value", "obj", "index")
    opname: ClassVar = "setitem"


@dataclass(slots=True)
class DelItem(Op):
    obj: Operand
    index: Operand
    #: the span of the target (``a.b``, ``a[i]``); the statement's is the ``Assign``'s
    target_pos: Pos = NOPOS
    _operand_fields: ClassVar = ("obj", "index")
    opname: ClassVar = "delitem"


@dataclass(slots=True)
class BuildSlice(Op):
    """``lower:upper:step``; an absent part is ``None`` (not ``Const(None)``)."""

    lower: Operand | None
    upper: Operand | None
    step: Operand | None
    _operand_fields: ClassVar = ("lower", "upper", "step")
    pure: ClassVar = True
    opname: ClassVar = "slice"


@dataclass(slots=True)
class Call(Op):
    """``func(*args, **keywords)``; ``args`` may hold ``Starred`` items, ``keywords`` may hold
    ``Keyword(None, mapping)`` for ``**mapping``. ``args == [Starred(x)]`` with ``x`` not a
    ``Splat`` result: the call iterates ``x`` last, after the keywords (``Starred``)."""

    func: Operand
    args: list[Operand | Starred]
    keywords: list[Keyword]
    #: the object inference resolved the callee to (``None``: not known or not inferred)
    callee: Any = field(default=None, compare=False, repr=False)
    #: called as it is, never through a dispatch table (a code instance's function that
    #: a direct call runs: ``splice.compiler.direct``)
    native: bool = field(default=False, compare=False, repr=False)
    _operand_fields: ClassVar = ("func", "args", "keywords")
    opname: ClassVar = "call"


@dataclass(slots=True)
class Splat(Op):
    """Iterate ``value`` into a tuple for ``*value`` in a call or display, in place (runs
    ``__iter__``/``__next__``); not made for the lone ``*value`` of a call (``Starred``)."""

    value: Operand
    _operand_fields: ClassVar = ("value",)
    opname: ClassVar = "splat"


@dataclass(slots=True)
class DoubleSplat(Op):
    """Read ``value`` as a mapping for ``**value`` (runs ``keys``/``__getitem__``)."""

    value: Operand
    _operand_fields: ClassVar = ("value",)
    opname: ClassVar = "dsplat"


@dataclass(slots=True)
class BuildTuple(Op):
    items: list[Operand | Starred]
    _operand_fields: ClassVar = ("items",)
    opname: ClassVar = "tuple"


@dataclass(slots=True)
class BuildList(Op):
    items: list[Operand | Starred]
    _operand_fields: ClassVar = ("items",)
    opname: ClassVar = "list"


@dataclass(slots=True)
class BuildSet(Op):
    items: list[Operand | Starred]  # hashing runs ``__hash__``
    _operand_fields: ClassVar = ("items",)
    opname: ClassVar = "set"


@dataclass(slots=True)
class BuildDict(Op):
    """``{k: v, **m}``: ``keys[i] is None`` marks ``**values[i]``. Keys and values are listed
    interleaved in ``items`` as ``(key, value)`` pairs, in evaluation order."""

    items: list[tuple[Operand | None, Operand]]
    opname: ClassVar = "dict"

    def operands(self) -> Iterator[Operand]:
        for key, value in self.items:
            if key is not None:
                yield key
            yield value

    def map_operands(self, fn: Any) -> None:
        self.items = [(None if k is None else fn(k), fn(v)) for k, v in self.items]


@dataclass(slots=True)
class Format(Op):
    """``{value!conversion:spec}`` in an f-string: conversion then ``format(value, spec)``."""

    value: Operand
    conversion: int  # -1, ord("s"), ord("r"), ord("a") as in ``ast.FormattedValue``
    spec: Operand | None
    _operand_fields: ClassVar = ("value", "spec")
    opname: ClassVar = "format"


@dataclass(slots=True)
class JoinStr(Op):
    """Concatenate strings (the parts of an f-string)."""

    parts: list[Operand]
    _operand_fields: ClassVar = ("parts",)
    pure: ClassVar = True
    opname: ClassVar = "joinstr"


@dataclass(slots=True)
class Iter(Op):
    """``iter(value)`` (``aiter`` when ``is_async``), as ``for`` and comprehensions do."""

    value: Operand
    is_async: bool = False
    _operand_fields: ClassVar = ("value",)
    opname: ClassVar = "iter"


@dataclass(slots=True)
class Unpack(Op):
    """Iterate ``value`` into ``before`` values, a list of the rest (if ``star``), and
    ``after`` values; the statement's ``results`` receive them."""

    value: Operand
    before: int
    star: bool
    after: int
    #: the span of the target tuple or list (the statement's span is the ``Assign``'s)
    target_pos: Pos = NOPOS
    _operand_fields: ClassVar = ("value",)
    opname: ClassVar = "unpack"


@dataclass(slots=True)
class Yield(Op):
    value: Operand | None
    _operand_fields: ClassVar = ("value",)
    opname: ClassVar = "yield"


@dataclass(slots=True)
class YieldFrom(Op):
    """``yield from value``: iterates ``value`` (``iter``) and delegates send/throw/close."""

    value: Operand
    _operand_fields: ClassVar = ("value",)
    opname: ClassVar = "yield_from"


@dataclass(slots=True)
class Await(Op):
    value: Operand
    _operand_fields: ClassVar = ("value",)
    opname: ClassVar = "await"


@dataclass(slots=True)
class Walrus(Op):
    """``(var := value)``: binds ``var`` and results in ``value``."""

    var: Var
    value: Operand
    _operand_fields: ClassVar = ("value",)
    opname: ClassVar = "walrus"


@dataclass(slots=True)
class MakeLambda(Op):
    """Create a function from a ``lambda`` expression."""

    fn: FunctionIR
    defaults: list[Operand]
    kwdefaults: list[Operand | None]  # one per keyword-only argument, None = no default
    _operand_fields: ClassVar = ("defaults", "kwdefaults")
    opname: ClassVar = "lambda"


@dataclass(slots=True)
class MakeComprehension(Op):
    """Run a comprehension (list/set/dict/generator expression) whose first iterator
    (already ``iter``-ed in the enclosing scope) is ``iterator``; ``fn`` is its own scope."""

    kind: str  # "list", "set", "dict", "genexp"
    fn: FunctionIR
    iterator: Operand
    _operand_fields: ClassVar = ("iterator",)
    opname: ClassVar = "comprehension"


@dataclass(slots=True)
class ComprehensionAppend(Op):
    """Add to the comprehension's result: ``append``/``add`` (one value) or ``d[k] = v``."""

    values: list[Operand]
    _operand_fields: ClassVar = ("values",)
    opname: ClassVar = "append"


# ------------------------------------------------------------------------------- statements

_ids = itertools.count(1)


class Stmt:
    """A statement. Every statement has an identity ``id`` and a source position ``pos``."""

    __slots__ = ()
    pos: Pos
    id: int

    def blocks(self) -> Iterator[list[Stmt]]:
        """Nested statement lists (bodies), in source order."""
        return iter(())

    def operands(self) -> Iterator[Operand]:
        return iter(())

    def regions(self) -> Iterator[Region]:
        return iter(())


def _new_id() -> int:
    return next(_ids)


@dataclass(slots=True, eq=False)
class Assign(Stmt):
    """``results = op``: zero results (value unused), one, or several (for ``Unpack``)."""

    results: tuple[Temp, ...]
    op: Op
    pos: Pos
    id: int = field(default_factory=_new_id)

    @property
    def result(self) -> Temp | None:
        return self.results[0] if len(self.results) == 1 else None

    def operands(self) -> Iterator[Operand]:
        return self.op.operands()

    def regions(self) -> Iterator[Region]:
        return self.op.regions()


@dataclass(slots=True, eq=False)
class Store(Stmt):
    """``var = value``. ``annotation`` keeps an unevaluated annotation (``x: T = v`` in a
    function), as source AST, so the compiler sees the same declarations."""

    var: Var
    value: Operand
    pos: Pos
    annotation: ast.expr | None = None
    id: int = field(default_factory=_new_id)

    def operands(self) -> Iterator[Operand]:
        yield self.value


@dataclass(slots=True, eq=False)
class Declare(Stmt):
    """``var: annotation`` without a value: declares ``var`` local; evaluates nothing."""

    var: Var
    annotation: ast.expr
    pos: Pos
    id: int = field(default_factory=_new_id)


@dataclass(slots=True, eq=False)
class AnnotateName(Stmt):
    """In a class body: ``__annotations__[name] = annotation`` (after any value is stored).
    ``annotation`` is an operand, or source AST under ``from __future__ import annotations``."""

    var: Var
    annotation: Operand | ast.expr
    value: Operand | None
    simple: bool
    pos: Pos
    id: int = field(default_factory=_new_id)

    def operands(self) -> Iterator[Operand]:
        if self.value is not None:
            yield self.value
        if not isinstance(self.annotation, ast.AST):
            yield self.annotation


@dataclass(slots=True, eq=False)
class DeleteVar(Stmt):
    var: Var
    pos: Pos
    id: int = field(default_factory=_new_id)


@dataclass(slots=True, eq=False)
class If(Stmt):
    test: Operand  # truth-tested
    body: list[Stmt]
    orelse: list[Stmt]
    pos: Pos
    id: int = field(default_factory=_new_id)

    def blocks(self) -> Iterator[list[Stmt]]:
        yield self.body
        yield self.orelse

    def operands(self) -> Iterator[Operand]:
        yield self.test


@dataclass(slots=True, eq=False)
class While(Stmt):
    test: Region  # evaluated and truth-tested before every iteration
    body: list[Stmt]
    orelse: list[Stmt]
    pos: Pos
    id: int = field(default_factory=_new_id)

    def blocks(self) -> Iterator[list[Stmt]]:
        yield self.body
        yield self.orelse

    def regions(self) -> Iterator[Region]:
        yield self.test


@dataclass(slots=True, eq=False)
class For(Stmt):
    """``for target in iterator``: calls ``next`` (``anext``) on ``iterator`` (an ``Iter``
    result) and binds the value to ``target``; the body starts by storing it."""

    iterator: Operand
    target: Temp
    body: list[Stmt]
    orelse: list[Stmt]
    is_async: bool
    pos: Pos
    id: int = field(default_factory=_new_id)

    def blocks(self) -> Iterator[list[Stmt]]:
        yield self.body
        yield self.orelse

    def operands(self) -> Iterator[Operand]:
        yield self.iterator


@dataclass(slots=True, eq=False)
class Handler:
    """``except type as name:``; ``type`` is evaluated only when an exception is matched."""

    type: Region | None
    name: str | None
    body: list[Stmt]
    pos: Pos


@dataclass(slots=True, eq=False)
class Try(Stmt):
    body: list[Stmt]
    handlers: list[Handler]
    orelse: list[Stmt]
    finalbody: list[Stmt]
    is_star: bool
    pos: Pos
    id: int = field(default_factory=_new_id)

    def blocks(self) -> Iterator[list[Stmt]]:
        yield self.body
        for handler in self.handlers:
            yield handler.body
        yield self.orelse
        yield self.finalbody

    def regions(self) -> Iterator[Region]:
        for handler in self.handlers:
            if handler.type is not None:
                yield handler.type


@dataclass(slots=True, eq=False)
class With(Stmt):
    """``with manager as target``: calls ``__enter__`` (``__aenter__``) and, on the way out,
    ``__exit__`` (``__aexit__``). ``joined``: the source wrote it as another item of the
    enclosing ``with`` statement (``with a, b:``)."""

    manager: Operand
    target: Temp | None
    body: list[Stmt]
    is_async: bool
    pos: Pos
    joined: bool = False
    id: int = field(default_factory=_new_id)

    def blocks(self) -> Iterator[list[Stmt]]:
        yield self.body

    def operands(self) -> Iterator[Operand]:
        yield self.manager


@dataclass(slots=True, eq=False)
class Case:
    """One ``case``: ``pattern`` is the source pattern AST (its value and class names are
    evaluated by the match itself), ``guard`` is truth-tested after a successful match."""

    pattern: ast.pattern
    guard: Region | None
    body: list[Stmt]


@dataclass(slots=True, eq=False)
class Match(Stmt):
    subject: Operand
    cases: list[Case]
    pos: Pos
    id: int = field(default_factory=_new_id)

    def blocks(self) -> Iterator[list[Stmt]]:
        for case in self.cases:
            yield case.body

    def operands(self) -> Iterator[Operand]:
        yield self.subject

    def regions(self) -> Iterator[Region]:
        for case in self.cases:
            if case.guard is not None:
                yield case.guard


@dataclass(slots=True, eq=False)
class Return(Stmt):
    value: Operand | None
    pos: Pos
    id: int = field(default_factory=_new_id)

    def operands(self) -> Iterator[Operand]:
        if self.value is not None:
            yield self.value


@dataclass(slots=True, eq=False)
class Raise(Stmt):
    exc: Operand | None
    cause: Operand | None
    pos: Pos
    id: int = field(default_factory=_new_id)

    def operands(self) -> Iterator[Operand]:
        if self.exc is not None:
            yield self.exc
        if self.cause is not None:
            yield self.cause


@dataclass(slots=True, eq=False)
class Assert(Stmt):
    """``assert test, msg``: both are regions, because ``python -O`` evaluates neither."""

    test: Region
    msg: Region | None
    pos: Pos
    id: int = field(default_factory=_new_id)

    def regions(self) -> Iterator[Region]:
        yield self.test
        if self.msg is not None:
            yield self.msg


@dataclass(slots=True, eq=False)
class Break(Stmt):
    pos: Pos
    id: int = field(default_factory=_new_id)


@dataclass(slots=True, eq=False)
class Continue(Stmt):
    pos: Pos
    id: int = field(default_factory=_new_id)


@dataclass(slots=True, eq=False)
class Pass(Stmt):
    pos: Pos
    id: int = field(default_factory=_new_id)


@dataclass(slots=True, eq=False)
class Import(Stmt):
    """``import a.b as c, d``: runs the import system and binds names."""

    names: list[tuple[str, str | None]]
    pos: Pos
    id: int = field(default_factory=_new_id)


@dataclass(slots=True, eq=False)
class ImportFrom(Stmt):
    module: str | None
    names: list[tuple[str, str | None]]
    level: int
    pos: Pos
    id: int = field(default_factory=_new_id)


@dataclass(slots=True, eq=False)
class FunctionDef(Stmt):
    """``def``: evaluates decorators, defaults, keyword defaults and annotations (in that
    order), creates the function from ``fn``, applies the decorators, binds ``fn.name``."""

    fn: FunctionIR
    decorators: list[Operand]
    defaults: list[Operand]
    kwdefaults: list[Operand | None]
    annotations: list[tuple[str, Operand | ast.expr]]  # ast.expr: unevaluated (future)
    pos: Pos
    #: each decorator's span (the first one's line is the function's first line)
    decorator_pos: list[Pos] = field(default_factory=list)
    id: int = field(default_factory=_new_id)

    def operands(self) -> Iterator[Operand]:
        yield from self.decorators
        yield from self.defaults
        yield from (d for d in self.kwdefaults if d is not None)
        yield from (a for _, a in self.annotations if not isinstance(a, ast.AST))


@dataclass(slots=True, eq=False)
class ClassDef(Stmt):
    """``class``: evaluates decorators, bases and keywords, runs the body ``fn`` through
    ``__build_class__``, applies the decorators, binds ``fn.name``.

    A generic class (``class C[T](Base[T])``, PEP 695) evaluates its bases and keywords in
    the scope of its type parameters, after them: they are kept as source AST in
    ``scoped_bases`` and ``scoped_keywords`` (``bases`` and ``keywords`` are then empty)."""

    fn: FunctionIR
    decorators: list[Operand]
    bases: list[Operand | Starred]
    keywords: list[Keyword]
    pos: Pos
    #: each decorator's span (the first one's line is the class body's first line)
    decorator_pos: list[Pos] = field(default_factory=list)
    scoped_bases: list[ast.expr] = field(default_factory=list)
    scoped_keywords: list[ast.keyword] = field(default_factory=list)
    id: int = field(default_factory=_new_id)

    def operands(self) -> Iterator[Operand]:
        yield from self.decorators
        yield from _flatten_operands(self.bases)
        yield from _flatten_operands(self.keywords)


@dataclass(slots=True, eq=False)
class TypeAlias(Stmt):
    """``type name[params] = value`` (PEP 695): binds ``var`` to a ``TypeAliasType`` whose
    value (and type parameters' bounds) are evaluated lazily, in scopes of their own; so
    they are kept as source AST and nothing is evaluated when the statement runs."""

    var: Var
    type_params: list[ast.AST]
    value: ast.expr
    pos: Pos
    id: int = field(default_factory=_new_id)


# --------------------------------------------------------------------------------- scopes


@dataclass(slots=True)
class Arguments:
    """A function's parameters (names only; defaults are operands of the creating op)."""

    posonly: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    vararg: str | None = None
    kwonly: list[str] = field(default_factory=list)
    kwarg: str | None = None
    #: the ``ast.arguments`` of the source, kept for positions and unevaluated annotations
    source: ast.arguments | None = None

    def signature(self) -> str:
        """The parameter list as written (``shapes, /, *, scale: float = 1.0``); from the
        names alone where the source has none (``*`` and ``/`` kept)."""
        if self.source is not None:
            return ast.unparse(self.source)
        parts = [*self.posonly, *(["/"] if self.posonly else []), *self.args]
        if self.vararg:
            parts.append(f"*{self.vararg}")
        elif self.kwonly:
            parts.append("*")
        parts.extend(self.kwonly)
        if self.kwarg:
            parts.append(f"**{self.kwarg}")
        return ", ".join(parts)

    def names(self) -> list[str]:
        names = [*self.posonly, *self.args]
        if self.vararg:
            names.append(self.vararg)
        names.extend(self.kwonly)
        if self.kwarg:
            names.append(self.kwarg)
        return names


@dataclass(slots=True, eq=False)
class FunctionIR:
    """The IR of one scope: a function, a lambda, a class body or a comprehension."""

    name: str
    qualname: str
    kind: str  # "function", "lambda", "class", "comprehension"
    args: Arguments
    body: list[Stmt]
    filename: str
    pos: Pos
    is_async: bool = False
    docstring: str | None = None
    globals: list[str] = field(default_factory=list)  # ``global`` declarations
    nonlocals: list[str] = field(default_factory=list)  # ``nonlocal`` declarations
    future_flags: int = 0  # ``__future__`` compiler flags of the source module
    #: names the source module binds by ``import`` at top level: CPython compiles a call of
    #: an attribute of one as a plain call, not a method call (``splice.ir.call_positions``)
    module_imports: frozenset[str] = frozenset()
    #: where the scope came from (a ``splice.ir.source.FunctionSource`` for lowered functions)
    origin: Any = None
    #: the function object this scope was lowered from (top-level scopes only)
    function: Any = None
    #: PEP 695 type parameters (``def f[T]``, ``class C[T]``), as source AST: a nested
    #: generic definition is regenerated with them, so CPython makes their annotation scope
    type_params: list[ast.AST] = field(default_factory=list)
    #: the runtime key of the code instance being built (``Plugin.specialize``; None: none)
    key: Any = None
    _next_temp: int = 1

    def new_temp(self) -> Temp:
        """A fresh temporary of this scope."""
        temp = Temp(self._next_temp)
        self._next_temp += 1
        return temp

    def calls(self) -> list[CallSite]:
        """Every call statement of this scope as a :class:`CallSite` (see :func:`calls`)."""
        return calls(self)

    def walk(self) -> Iterator[Stmt]:
        """Every statement of this scope (not of nested scopes), in source order."""
        return walk_block(self.body)

    def copy(self) -> FunctionIR:
        """A deep copy of the structure: rewriting the copy never changes this IR. Constants,
        annotations, resolved callees, ``origin`` (with the source file's syntax tree) and
        the function are shared (see :func:`copy_ir`)."""
        return copy_ir(self)

    def __str__(self) -> str:
        return format_function(self)


def walk_block(block: list[Stmt]) -> Iterator[Stmt]:
    """Every statement of ``block``, including nested blocks and regions, in order."""
    for stmt in block:
        for region in stmt.regions():
            yield from walk_block(region.body)
        yield stmt
        for inner in stmt.blocks():
            yield from walk_block(inner)


# ---------------------------------------------------------------- reading: calls and names
#
# What ``FunctionIR.calls()`` returns is read here, with the nodes, so that the nodes import
# nothing above them; ``splice.ir.tools`` offers the same names to plugin authors.


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


def definitions(ir: FunctionIR) -> dict[Temp, Assign]:
    """The statement defining each temp of ``ir``."""
    found: dict[Temp, Assign] = {}
    for stmt in ir.walk():
        if isinstance(stmt, Assign):
            for result in stmt.results:
                found[result] = stmt
    return found


def local_names(ir: FunctionIR) -> set[str]:
    """Names bound in this scope (parameters, stores, imports, nested defs), minus the
    ``global``/``nonlocal`` ones: the names a call cannot resolve statically."""
    names = set(ir.args.names())
    for stmt in ir.walk():
        if isinstance(stmt, (Store, DeleteVar, TypeAlias)):
            names.add(stmt.var.name)
        elif isinstance(stmt, Assign) and isinstance(stmt.op, Walrus):
            names.add(stmt.op.var.name)
        elif isinstance(stmt, (FunctionDef, ClassDef)):
            names.add(stmt.fn.name)
        elif isinstance(stmt, Import):
            names.update((a or n.split(".")[0]) for n, a in stmt.names)
        elif isinstance(stmt, ImportFrom):
            names.update((a or n) for n, a in stmt.names)
    return names - set(ir.globals) - set(ir.nonlocals)


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


# --------------------------------------------------------------------------------- copying

_T = TypeVar("_T")

_SCOPE_FIELDS = tuple(f.name for f in fields(FunctionIR))
_SCOPE_SHARED = frozenset({"origin", "function"})


def copy_ir(value: _T) -> _T:
    """A copy of the IR in ``value``: ``snapshot_ir(value).restore()``."""
    return snapshot_ir(value).restore()


def snapshot_ir(value: _T) -> Snapshot[_T]:
    """A snapshot of the IR in ``value``: a ``FunctionIR``, or a tuple or list holding IR
    and temps (copied together, so the temps of the copy are those of the copied IR).

    Copied: the structure (statements, ops, operand lists, regions, handlers, cases, temps,
    nested scopes) and the syntax kept in the IR (unevaluated annotations, match patterns,
    ``Arguments.source``). Shared by reference, never copied: ``Const`` nodes (hence their
    values), temps' annotations (immutable abstract values), ``Call.callee`` (the object
    inference resolved) and each scope's ``origin`` and ``function``. So a stateful object
    a plugin inserted as a constant is still that object in every later stage.

    A snapshot is a pickle and a copy the round trip (a deep copy done in C, several times
    faster than ``copy.deepcopy``); the shared objects stay out of the pickle: the
    pickler's dispatch table writes each as an index into a list that the unpickler reads
    them back from.
    """
    shared: list[Any] = []

    def share(obj: Any) -> _Shared:
        shared.append(obj)
        return _Shared(len(shared) - 1)

    def reduce_shared(token: _Shared) -> tuple[Any, ...]:
        return _shared, (token.index,)

    def reduce_const(const: Const) -> tuple[Any, ...]:
        shared.append(const)
        return _shared, (len(shared) - 1,)

    def reduce_temp(temp: Temp) -> tuple[Any, ...]:
        if temp.annotation is None:
            return Temp, (temp.id,)
        return Temp, (temp.id,), (None, {"annotation": share(temp.annotation)})

    def reduce_call(op: Call) -> tuple[Any, ...]:
        callee = None if op.callee is None else share(op.callee)
        return Call, (op.func, op.args, op.keywords, callee, op.native)

    def reduce_scope(ir: FunctionIR) -> tuple[Any, ...]:
        values = []
        for name in _SCOPE_FIELDS:
            item = getattr(ir, name)
            values.append(share(item) if name in _SCOPE_SHARED and item is not None
                          else item)
        return FunctionIR, tuple(values)

    reducers: dict[type, Callable[[Any], tuple[Any, ...]]] = {
        _Shared: reduce_shared, Const: reduce_const, Temp: reduce_temp, Call: reduce_call,
        FunctionIR: reduce_scope}
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, **reducers}
    pickler.dump(value)
    return Snapshot(buffer.getvalue(), shared)


class Snapshot(Generic[_T]):
    """IR as :func:`snapshot_ir` took it: each :meth:`restore` makes a new copy of it. The
    first half of a copy (the pickling, with a Python reducer per temp, constant and call)
    is paid once, so a cache of IR that many users copy keeps a snapshot, not the IR."""

    __slots__ = ("data", "shared")

    def __init__(self, data: bytes, shared: list[Any]) -> None:
        self.data = data
        self.shared = shared

    def restore(self) -> _T:
        """A new copy of the IR the snapshot was taken of."""
        result: _T = _Unpickler(self.data, self.shared).load()
        return result


class _Shared:
    """Stands for a shared object inside the state or arguments of a copied node."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _shared(index: int) -> Any:
    """The name a ``copy_ir`` pickle calls for its ``index``-th shared object; its unpickler
    resolves the name to its list of shared objects, so this is never called."""
    raise RuntimeError("a copy_ir pickle loaded by another unpickler")


class _Unpickler(pickle.Unpickler):
    """Loads a ``copy_ir`` pickle, giving back the shared objects themselves."""

    def __init__(self, data: bytes, shared: list[Any]) -> None:
        super().__init__(io.BytesIO(data))
        self.shared = shared

    def find_class(self, module: str, name: str) -> Any:
        if name == "_shared" and module == __name__:
            return self.shared.__getitem__
        return super().find_class(module, name)


# --------------------------------------------------------------------------------- printing
#
# The listing ``str(ir)`` shows, in the spirit of Julia's ``@code_lowered``: statements are
# numbered, each computation reads ``%n = op(args)``, nested blocks are indented, and the
# source line appears in the left margin whenever it changes. It is written here, with the
# nodes, so that the nodes import nothing above them; ``splice.ir.printer`` offers the same
# names (and ``Listing``).

Annotator = Callable[[object], str]


def operand_text(operand: object, annotate: Annotator | None = None) -> str:
    if isinstance(operand, Starred):
        return "*" + operand_text(operand.value, annotate)
    if isinstance(operand, Keyword):
        value = operand_text(operand.value, annotate)
        return f"**{value}" if operand.name is None else f"{operand.name}={value}"
    return repr(operand)


def op_text(op: Op) -> str:
    """``name(operands...)`` for an op, with its non-operand fields shown inline."""
    if isinstance(op, Call):
        args = [operand_text(a) for a in op.args] + [operand_text(k) for k in op.keywords]
        return f"call {operand_text(op.func)}({', '.join(args)})"
    if isinstance(op, BuildDict):
        parts = [f"**{v!r}" if k is None else f"{k!r}: {v!r}" for k, v in op.items]
        return "dict{" + ", ".join(parts) + "}"
    shown = []
    for name in (f.name for f in fields(op)):  # type: ignore[arg-type]
        value = getattr(op, name)
        if name in ("fn", "rest", "body", "orelse") or isinstance(value, Region):
            continue
        if name in op._operand_fields:
            if isinstance(value, list):
                shown.append("[" + ", ".join(operand_text(v) for v in value) + "]"
                              if name not in ("args", "items", "parts", "values", "defaults")
                              else ", ".join(operand_text(v) for v in value))
            elif value is not None:
                shown.append(operand_text(value))
        elif isinstance(value, bool):
            if value:
                shown.append(name)
        elif value is not None and not isinstance(value, (list, Pos)):
            # (positions are where the op came from, shown in the line column)
            shown.append(f"{name}={value!r}" if name not in ("op", "name") else repr(value)
                          if name == "name" else str(value))
    return f"{op.opname}({', '.join(shown)})"


class Printer:
    def __init__(self, annotate: Annotator | None = None) -> None:
        self.lines: list[tuple[str, int, str]] = []  # (line marker, depth, text)
        self.last_line = -1
        self.annotate = annotate

    def add(self, stmt_line: int, depth: int, text: str) -> None:
        marker = "" if stmt_line == self.last_line else str(stmt_line)
        self.last_line = stmt_line
        self.lines.append((marker, depth, text))

    def function(self, ir: FunctionIR, depth: int = 0) -> None:
        args = ir.args.signature()
        kind = {"class": "class", "comprehension": "comprehension", "lambda": "lambda"}.get(
            ir.kind, "async def" if ir.is_async else "def")
        self.add(ir.pos.lineno, depth, f"{kind} {ir.qualname}({args})")
        for decl, names in (("global", ir.globals), ("nonlocal", ir.nonlocals)):
            if names:
                self.add(ir.pos.lineno, depth + 1, f"{decl} {', '.join(names)}")
        self.block(ir.body, depth + 1)

    def block(self, stmts: list[Stmt], depth: int) -> None:
        for stmt in stmts:
            self.stmt(stmt, depth)

    def body_else_end(self, body: list[Stmt], orelse: list[Stmt], depth: int,
                      line: int) -> None:
        """A compound statement's body, its ``else`` block if any, and ``end``."""
        self.block(body, depth + 1)
        if orelse:
            self.add(line, depth, "else")
            self.block(orelse, depth + 1)
        self.add(line, depth, "end")

    def region(self, label: str, region: Region, depth: int, line: int) -> None:
        self.add(line, depth, f"{label}:")
        self.block(region.body, depth + 1)
        self.add(line, depth + 1, f"→ {region.value!r}")

    def stmt(self, stmt: Stmt, depth: int) -> None:
        line = stmt.pos.lineno
        if isinstance(stmt, Assign):
            text = op_text(stmt.op)
            if isinstance(stmt.op, Unpack):
                lhs = ", ".join(repr(r) for r in stmt.results)
                text = f"{lhs} = {text}"
            elif stmt.results:
                annotation = stmt.results[0].annotation
                suffix = f"::{annotation}" if annotation is not None else ""
                text = f"{stmt.results[0]!r} = {text}{suffix}"
            self.add(line, depth, text)
            for i, region in enumerate(stmt.op.regions()):
                self.region(f"lazy {i + 1}", region, depth + 1, line)
            inner = getattr(stmt.op, "fn", None)
            if isinstance(inner, FunctionIR):
                self.function(inner, depth + 1)
        elif isinstance(stmt, Store):
            self.add(line, depth, f"{stmt.var.name} = {stmt.value!r}")
        elif isinstance(stmt, DeleteVar):
            self.add(line, depth, f"del {stmt.var.name}")
        elif isinstance(stmt, If):
            self.add(line, depth, f"if {stmt.test!r}")
            self.body_else_end(stmt.body, stmt.orelse, depth, line)
        elif isinstance(stmt, While):
            self.add(line, depth, "while")
            self.region("test", stmt.test, depth + 1, line)
            self.body_else_end(stmt.body, stmt.orelse, depth, line)
        elif isinstance(stmt, For):
            word = "async for" if stmt.is_async else "for"
            self.add(line, depth, f"{word} {stmt.target!r} = next({stmt.iterator!r})")
            self.body_else_end(stmt.body, stmt.orelse, depth, line)
        elif isinstance(stmt, With):
            word = "async with" if stmt.is_async else "with"
            target = f" as {stmt.target!r}" if stmt.target is not None else ""
            self.add(line, depth, f"{word} enter({stmt.manager!r}){target}")
            self.block(stmt.body, depth + 1)
            self.add(line, depth, f"exit({stmt.manager!r})")
        elif isinstance(stmt, Try):
            self.add(line, depth, "try")
            self.block(stmt.body, depth + 1)
            for handler in stmt.handlers:
                star = "*" if stmt.is_star else ""
                name = f" as {handler.name}" if handler.name else ""
                self.add(handler.pos.lineno, depth, f"except{star}{name}")
                if handler.type is not None:
                    self.region("matches", handler.type, depth + 1, handler.pos.lineno)
                self.block(handler.body, depth + 1)
            if stmt.orelse:
                self.add(line, depth, "else")
                self.block(stmt.orelse, depth + 1)
            if stmt.finalbody:
                self.add(line, depth, "finally")
                self.block(stmt.finalbody, depth + 1)
            self.add(line, depth, "end")
        elif isinstance(stmt, Match):
            self.add(line, depth, f"match {stmt.subject!r}")
            for case in stmt.cases:
                self.add(line, depth + 1, f"case {ast.unparse(case.pattern)}")
                if case.guard is not None:
                    self.region("guard", case.guard, depth + 2, line)
                self.block(case.body, depth + 2)
            self.add(line, depth, "end")
        elif isinstance(stmt, (FunctionDef, ClassDef)):
            operands = ", ".join([*(repr(o) for o in stmt.operands()),
                                  *(_scoped_parts(stmt) if isinstance(stmt, ClassDef) else [])])
            word = "def" if isinstance(stmt, FunctionDef) else "class"
            self.add(line, depth,
                     f"{word} {stmt.fn.name}{_type_params(stmt.fn.type_params)}({operands})")
            self.function(stmt.fn, depth + 1)
        elif isinstance(stmt, TypeAlias):
            self.add(line, depth, f"type {stmt.var.name}{_type_params(stmt.type_params)}"
                                  f" = lazy {ast.unparse(stmt.value)}")
        elif isinstance(stmt, (Import, ImportFrom)):
            names = ", ".join(n if a is None else f"{n} as {a}" for n, a in stmt.names)
            if isinstance(stmt, ImportFrom):
                module = "." * stmt.level + (stmt.module or "")
                self.add(line, depth, f"from {module} import {names}")
            else:
                self.add(line, depth, f"import {names}")
        else:
            name = type(stmt).__name__.lower()
            operands = ", ".join(repr(o) for o in stmt.operands())
            self.add(line, depth, f"{name} {operands}".rstrip())
            for region in stmt.regions():
                self.region("lazy", region, depth + 1, line)

    def render(self) -> str:
        width = max((len(m) for m, _, _ in self.lines), default=1)
        out = []
        for number, (marker, depth, text) in enumerate(self.lines, start=1):
            out.append(f"{marker:>{width}} │ {number:>3} {'  ' * depth}{text}")
        return "\n".join(out)


def format_function(ir: FunctionIR, annotate: Annotator | None = None) -> str:
    """The listing of ``ir``."""
    printer = Printer(annotate)
    printer.function(ir)
    return printer.render()


def _type_params(params: list[ast.AST]) -> str:
    """``[T, *Ts]``: PEP 695 type parameters as written (evaluated lazily, so shown as
    source), or nothing."""
    return f"[{', '.join(ast.unparse(p) for p in params)}]" if params else ""


def _scoped_parts(stmt: ClassDef) -> list[str]:
    """A generic class's bases and keywords, evaluated in its type parameters' scope."""
    return [ast.unparse(part) for part in [*stmt.scoped_bases, *stmt.scoped_keywords]]

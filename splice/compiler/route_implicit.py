"""The implicit-call pass: route operations that call dunders through ``Implicit``.

Only a context whose plugins need to see every call runs it (see ``Context``). Every
operation that may call a Python dunder from C (operators, comparisons, ``in``, subscripts,
attribute access, truth tests, iteration, ``with``, f-string fields) becomes the native
operation behind a type test of its operands, else a call of the matching method of
``splice.runtime.implicit.Implicit``:

    %r = a + b          # becomes  %r = a + b if type(a) in NATIVE and type(b) in NATIVE
                        #               else @binary('add', a, b)
    %x = obj.name       # becomes  %x = obj.name if type(obj) in ATTRIBUTE_NATIVE
                        #               or @readable(obj, 'name') else @get(obj, 'name')

(``readable`` says whether CPython's lookup would run only C code: then the read is made
natively, in the user's frame). ``for``, ``async for``, unpacking and ``with`` take a
C-level stand-in instead of their operand, chained comparisons become ``and`` chains or an
``if`` per link (the middle operand still evaluated once), and class statements made by
``type`` run their ``__set_name__`` calls through the table (``splice.runtime.classes``).
Temps that a guard reads several times (which makes them hidden locals) are released after
it where that disturbs no folding (after a store of its result, or when it has none).
"""

from __future__ import annotations

import builtins
import functools
from typing import Any

from splice.compiler.route_calls import (
    enclosing_class,
    expression_statements,
    mangle,
    scopes_run_inline,
)
from splice.ir.nodes import (
    Assign,
    BinOp,
    BoolOp,
    BuildDict,
    BuildList,
    BuildSet,
    BuildTuple,
    Call,
    ClassDef,
    Compare,
    Const,
    Copy,
    DelAttr,
    DelItem,
    Format,
    FunctionIR,
    GetAttr,
    GetItem,
    If,
    IfExp,
    InPlace,
    Iter,
    JoinStr,
    MakeComprehension,
    Operand,
    Pos,
    Region,
    SetAttr,
    SetItem,
    Starred,
    Stmt,
    Temp,
    UnaryOp,
    Unpack,
    Var,
    While,
    With,
)
from splice.ir.tools import definitions, locations
from splice.keys import ClassSet
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["route_implicit"]

_type = type
_GUARDED_COMPARE = frozenset({"lt", "le", "eq", "ne", "gt", "ge", "in", "not_in"})
_GUARDED_UNARY = frozenset({"neg", "pos", "invert"})
def route_implicit(ir: FunctionIR, implicit: Any, native_types: ClassSet,
                   attribute_types: ClassSet, *, skip: tuple[Any, ...] = (),
                   compact: bool = False, native_attributes: frozenset[int] = frozenset()
                   ) -> int:
    """Rewrite the implicit calls of ``ir`` (and of the scopes it runs) so that, unless
    every operand's type is in ``native_types`` (``attribute_types`` for attribute access),
    they run through ``implicit`` (a ``splice.runtime.implicit.Implicit``). Returns the
    number of operations rewritten. Subscripts of the constants in ``skip`` (the dispatch
    tables) and the attribute reads of the statements whose ids are in
    ``native_attributes`` (splice's own, on objects of known builtin types) are left alone.
    ``compact``: every operation on a computed operand calls ``implicit``, so it stays one
    expression (for code that cannot hold statements)."""
    count = 0
    for scope, private in scopes_run_inline(ir, enclosing_class(ir)):
        routing = _Routing(scope, implicit, native_types, attribute_types, skip, compact,
                           native_attributes, private)
        count += routing.run()
    return count


class _Routing:
    """The implicit-call pass over one scope."""

    def __init__(self, scope: FunctionIR, implicit: Any, native: ClassSet,
                 attribute_types: ClassSet, skip: tuple[Any, ...], compact: bool,
                 native_attributes: frozenset[int], private: str | None) -> None:
        self.scope = scope
        self.implicit = implicit
        self.native = native
        self.attribute_types = attribute_types
        self.skip = skip
        self.compact = compact
        self.native_attributes = native_attributes
        self.private = private
        self.defs = definitions(scope)
        self.known = _builtin_typed(self.defs)
        self.expression_only = expression_statements(scope)

    def run(self) -> int:
        scope, implicit, native, defs, known = (self.scope, self.implicit, self.native,
                                                self.defs, self.known)
        count = 0
        # after ``defs``: a chain's result still counts as a boolean operation's, whose
        # truth tests stay native (as those of ``and``/``or``)
        chained = _unchain(scope, self.expression_only, self.compact)
        for loc in list(locations(scope)):
            stmt = loc.stmt
            # a class body's temporaries would become class attributes: one call each
            compact_here = (self.compact or scope.kind == "class"
                            or id(stmt) in self.expression_only)
            op = stmt.op if isinstance(stmt, Assign) else None
            before: list[Stmt] = []
            if isinstance(stmt, If):
                before, stmt.test = _guard_truth(scope, stmt.test, stmt.pos, implicit,
                                                 native, defs, compact_here, known)
            elif isinstance(stmt, While):
                # the test region runs before every iteration: the guard goes at its end
                extra, stmt.test.value = _guard_truth(scope, stmt.test.value, stmt.pos,
                                                      implicit, native, defs,
                                                      compact_here, known)
                stmt.test.body.extend(extra)
                count += bool(extra)
            elif isinstance(stmt, With):
                method = implicit.managed_async if stmt.is_async else implicit.managed
                # compact (one call): a guard would keep the value in a hidden local until
                # the frame ends, and weak references would see it live on
                before, stmt.manager = _guard_operand(scope, stmt.manager, stmt.pos, method,
                                                      native, True, known)
            elif isinstance(stmt, ClassDef):
                before = self._class_statement(stmt)
            elif isinstance(op, Iter) and op.is_async:
                # the value ``async for`` calls __aiter__ on (the Iter stays, so codegen
                # keeps the loop or comprehension asynchronous); one call, as for ``with``
                before, op.value = _guard_operand(scope, op.value, stmt.pos, implicit.aloop,
                                                  native, True, known)
            elif isinstance(op, Unpack):
                # not a comprehension's ``for a, b in`` target, which must stay a target
                # (the comprehension may have to stay an expression), nor the inner target
                # of ``(a, b), c = ...`` (its value would live on in a hidden local): those
                # unpack natively
                if scope.kind != "comprehension" and not _defined_by(defs, op.value, Unpack):
                    # starred: CPython collects the rest with list(iterator), which calls
                    # the iterator's own __iter__; splice collects every value the same way
                    slow = (functools.partial(implicit.unpacked, before=op.before,
                                              after=op.after)
                            if op.star else implicit.loop)
                    before, op.value = _guard_operand(scope, op.value, stmt.pos, slow,
                                                      native, True, known)
            elif isinstance(op, IfExp):
                before, op.test = _guard_truth(scope, op.test, stmt.pos, implicit,
                                               native, defs, compact_here, known)
            elif isinstance(op, UnaryOp) and op.op == "not_" and \
                    _defined_by(defs, op.operand, BoolOp):
                pass  # ``not (a and b)``: CPython tests the operands by jumps, once each
            elif isinstance(stmt, Assign) and stmt.id not in chained and not (
                    isinstance(op, GetItem) and isinstance(op.obj, Const)
                    and any(op.obj.value is s for s in self.skip)):
                new = self._guard(stmt, compact_here)
                if new is not None:
                    index = loc.block.index(stmt)
                    loc.block[index:index + 1] = new
                    count += 1
            if before:
                index = loc.block.index(stmt)
                loc.block[index:index] = before
                count += 1
        return count

    def _class_statement(self, stmt: ClassDef) -> list[Stmt]:
        """``__set_name__`` through the table for a class statement ``type`` may make (no
        ``metaclass=``, no ``*``/``**`` arguments, keywords that run no code when read):
        the statements to put before it (its bases go through ``classes.bases``), and the
        class body's first and last statements (``splice.runtime.classes``)."""
        if any(isinstance(base, Starred) for base in stmt.bases) or any(
                keyword.name in (None, "metaclass")
                or not isinstance(keyword.value, (Var, Const)) for keyword in stmt.keywords):
            return []
        classes = self.implicit.classes
        pos = stmt.pos
        bases = self.scope.new_temp()
        found = Assign((bases,), Call(Const(classes.bases, pos),
                                      [Const(stmt.fn.qualname, pos), *stmt.bases], []), pos)
        stmt.bases = [Starred(bases)]
        body = stmt.fn

        def note(method: Any) -> list[Stmt]:
            namespace = body.new_temp()
            return [Assign((namespace,), Call(Const(builtins.locals, pos), [], []), pos),
                    Assign((), Call(Const(method, pos), [namespace], []), pos)]

        body.body[:0] = note(classes.body_begins)
        body.body.extend(note(classes.body_ends))
        return [found]

    def _guard(self, stmt: Assign, compact: bool) -> list[Stmt] | None:
        """The statements replacing ``stmt`` (None: it is not an implicit call). In
        ``compact`` code (which must stay an expression), an operand cannot be read three
        times (type check, native operation, slow path), so there the operation always
        calls ``implicit`` (which itself takes the native path for builtin types)."""
        found = self._slow_path(stmt)
        if found is None:
            return None
        checked, slow_fn, slow_args, native, plain = found
        return _guarded(self.scope, stmt, checked, slow_fn, slow_args, native, compact,
                        self.known, plain)

    def _slow_path(self, stmt: Assign) -> tuple[list[Operand], Any, list[Operand],
                                                 ClassSet, Any] | None:
        """For an implicit call: the operands whose types decide, the function to call
        when one is not native and its arguments, the native types, and (for attribute
        access) the function telling whether the native operation runs only C code anyway
        (called with the same arguments but the value)."""
        op = stmt.op
        pos = stmt.pos
        implicit = self.implicit
        attributes = implicit.attributes

        def name(attribute: str) -> Const:
            return Const(mangle(self.private, attribute), pos)

        types = self.attribute_types
        if isinstance(op, GetAttr) and stmt.id not in self.native_attributes:
            args = [op.obj, name(op.name)]
            return [op.obj], attributes.get, args, types, attributes.read_check
        if isinstance(op, SetAttr):
            args = [op.value, op.obj, name(op.name)]
            return [op.obj], attributes.set, args, types, attributes.write_check
        if isinstance(op, DelAttr):
            args = [op.obj, name(op.name)]
            return [op.obj], attributes.delete, args, types, attributes.delete_check
        native = self.native
        if isinstance(op, BinOp):
            return ([op.left, op.right], implicit.binary,
                    [Const(op.op, pos), op.left, op.right], native, None)
        if isinstance(op, InPlace):
            return ([op.target, op.value], implicit.inplace,
                    [Const(op.op, pos), op.target, op.value], native, None)
        if isinstance(op, UnaryOp) and op.op in _GUARDED_UNARY:
            return [op.operand], implicit.unary, [Const(op.op, pos), op.operand], native, None
        if isinstance(op, UnaryOp) and op.op == "not_":
            return [op.operand], implicit.negation, [op.operand], native, None
        if isinstance(op, Iter) and not op.is_async:
            return [op.value], implicit.loop, [op.value], native, None
        if isinstance(op, Compare) and op.op in ("in", "not_in"):
            method = implicit.contains if op.op == "in" else implicit.not_contains
            return [op.right], method, [op.left, op.right], native, None
        if isinstance(op, Compare) and op.op in _GUARDED_COMPARE:
            return ([op.left, op.right], implicit.compare,
                    [Const(op.op, pos), op.left, op.right], native, None)
        if isinstance(op, GetItem):
            return [op.obj], implicit.getitem, [op.obj, op.index], native, None
        if isinstance(op, SetItem):
            return [op.obj], implicit.setitem, [op.value, op.obj, op.index], native, None
        if isinstance(op, DelItem):
            return [op.obj], implicit.delitem, [op.obj, op.index], native, None
        if isinstance(op, Format):
            spec: list[Operand] = [op.spec] if op.spec is not None else []
            return ([op.value], implicit.formatted,
                    [op.value, Const(op.conversion, pos), *spec], native, None)
        return None


def _unchain(ir: FunctionIR, expression_only: set[int], compact: bool) -> set[int]:
    """Chained comparisons (``a < b < c``, lowered as an ``and`` of its links sharing the
    middle operand's temp) rewritten so that each comparison can be routed, with the truth
    tests CPython makes: one per link where the result is only tested (``if a < b < c:``,
    kept as an ``and``), and where it is a value, one per link and the consumer's own (an
    ``if`` per link assigning one temp: as an ``and`` inside another ``and``/``or``, the
    compiler would merge the two tests of a falsy link). A chain that must stay an
    expression (in a class body, a comprehension, a lambda, code that cannot hold
    statements) keeps its native comparisons: the ids of those comparisons are returned."""
    native: set[int] = set()
    for loc in list(locations(ir)):
        stmt = loc.stmt
        op = stmt.op if isinstance(stmt, Assign) else None
        if not (isinstance(op, BoolOp) and op.chain):
            continue
        assert isinstance(stmt, Assign)
        if compact or ir.kind in ("class", "comprehension", "lambda") or \
                id(stmt) in expression_only:
            # the middle operand, read by two links, would have to be a hidden local
            native.update(s.id for s in _chain_links(ir, op))
        elif op.in_test:
            op.chain = False
        else:
            result = stmt.results[0]
            first = Assign((result,), Copy(op.first), stmt.pos)
            inner: list[Stmt] = []
            outer: list[Stmt] = [first, If(result, inner, [], stmt.pos)]
            for index, region in enumerate(op.rest):
                inner.extend(region.body)
                inner.append(Assign((result,), Copy(region.value), stmt.pos))
                if index < len(op.rest) - 1:
                    deeper: list[Stmt] = []
                    inner.append(If(result, deeper, [], stmt.pos))
                    inner = deeper
            at = loc.block.index(stmt)
            loc.block[at:at + 1] = outer
    return native


def _chain_links(ir: FunctionIR, op: BoolOp) -> list[Stmt]:
    """The comparison statements of a chain."""
    links: list[Stmt] = []
    first = definitions(ir).get(op.first) if isinstance(op.first, Temp) else None
    if first is not None:
        links.append(first)
    for region in op.rest:
        links.extend(s for s in region.body if isinstance(s, Assign)
                     and isinstance(s.op, Compare))
    return links


#: operations whose result is always of a builtin type that runs no Python code
_BUILTIN_RESULTS = (BuildTuple, BuildList, BuildSet, BuildDict, JoinStr)


def _builtin_typed(defs: dict[Temp, Assign]) -> set[Temp]:
    """The temps of a scope whose value is a builtin container or string by construction
    (displays, f-strings, list/set/dict comprehensions): no guard needs to test them, and
    none keeps them alive in a hidden local."""
    return {temp for temp, stmt in defs.items()
            if isinstance(stmt.op, _BUILTIN_RESULTS) or (
                isinstance(stmt.op, MakeComprehension) and stmt.op.kind != "genexp")}


def _defined_by(defs: dict[Temp, Assign], operand: Operand,
                kind: type | tuple[type, ...]) -> bool:
    """Whether ``operand`` is a temp computed by an operation of class ``kind``."""
    definition = defs.get(operand) if isinstance(operand, Temp) else None
    return definition is not None and isinstance(definition.op, kind)


def _guard_truth(ir: FunctionIR, test: Operand, pos: Pos, implicit: Any,
                 native: ClassSet, defs: dict[Temp, Assign], compact: bool,
                 known: set[Temp]) -> tuple[list[Stmt], Operand]:
    """Statements computing ``test``'s truth through ``implicit.truth`` unless its type is
    builtin, and the operand to test instead (a bool). ``compact``: one call of
    ``implicit.truth`` (see ``_guard``)."""
    if isinstance(test, Const):
        return [], test
    if _defined_by(defs, test, (Compare, BoolOp, UnaryOp)):
        return [], test  # bools in practice, or tests of their own (and/or)
    return _guard_operand(ir, test, pos, implicit.truth, native, compact, known)


def _guard_operand(ir: FunctionIR, operand: Operand, pos: Pos, slow: Any,
                   native: ClassSet, compact: bool, known: set[Temp]
                   ) -> tuple[list[Stmt], Operand]:
    """Statements computing ``operand`` if its type is in ``native``, else ``slow(operand)``,
    and the operand holding the result. ``compact``: always ``slow(operand)``. Operands
    in ``known`` are builtin-typed by construction and need no guard."""
    if (isinstance(operand, Const) and type(operand.value) in native) or operand in known:
        return [], operand
    if compact:
        result = ir.new_temp()
        return [Assign((result,), Call(Const(slow, pos), [operand], []), pos)], result
    guard, ok = _type_test(ir, operand, native, pos)
    value, other = ir.new_temp(), ir.new_temp()
    guard.append(Assign((value,), IfExp(ok, Region([], operand), Region(
        [Assign((other,), Call(Const(slow, pos), [operand], []), pos)], other)), pos))
    return guard, value


def _type_test(ir: FunctionIR, operand: Operand, native: ClassSet, pos: Pos
               ) -> tuple[list[Stmt], Temp]:
    """Statements testing ``type(operand) in native``, and the temp holding the result."""
    kind, ok = ir.new_temp(), ir.new_temp()
    return [Assign((kind,), Call(Const(_type, pos), [operand], []), pos),
            Assign((ok,), Compare("in", kind, Const(native, pos)), pos)], ok


def _guarded(ir: FunctionIR, stmt: Assign, checked: list[Operand], slow_fn: Any,
             slow_args: list[Operand], native: ClassSet, compact: bool,
             known: set[Temp], plain: Any = None) -> list[Stmt] | None:
    """``stmt`` as its native operation when the types of ``checked`` are all in
    ``native``, else ``slow_fn(*slow_args)`` (None: no operand needs a test). ``plain``
    (one checked operand): a function that, given ``slow_args`` without a value, tells
    whether the native operation runs only C code, tested when the type is not native."""
    op = stmt.op
    pos = stmt.pos
    results = stmt.results
    # a constant of a builtin type needs no check
    checked = [o for o in checked if not (isinstance(o, Const) and type(o.value) in native)
               and o not in known]
    if not checked:
        return None
    if compact:
        stmt.op = Call(Const(slow_fn, pos), list(slow_args), [])
        return [stmt]

    def fresh() -> Temp:
        return ir.new_temp()

    def slow_stmt(results: tuple[Temp, ...]) -> Assign:
        return Assign(results, Call(Const(slow_fn, pos), list(slow_args), []), pos)

    def test(operand: Operand) -> tuple[list[Stmt], Temp]:
        prefix, ok = _type_test(ir, operand, native, pos)
        if plain is None:
            return prefix, ok
        # ``type(obj) in NATIVE or plain(obj, name)``, the result only tested
        answer, either = fresh(), fresh()
        plain_args = slow_args[1:] if isinstance(op, SetAttr) else slow_args
        asks = Region([Assign((answer,), Call(Const(plain, pos), list(plain_args), []),
                              pos)], answer)
        return [*prefix, Assign((either,), BoolOp("or", ok, [asks], in_test=True), pos)], either

    if not results:
        # a statement without a value (``obj[i] = v``, ``del obj[i]``): an ``if``
        native_branch: list[Stmt] = [stmt]
        for operand in reversed(checked):
            prefix, ok = test(operand)
            native_branch = [*prefix, If(ok, native_branch, [slow_stmt(())], pos)]
        return native_branch

    def slow_region() -> Region:
        result = fresh()
        return Region([slow_stmt((result,))], result)

    native_result = fresh()
    inner = Region([Assign((native_result,), op, pos)], native_result)
    for operand in reversed(checked):
        prefix, ok = test(operand)
        value = fresh()
        inner = Region([*prefix, Assign((value,), IfExp(ok, inner, slow_region()), pos)], value)
    stmt.op = Copy(inner.value)
    return [*inner.body, stmt]

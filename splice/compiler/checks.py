"""Use-site checks: a rewrite checks what it relies on where it relies on it.

An instance's guards (``splice.cache.guards``) are checked when it is entered. While it
runs, a callee may rebind a global, a class attribute, a method, a module attribute or a
closure cell, or swap a function's code; from then on inference's types no longer describe
what the code computes, and an instance cannot be left half-way. So every rewrite that
depends on types (a guarded direct call, a callee a ``typed`` hook replaced) runs behind a
check, made right before the rewritten call, of exactly what the rewrite relies on: the
callee is the object inference resolved, and each argument fits the abstract value the
rewrite was made for. Otherwise the call the program wrote runs::

    %r = call %f(%a, %b)         becomes     %t1 = %f is <callee>
                                             %t = %t1 and (%k = type(%a); %k is float)
                                             %r = <replacement>(%a, %b) if %t
                                                  else %f(%a, %b)

(a conditional expression, so generated code keeps the call where the program's expression
has it; each test after the first is computed only if those before it held, as ``and``
does; where the two paths are not single calls, an ``if`` statement).

The checks run no code of the program: ``is`` comparisons, ``type(x)``, and for the rare
abstract values that are not one class or one object, ``Abstract.accepts`` (which looks at
classes, and at constants and tuples item by item, never at a container's contents). The
callee of a direct call is specialised on exactly what the checks prove (:func:`checked`).
The types that inference gave the rest of the code are then only advice: a check that
fails takes the program's own path, so a rebinding while the instance runs can make it
slower, never wrong.

``type(x)`` is written ``x.__class__`` (which inference does not resolve, so both paths
stay live for it) until the calls of the IR have been routed through the dispatch table, so
that no plugin hook sees the checks' calls: :func:`finish` makes them ``type(x)``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from splice.compiler.proven import Proven, proven_classes
from splice.infer import lattice as L
from splice.ir.nodes import (
    Assign,
    BoolOp,
    Call,
    Compare,
    Const,
    Copy,
    FunctionIR,
    GetAttr,
    If,
    IfExp,
    Operand,
    Pos,
    Region,
    Starred,
    Stmt,
    Temp,
    Var,
)
from splice.ir.tools import locations
from splice.ir.typed_tools import Speculation
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Callees", "Checks", "callees_of", "checked", "finish", "guard_replaced_callees",
           "guarded"]

_DEFINITIONS = (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)


@dataclass
class Checks:
    """The placeholders of one instance's IR: statement id -> the function (``type``, or
    an abstract value's ``accepts``) its ``x.__class__`` becomes a call of."""

    calls: dict[int, Callable[[object], object]] = field(default_factory=dict)
    #: operands whose class no rebinding can change (``splice.compiler.proven``), for the IR
    #: checks are being made in
    proven: dict[Any, Proven] = field(default_factory=dict)

    def placeholder(self, result: Temp, operand: Operand, function: Callable[[object], object],
                    pos: Pos) -> Assign:
        """``result = operand.__class__``, made ``result = function(operand)`` by
        :func:`finish`."""
        read = Assign((result,), GetAttr(operand, "__class__"), pos)
        self.calls[read.id] = function
        return read


def checked(value: L.Abstract) -> L.Abstract:
    """What a use-site check of ``value`` proves: ``value`` itself, except that what a
    check does not look at is forgotten (allocation sites become the container's class, the
    elements of an iterator, range or generator are forgotten; plain value constants become
    their class). A callee instance specialised on ``checked(t)`` relies on nothing its
    caller's check does not establish."""
    if isinstance(value, L.Alloc):
        return L.Exact(value.cls)
    if isinstance(value, L.Elements):
        return L.Exact(value.cls)
    if isinstance(value, L.PartialTuple):
        return L.PartialTuple(checked(item) for item in value.items)
    if isinstance(value, L.Union):
        return L.join_all(checked(m) for m in value.members())
    if isinstance(value, L.Const) and L.is_value_constant(value.value):
        return L.Exact(type(value.value))
    return value


def _argument_test(ir: FunctionIR, operand: Operand, value: L.Abstract, pos: Pos,
                   checks: Checks) -> tuple[list[Stmt], Operand | None]:
    """Statements testing that ``operand`` fits ``value`` and the operand holding the result
    (None: nothing to check)."""
    if value is L.ANY or isinstance(operand, Const):
        return [], None  # anything fits; a literal is what it is
    proven = checks.proven.get(operand.name if isinstance(operand, Var) else operand)
    if proven is not None:
        # no rebinding can change it: inference's value holds (a class it proved; a
        # constant only if the value is computed from literals alone)
        if isinstance(value, L.Exact) and value.cls is proven.cls:
            return [], None
        if proven.determined and isinstance(value, L.Const) and \
                type(value.value) is proven.cls:
            return [], None
    result = ir.new_temp()
    if isinstance(value, L.Exact):
        kind = ir.new_temp()
        return [checks.placeholder(kind, operand, type, pos),
                Assign((result,), Compare("is_", kind, Const(value.cls, pos)), pos)], result
    if isinstance(value, L.Const) and (value.value is None or type(value.value) is bool
                                       or isinstance(value.value, _DEFINITIONS)):
        return [Assign((result,), Compare("is_", operand, Const(value.value, pos)), pos)], \
            result
    # not one class or one object: the lattice's own membership test (C calls aside, the
    # only Python code a check runs; it runs none of the program's)
    return [checks.placeholder(result, operand, value.accepts, pos)], result


def guarded(ir: FunctionIR, generic: list[Stmt], fast: list[Stmt],
            tests: list[tuple[Operand, L.Abstract]], checks: Checks, *,
            before: list[Stmt] | None = None, ready: list[Operand] | None = None
            ) -> list[Stmt]:
    """The statements replacing ``generic`` (the call the program makes): ``fast`` where
    each operand of ``tests`` fits its abstract value (and each bool of ``ready``, computed
    by ``before``, is true), else ``generic`` itself. The operands must be computed before
    (temps, constants; a name is read where the test is).

    When both end by assigning the same one result (a call), the choice is a conditional
    expression, ``%r = fast if test else generic``, not an ``if`` statement: generated code
    can then keep the call inside the expression that uses it (``s += f(x) * y`` stays an
    augmented assignment, as the program wrote it)."""
    pos = generic[-1].pos
    before = list(before or [])
    # each test with the statements computing it; a test after the first is computed only
    # if those before it held (its statements in the ``and``'s region, as CPython would
    # evaluate ``a and b``), so generated code can write the whole test as one expression
    parts: list[tuple[list[Stmt], Operand]] = [([], r) for r in ready or []]
    for operand, value in tests:
        made, result = _argument_test(ir, operand, value, pos, checks)
        if result is not None:
            parts.append((made, result))
        else:
            before.extend(made)
    if not parts:
        return fast
    before.extend(parts[0][0])
    test: Operand = parts[0][1]
    if len(parts) > 1:
        test = ir.new_temp()
        before.append(Assign((test,), BoolOp("and", parts[0][1],
                                             [Region(made, r) for made, r in parts[1:]],
                                             in_test=True), pos))
    chosen = _as_expression(ir, test, generic, fast)
    if chosen is not None:
        return [*before, chosen]
    return [*before, If(test, fast, generic, pos)]


def _as_expression(ir: FunctionIR, test: Operand, generic: list[Stmt], fast: list[Stmt]
                   ) -> Assign | None:
    """``%r = ifexp(test) fast else generic`` when both end by assigning ``%r`` alone (the
    last statement of each is then made to assign a temp of its own, the region's value);
    None otherwise."""
    last_fast, last_generic = fast[-1], generic[-1]
    if not (isinstance(last_fast, Assign) and isinstance(last_generic, Assign)
            and len(last_fast.results) == 1 and last_fast.results == last_generic.results
            and isinstance(last_fast.results[0], Temp)):
        return None
    result = last_fast.results[0]
    if any(isinstance(s, Assign) and result in s.results for s in [*fast[:-1], *generic[:-1]]):
        return None
    fast_value, generic_value = ir.new_temp(), ir.new_temp()
    fast_value.annotation = generic_value.annotation = result.annotation
    last_fast.results = (fast_value,)
    last_generic.results = (generic_value,)
    return Assign((result,), IfExp(test, Region(fast, fast_value),
                                   Region(generic, generic_value)), last_generic.pos)


def finish(ir: FunctionIR, checks: Checks) -> int:
    """Make the placeholders of ``ir`` real calls (after its calls were routed, so that the
    checks' own calls are not); returns how many were made."""
    if not checks.calls:
        return 0
    count = 0
    for loc in locations(ir):
        stmt = loc.stmt
        function = checks.calls.get(stmt.id)
        if function is not None and isinstance(stmt, Assign) and \
                isinstance(stmt.op, GetAttr):
            stmt.op = Call(Const(function, stmt.pos), [stmt.op.obj], [])
            count += 1
    return count


#: call statement id -> (the called operand, the callee inference resolved or None)
Callees = dict[int, tuple[Operand, object]]


def callees_of(ir: FunctionIR) -> Callees:
    """The called operand and resolved callee of every call of ``ir``, before the ``typed``
    hooks run (what :func:`guard_replaced_callees` compares with)."""
    found: Callees = {}
    for loc in locations(ir):
        stmt = loc.stmt
        if isinstance(stmt, Assign) and isinstance(stmt.op, Call):
            callee = stmt.op.callee
            if callee is None:
                annotation = stmt.op.func.annotation if isinstance(stmt.op.func, Temp) \
                    else None
                if isinstance(annotation, L.Const):
                    callee = annotation.value
            found[stmt.id] = (stmt.op.func, callee)
    return found


def guard_replaced_callees(ir: FunctionIR, before: Callees, checks: Checks,
                           argtypes: tuple[Any, ...], *, speculated_only: bool = False
                           ) -> list[str]:
    """Put a use-site check around each call whose callee a ``typed`` hook replaced by a
    constant (``TypedCall.callee = replacement``): the replacement runs where the program
    would call the callee inference resolved, with arguments of the abstract values the
    hook saw; else the program's call runs. The value called is a computed one (an
    attribute, a call's result) or a name (a local, a cell, a global), read by the check and
    again by the program's call. A replacement in code that must stay one expression (an
    ``except`` clause's type, a ``match`` guard) cannot be checked there and is undone.
    ``argtypes``: the instance's (its entry checks them). ``speculated_only`` (under world
    age): only the speculations (``TypedCall.speculate``), the callee checked only where
    inference did not resolve it (the instance's entry guards cover what it resolved).
    Returns one line per call."""
    from splice.compiler.route_calls import expression_statements

    done: list[str] = []
    expression_only = expression_statements(ir)
    checks.proven = proven_classes(ir, argtypes)
    temps = {t.id: t for loc in locations(ir) if isinstance(loc.stmt, Assign)
             for t in loc.stmt.results}
    for loc, stmt, func, resolved, expected in _replaced(ir, before):
        if speculated_only and expected is None:
            continue
        op = stmt.op
        assert isinstance(op, Call) and isinstance(op.func, Const)
        op.callee = op.func.value  # (what the fast path calls)
        callee = resolved if expected is None else expected.expected
        argtypes_expected = None if expected is None else expected.argtypes
        pos = stmt.pos
        # the called operand as this IR has it (a hook may have copied the IR): a value
        # computed before (an attribute, a call's result) or a name (a local, a cell, a
        # global: read by the test, then again by the generic call, with nothing of the
        # program's run in between)
        called: Temp | Var | None = temps.get(func.id) if isinstance(func, Temp) else \
            func if isinstance(func, Var) else None
        if called is None or id(stmt) in expression_only or (
                expected is not None and not _checkable(callee, op.args,
                                                        argtypes_expected)):
            op.func, op.callee = func, resolved
            done.append(f"line {pos.lineno}: replacement of {_name(callee)} undone (it "
                        "cannot be checked where it is called)")
            continue
        call = Call(called, list(op.args), list(op.keywords))
        call.callee = resolved
        generic: list[Stmt] = [Assign(stmt.results, call, pos)]
        if isinstance(called, Temp):
            # the generic call through a copy made in its own branch: the dispatch-table
            # lookup that routing puts right after the callee is computed stays there too
            again = ir.new_temp()
            call.func = again
            generic.insert(0, Assign((again,), Copy(called), pos))
        tests: list[tuple[Operand, L.Abstract]] = []
        # (under world age, a callee inference resolved is covered by the instance's entry
        # guards, as for a replacement that is not speculated: only what inference did not
        # resolve is checked here)
        if callee is not None and not (speculated_only and callee is resolved):
            tests.append((called, L.Const(callee)))
        if argtypes_expected is not None:  # (one class per positional argument)
            # (each a value: _checkable above)
            tests.extend((a, L.Exact(cls)) for a, cls in zip(op.args, argtypes_expected,
                                                                strict=True)
                         if not isinstance(a, Starred))
        else:
            tests.extend((a, _type_of(a)) for a in op.args if isinstance(a, (Temp, Const)))
        tests.extend((k.value, _type_of(k.value)) for k in op.keywords
                     if k.name is not None and isinstance(k.value, (Temp, Const)))
        index = loc.block.index(stmt)
        loc.block[index:index + 1] = guarded(ir, generic, [stmt], tests, checks)
        done.append(f"line {pos.lineno}: {_name(op.func.value)} instead of {_name(callee)}, "
                    "checked where it is called")
    return done


def world_age_callees(ir: FunctionIR, before: Callees) -> list[str]:
    """One line per call whose callee a ``typed`` hook replaced by a constant, for a
    plugin with ``world_age``: no use-site check (the instance's guards, checked when
    the call starts, cover what the hooks saw). Speculations are left out: they are
    checked where they are made (``guard_replaced_callees(..., speculated_only=True)``)."""
    return [f"line {stmt.pos.lineno}: {_name(stmt.op.func.value)} instead of "
            f"{_name(callee)}, checked when the call starts (world age)"
            for _, stmt, _, callee, expected in _replaced(ir, before)
            if expected is None and isinstance(stmt.op, Call)
            and isinstance(stmt.op.func, Const)]


def _replaced(ir: FunctionIR, before: Callees
              ) -> list[tuple[Any, Assign, Any, Any, Speculation | None]]:
    """(location, call statement, the callee operand before the hooks, the callee
    inference resolved, the callee a speculation expects or None) for each call whose
    callee a ``typed`` hook replaced by a constant; a list, so that its statements can be
    replaced while it is walked."""
    found: list[tuple[Any, Assign, Any, Any, Speculation | None]] = []
    for loc in list(locations(ir)):
        stmt = loc.stmt
        if not isinstance(stmt, Assign) or not isinstance(stmt.op, Call):
            continue
        original = before.get(stmt.id)
        op = stmt.op
        if original is None or not isinstance(op.func, Const):
            continue
        func, callee = original
        if type(op.callee) is Speculation:
            # speculated (``TypedCall.speculate``): what the replacement expects
            found.append((loc, stmt, func, callee, op.callee))
            continue
        if op.func.value is callee or (isinstance(func, Const) and func.value is callee):
            continue  # not replaced
        found.append((loc, stmt, func, callee, None))
    return found


def _checkable(callee: object, args: list[Any], classes: tuple[type, ...] | None) -> bool:
    """Whether a check can test what a speculation expects: not an object or a class the
    lattice does not hold (a class whose metaclass does not hash as ``type`` does), and,
    with classes for the arguments, each argument a value (not ``*x``) and a literal of
    that very class."""
    if not isinstance(L.Const(callee), L.Const):
        return False
    if classes is None:
        return True
    return all(isinstance(L.Exact(cls), L.Exact) and isinstance(a, (Temp, Var, Const)) and
               (not isinstance(a, Const) or type(a.value) is cls)
               for a, cls in zip(args, classes, strict=True))


def _type_of(operand: Operand) -> L.Abstract:
    if isinstance(operand, Temp) and isinstance(operand.annotation, L.Abstract):
        return operand.annotation
    return L.ANY


def _name(value: object) -> str:
    return str(getattr(value, "__qualname__", None) or value)

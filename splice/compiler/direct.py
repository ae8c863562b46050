"""Guarded direct calls of typed callee instances: the typed stages reach the call graph.

A call whose callee inference resolved to a Python function ``g`` (and whose argument types
it inferred) is compiled as a call of ``g``'s own code instance, specialised on those
argument types, behind a guard that falls back to the ordinary call::

    %r = call %g(x, y)          becomes     %r = <instance of g(float, int)>(x, y)
                                                     if <binding>.holder[0] is %g
                                                     else %g(x, y)

``holder[0]`` (of the instance's ``Binding`` to ``g``: instances are shared by function
objects of one code) is ``g`` while the callee instance is valid and a sentinel once it is
invalidated, which happens at once when ``g``'s ``__code__`` or defaults are replaced (the
audit hook of ``splice.cache.world``). So the guard makes the direct call exactly the call
the program makes: the same function object with the same code; a rebound name or a swapped
``__code__`` takes the generic path at once, even in a caller already running. (Reading
``g.__code__`` in the guard instead would raise an audit event on every call.) The
arguments' types were proven by inference for every execution the caller's own
specialisation admits, so the callee instance needs no argument check. The caller was
inferred with the callee as the context runs it, so typed passes in the callee must not have
widened its return type (``CodeInstance.preserves_return_type``), else the call stays
generic. Only simple calls are
made direct: all of ``g``'s positional parameters passed positionally (so no default is
read), no ``*args``/``**kwargs``/keyword-only parameters, no keywords or ``*`` at the call.
The owner must run ``g`` under the same plugins (``recurse``) and have no per-call hooks
and no intercept of ``g`` (a direct call would skip them). The caller relies on the callee
instance: it takes its guards and is invalidated with it.

A call of a function whose instance is being built stays an ordinary call, with one
exception: a function (not a generator or coroutine function) calling itself with arguments
of exactly the types its own instance is built for (``fib(n - 1)`` in ``fib(int)``). That
call runs the instance being built, through a holder made before it exists
(:class:`SelfCall`: ``[INVALID, None]``, filled by ``CodeInstance.bind`` once the instance
is made: ``[fn, its function]``), behind the same guard: ``holder[1](n - 1) if holder[0]
is fib else fib(n - 1)``. So recursion stays a Python-to-Python call, which CPython runs
without a C frame of its own, instead of going through the specializing entry each time.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import Any

from splice.cache.instances import INVALID
from splice.compiler.checks import Checks, checked, guarded
from splice.compiler.proven import proven_classes
from splice.errors import InterpreterError, UnsupportedError
from splice.infer.lattice import ANY, Abstract
from splice.ir.functions import describe
from splice.ir.nodes import (
    Assign,
    Call,
    Compare,
    Const,
    Copy,
    FunctionIR,
    GetItem,
    Starred,
    Stmt,
    Temp,
    Try,
)
from splice.ir.tools import locations
from splice.ir.typed_tools import type_of
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["MAX_DEPTH", "SelfCall", "apply_direct_calls", "direct_native_calls",
           "plan_direct_calls"]

#: how deep callee instances are built below one top-level compile
MAX_DEPTH = 8
_CO_SIMPLE_FLAGS = 0x04 | 0x08  # CO_VARARGS | CO_VARKEYWORDS
_CO_SUSPENDING = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable and async

_building = threading.local()


def _stack() -> list[types.CodeType]:
    stack: list[types.CodeType] | None = getattr(_building, "stack", None)
    if stack is None:
        stack = _building.stack = []
    return stack


class building:
    """Context manager: ``code`` is being built on this thread (recursion stops there)."""

    def __init__(self, code: types.CodeType) -> None:
        self.code = code

    def __enter__(self) -> None:
        _stack().append(self.code)

    def __exit__(self, *exc: object) -> None:
        _stack().pop()


class SelfCall:
    """A direct call of the instance being built, from its own code: ``holder`` is
    ``[INVALID, None]`` until :meth:`bind` (run once the instance exists) makes it ``[fn,
    the function running the instance for fn]``; the instance's invalidation sets item 0
    back to ``INVALID``, as for any binding."""

    def __init__(self, fn: types.FunctionType, argtypes: tuple[Abstract, ...]) -> None:
        self.fn = fn
        self.argtypes = argtypes
        self.holder: list[Any] = [INVALID, None]

    def bind(self, instance: Any) -> None:
        """Point the holder at ``instance``, the code instance now built for ``fn``."""
        instance.bind(self.fn, self.holder)


def _argument_type(value: Abstract) -> Abstract:
    """The type a callee is specialised on: what the call's check proves (plain value
    constants widen to their class, allocation sites and elements to the class; callables
    and other constants stay: ``splice.compiler.checks.checked``)."""
    return checked(value)


def _eligible(owner: Any, callee: Any) -> bool:
    if type(callee) is not types.FunctionType:
        return False
    code = callee.__code__
    if code.co_flags & _CO_SIMPLE_FLAGS or code.co_kwonlyargcount:
        return False
    module = callee.__module__ or ""
    if module == "splice" or module.startswith("splice."):
        return False
    if owner.hooked or callee in owner.intercepts:
        return False
    return bool(owner.decide(callee) == owner.plugins)


def plan_direct_calls(owner: Any, ir: FunctionIR,
                      compile_for: Callable[[types.FunctionType, tuple[Abstract, ...]], Any],
                      this: tuple[types.FunctionType, tuple[Abstract, ...]] | None = None
                      ) -> dict[int, Any]:
    """For each call statement of ``ir`` that can be made direct, the callee instance
    (built with ``compile_for(function, argtypes)``) bound to the callee, by statement
    id; for a call of ``this`` (the function being built and its argument types) with
    those same types, a :class:`SelfCall` (one for all of them)."""
    plan: dict[int, Any] = {}
    self_call: SelfCall | None = None
    stack = _stack()
    if len(stack) > MAX_DEPTH:
        return plan
    for loc in locations(ir):
        stmt = loc.stmt
        if not isinstance(stmt, Assign) or not isinstance(stmt.op, Call):
            continue
        op = stmt.op
        callee = op.callee
        if callee is None or op.keywords or any(isinstance(a, Starred) for a in op.args):
            continue
        if not _eligible(owner, callee):
            continue
        code = callee.__code__
        if len(op.args) != code.co_argcount:
            continue
        argtypes = tuple(_argument_type(type_of(a)) for a in op.args)
        if all(t is ANY for t in argtypes) and argtypes:
            continue  # nothing known: the generic path is as good
        if code in stack:
            # (not for a generator or coroutine function: its call only makes the object,
            # so the direct path saves only the entry's check, about what its guard and
            # hidden locals cost)
            if this is not None and callee is this[0] and argtypes == this[1] and \
                    not code.co_flags & _CO_SUSPENDING:
                self_call = self_call or SelfCall(callee, argtypes)
                plan[stmt.id] = self_call
            continue
        try:
            instance = compile_for(callee, argtypes)
        except (UnsupportedError, InterpreterError):
            # no instance: the ordinary call (the callee's entry decides what it runs)
            continue
        # the caller was inferred with the callee as the context runs it: the instance
        # (rewritten by typed passes) must return only what that was inferred to return
        if not instance.preserves_return_type:
            continue
        plan[stmt.id] = instance.bind(callee)
    return plan


def apply_direct_calls(ir: FunctionIR, plan: dict[int, Any], checks: Checks,
                       argtypes: tuple[Abstract, ...]) -> list[str]:
    """Rewrite the planned calls of ``ir`` into guarded direct calls (see the module
    docstring); a call a later pass changed (another callee, other arguments) is left as it
    is. ``argtypes``: the caller instance's (its entry checks them). Returns one line per
    call made direct."""
    done: list[str] = []
    if not plan:
        return done
    checks.proven = proven_classes(ir, argtypes)
    for loc in list(locations(ir)):
        stmt = loc.stmt
        binding = plan.get(stmt.id)
        if binding is None or not isinstance(stmt, Assign) or not isinstance(stmt.op, Call):
            continue
        op = stmt.op
        callee = binding.fn
        if op.callee is not callee or op.keywords or \
                len(op.args) != callee.__code__.co_argcount:
            continue
        pos = stmt.pos
        current = ir.new_temp()
        same = ir.new_temp()
        if isinstance(binding, SelfCall):
            # the instance being built: its function is in the holder once it exists
            function = ir.new_temp()
            item = GetItem(Const(binding.holder, pos), Const(1, pos))
            direct: list[Stmt] = [
                Assign((function,), item, pos),
                Assign(stmt.results, Call(function, list(op.args), [], native=True), pos)]
            specialized = binding.argtypes
        else:
            direct = [Assign(stmt.results, Call(Const(binding.function, pos), list(op.args),
                                                []), pos)]
            specialized = binding.instance.argtypes
        holder: list[Stmt] = [
            Assign((current,), GetItem(Const(binding.holder, pos), Const(0, pos)), pos),
            # (the holder read first, so generated code can inline it: ``holder[0] is g``)
            Assign((same,), Compare("is_", current, op.func), pos)]
        # the callee instance relies on its arguments fitting its specialisation: checked
        # here, since what inference proved may no longer hold (a definition rebound while
        # this instance runs)
        tests = [(arg, argtype) for arg, argtype in zip(op.args, specialized, strict=False)
                 if not isinstance(arg, Starred)]
        index = loc.block.index(stmt)
        loc.block[index:index + 1] = guarded(ir, [stmt], direct, tests, checks,
                                            before=holder, ready=[same])
        done.append(f"line {pos.lineno}: direct call of {describe(callee)}"
                    f"({', '.join(str(t) for t in specialized)})"
                    + (" (itself)" if isinstance(binding, SelfCall) else ""))
    return done


def direct_native_calls(owner: Any, ir: FunctionIR, targets: set[int] | None = None
                        ) -> list[str]:
    """Undo the table lookup of calls whose callee is a constant the owner calls natively
    (its entry is the object itself: no hook wraps it, no intercept takes it, ``recurse``
    declines it, such as FastMath's replacements), or one of ``targets`` (ids of callee
    instances' functions, called directly on purpose): ``@dispatch[@f](x)`` becomes
    ``@f(x)``. Run on routed IR; returns one line per call made direct."""
    targets = targets or set()
    table = owner.table
    fast = table.fast
    done: list[str] = []
    for loc in list(locations(ir)):
        stmt = loc.stmt
        lookup = _constant_lookup(stmt, table, fast)
        if lookup is None:
            continue
        result, callee = lookup
        if id(callee) in targets:
            native = True
        else:
            try:
                native = owner.enter(callee) is callee
            except Exception:  # resolving failed: keep the lookup (it fails the same way)
                native = False
            if native:
                done.append(f"line {stmt.pos.lineno}: direct call of {describe(callee)}")
        if not native:
            continue
        index = loc.block.index(stmt)
        loc.block[index] = Assign((result,), Copy(Const(callee, stmt.pos)), stmt.pos)
    return done


def _constant_lookup(stmt: Stmt, table: Any, fast: Any) -> tuple[Temp, Any] | None:
    """(result, callee) if ``stmt`` is the routing pass's lookup of a constant callee."""
    inner = stmt
    if isinstance(stmt, Try):
        if len(stmt.body) != 1 or stmt.orelse or stmt.finalbody:
            return None
        inner = stmt.body[0]
    if not isinstance(inner, Assign) or not isinstance(inner.op, GetItem):
        return None
    result = inner.result
    container, index = inner.op.obj, inner.op.index
    if result is None or not isinstance(container, Const) or \
            not isinstance(index, Const):
        return None
    # the ``try`` form looks up ``table.fast``; the plain form subscripts the table itself
    if container.value is not (fast if isinstance(stmt, Try) else table):
        return None
    return result, index.value

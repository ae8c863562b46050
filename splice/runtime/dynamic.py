"""Dynamic scope: a plugin's intercepts applied to the calls made while its ``run`` is
active, with everything else running as native code (``Plugin.dynamic_scope``).

A transformed context pays at every call site it routes, because any call might reach an
intercepted target. A plugin whose only hooks are ``@splice.intercept`` methods on Python
functions can instead pay where its targets are: while one of its runs is active, each
target's ``__code__`` is splice's copy of the target's own code with a prologue, at the
``def`` line, that reads a ``ContextVar``. When the current ``contextvars`` context is in
the plugin's scope, the call goes to the plugin's method (``recurse_call`` runs the
original body, in a frame of the original code); otherwise the body runs as before. No
other code is touched: callers run natively, and only calls of the targets pay.

The scope is the ``contextvars`` context's: calls made by the entry on this thread and by
asyncio tasks created under it; not other threads, and not generators created under it
and resumed after ``run`` returned (a transformed context keeps those). It reaches every
call of a target made in the scope, those that native code makes (``__eq__`` from a dict
lookup, a callback from a C library) included. The method receives the parameters as
bound: positional ones by position, keyword-only ones by keyword, defaults filled in.
Other threads calling a target while it is patched run its body after the prologue's one
read. The original ``__code__`` is restored when the last run using the target ends,
unless the program replaced it meanwhile (a replacement made while a run is active ends
the interception of that target for the rest of the run).
"""

from __future__ import annotations

import contextvars
import itertools
import types
import weakref
from typing import Any

from splice.compiler.constructors import CO_GENERATOR_LIKE, def_line
from splice.errors import SpliceError, UnsupportedError
from splice.forks import fork_safe_lock
from splice.hooks import Hooks, overrides
from splice.ir import lower
from splice.ir.assemble import compile_code, restore_nested_code
from splice.ir.compiled import CompiledCode, instantiate
from splice.ir.functions import describe
from splice.ir.hidden import substitute
from splice.ir.nodes import (
    Assign,
    Call,
    Compare,
    Const,
    DoubleSplat,
    GetAttr,
    If,
    Keyword,
    Operand,
    Return,
    Splat,
    Starred,
    Stmt,
    Var,
)
from splice.ir.stand_ins import stands_for
from splice.pristine import BUILTINS
from splice.runtime.scopes import ACTIVE, SCOPES

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


#: hooks a dynamically scoped plugin may not define: they need every call transformed
_CONTEXT_HOOKS = ("recurse", "prehook", "posthook", "overdub", "lowered", "typed",
                  "optimized", "specialize")
_counter = itertools.count()


class _Patched:
    """A target's code with the prologue, and the variable the prologue reads."""

    __slots__ = ("original", "code", "var")

    def __init__(self, original: types.CodeType, code: types.CodeType,
                 var: contextvars.ContextVar[Any]) -> None:
        self.original = original
        self.code = code
        self.var = var


class _Target:
    """A target while some run uses it: its patch, the function running the original
    body, and how many runs use it."""

    __slots__ = ("function", "patched", "body", "users")

    def __init__(self, function: types.FunctionType, patched: _Patched) -> None:
        self.function = function
        self.patched = patched
        self.body = instantiate(CompiledCode(patched.original, {}), function,
                                share_kwdefaults=True)
        self.users = 0


_lock = fork_safe_lock()
#: a patched function -> its target, while a run uses it (``recurse_call`` of a dynamically
#: scoped plugin reads the original body there; functions hash by identity): ``ACTIVE`` of
#: ``splice.runtime.scopes``
_built: weakref.WeakKeyDictionary[types.FunctionType, _Patched] = \
    weakref.WeakKeyDictionary()


def targets_of(plugin: Hooks) -> list[tuple[types.FunctionType, str]]:
    """The functions ``plugin`` intercepts, with the names of its intercepting methods,
    checked to suit a dynamic scope (a ``SpliceError`` saying what does not, and what to
    do instead)."""
    cls = type(plugin)
    advice = "set dynamic_scope = False to run it in a transformed context"
    for hook in _CONTEXT_HOOKS:
        if overrides(plugin, hook):
            raise SpliceError(f"{cls.__name__} has dynamic_scope = True and defines "
                              f"{hook}(): a dynamically scoped plugin may only intercept "
                              f"Python functions; {advice}")
    if plugin.interpreter is not None:
        raise SpliceError(f"{cls.__name__} has dynamic_scope = True and an interpreter: "
                          f"a dynamically scoped plugin infers nothing; {advice}")
    targets = []
    for target, name in cls._splice_intercepts.items():
        if type(target) is not types.FunctionType:
            raise SpliceError(f"{cls.__name__} has dynamic_scope = True and intercepts "
                              f"{describe(target)}, which is not a Python function (a "
                              f"dynamic scope patches its targets' code); {advice}")
        if target.__code__.co_flags & CO_GENERATOR_LIKE:
            raise SpliceError(f"{cls.__name__} has dynamic_scope = True and intercepts "
                              f"{describe(target)}, a generator or coroutine function (its "
                              f"code starts at the first resumption, not at the call); "
                              f"{advice}")
        targets.append((target, name))
    return targets


def run(plugin: Hooks, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call ``fn(*args, **kwargs)`` with ``plugin``'s intercepts in scope."""
    targets = targets_of(plugin)
    acquired: list[_Target] = []
    tokens: list[tuple[contextvars.ContextVar[Any], contextvars.Token[Any]]] = []
    try:
        for function, name in targets:
            target = _acquire(function)
            acquired.append(target)
            var = target.patched.var
            if var.get() is None:  # an outer scope intercepting it wins, as in composition
                tokens.append((var, var.set(getattr(plugin, name))))
        scope = SCOPES.set((*SCOPES.get(), plugin))
        try:
            return fn(*args, **kwargs)
        finally:
            SCOPES.reset(scope)
    finally:
        for var, token in reversed(tokens):
            var.reset(token)
        for target in acquired:
            _release(target)


def _acquire(function: types.FunctionType) -> _Target:
    with _lock:
        target = ACTIVE.get(function)
        if target is None:
            target = _Target(function, _patched(function))
            function.__code__ = target.patched.code
            ACTIVE[function] = target
        target.users += 1
        return target


def _release(target: _Target) -> None:
    with _lock:
        target.users -= 1
        if target.users:
            return
        function = target.function
        del ACTIVE[function]
        if function.__code__ is target.patched.code:
            function.__code__ = target.patched.original


def _patched(function: types.FunctionType) -> _Patched:
    """``function``'s code with the prologue (built once per code the function has)."""
    code = function.__code__
    known = _built.get(function)
    if known is not None and known.original is code:
        return known
    var: contextvars.ContextVar[Any] = contextvars.ContextVar(
        f"splice.dynamic.{function.__qualname__}", default=None)
    ir = None
    try:
        ir = lower(function)
        placeholder = f"\x00splice-dynamic-{next(_counter)}"
        ir.body[:0] = _prologue(ir, placeholder)
        compiled = compile_code(ir, function)
    except UnsupportedError as exc:
        raise SpliceError(f"dynamic_scope cannot intercept {describe(function)}: "
                          f"{exc.reason}; set dynamic_scope = False to run the plugin in a "
                          f"transformed context") from None
    finally:
        if ir is not None:
            ir.function = None  # codegen's reference cycles through the IR hold the function
    if compiled.code.co_freevars != code.co_freevars:  # pragma: no cover - no hidden cells
        raise SpliceError(f"dynamic_scope cannot intercept {describe(function)}: its "
                          "regenerated code needs other free variables")
    patched = substitute(restore_nested_code(compiled.code, code), {placeholder: var})
    stands_for(patched, code)  # still the source's code, for a context entered in the scope
    known = _built[function] = _Patched(code, patched, var)
    return known


def _prologue(ir: Any, var: str) -> list[Stmt]:
    """``if (method := var.get()) is not None: return method(<the parameters>)``, at the
    ``def`` line (the placeholder ``var`` becomes the variable)."""
    pos = def_line(ir)
    get, method, absent, result = (ir.new_temp() for _ in range(4))
    stmts: list[Stmt] = [
        Assign((get,), GetAttr(Const(var, pos), "get"), pos),
        Assign((method,), Call(get, [], []), pos),
        Assign((absent,), Compare("is_", method, Const(None, pos)), pos),
    ]
    call: list[Stmt] = []
    args: list[Operand | Starred] = []
    args.extend(Var(name, pos) for name in (*ir.args.posonly, *ir.args.args))
    if ir.args.vararg:
        splat = ir.new_temp()
        call.append(Assign((splat,), Splat(Var(ir.args.vararg, pos)), pos))
        args.append(Starred(splat))
    keywords = [Keyword(name, Var(name, pos)) for name in ir.args.kwonly]
    if ir.args.kwarg:
        mapping = ir.new_temp()
        call.append(Assign((mapping,), DoubleSplat(Var(ir.args.kwarg, pos)), pos))
        keywords.append(Keyword(None, mapping))
    call.append(Assign((result,), Call(method, args, keywords), pos))
    call.append(Return(result, pos))
    stmts.append(If(absent, [], call, pos))
    return stmts


"""The stages that infer types: argument loads, inference under the plugins' interpreter,
and inference again after the ``typed`` hooks.

Inference runs the abstract interpreter a plugin chose (``Plugin.interpreter``), or the one
of the compile under way on this thread (callee instances built for direct calls reuse the
caller's, whose cache already holds their inferences), or a fresh default one. When the
last compile using an interpreter on the thread ends, the interpreter forgets what it
learned (``using``): a plugin's, which lives as long as the plugin, holds no class or
function from one compile to the next. An interpreter a plugin chose that raises or
returns something other than an inference is an ``InterpreterError`` (the plugin's bug: a
context then runs the function without its typed stages); the default interpreter's
errors are splice's own and propagate as they are.

Inference always starts anew from the IR the stages give it, never from an inference the
interpreter cached earlier (that one was made from other IR: without the plugins' hooks or
the argument loads); other functions' inferences see the function as the context runs it
(the IR after the ``lowered`` hooks), never as the ``typed`` hooks rewrote it.
"""

from __future__ import annotations

import threading
import types
from typing import TYPE_CHECKING, Any

from splice.errors import InterpreterError
from splice.hooks import HookTable
from splice.ir.functions import describe
from splice.ir.nodes import Assign, Call, FunctionIR, Keyword, Load, Stmt, Temp, Var
from splice.ir.tools import locations, walk
from splice.pristine import BUILTINS

if TYPE_CHECKING:
    from splice.infer.lattice import Abstract

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Loaded", "infer_under", "interpreter_for", "load_call_arguments",
           "unload_call_arguments", "using"]


class _Compiling(threading.local):
    """The interpreters of the compiles under way on this thread, outermost first."""

    def __init__(self) -> None:
        self.interpreters: list[Any] = []


_current = _Compiling()


def interpreter_for(hooks: HookTable) -> Any:
    """The plugins' interpreter, or the default one of the compile under way on this
    thread (callee instances built for direct calls reuse the caller's, whose cache
    already holds their inferences), or a fresh default one."""
    from splice.infer import AbstractInterpreter

    chooser = hooks.chooser
    if chooser is not None:
        return chooser.interpreter
    compiling = _current.interpreters
    return compiling[-1] if compiling else AbstractInterpreter()


def _infer(fn: types.FunctionType, ir: FunctionIR, argtypes: tuple[Abstract, ...],
           interpreter: Any, *, keep: bool = True) -> Any:
    """Infer ``fn`` from ``ir`` for ``argtypes``: always anew, never an inference the
    interpreter cached earlier (it was made from other IR: without the plugins' hooks or
    the argument loads). ``AbstractInterpreter.lowered(fn)`` lowers ``fn`` itself; it is
    given ``ir`` instead, through its cache of lowered IR (keyed by function and code).
    ``keep``: leave ``ir`` there (the IR after the ``lowered`` hooks: callers inferred
    later see ``fn`` as the context runs it); else restore what was there (the IR after
    the ``typed`` hooks must not leak into other inferences). The interpreter's cache of
    inferences is restored either way."""
    lowered_cache = getattr(interpreter, "_lowered", None)
    cache = getattr(interpreter, "cache", None)
    if not isinstance(lowered_cache, dict) or not isinstance(cache, dict):
        if not keep:
            return None  # an interpreter without the default's caches: cannot re-infer
        return interpreter.infer(fn, argtypes)
    lowered_key = (fn, fn.__code__)
    key = interpreter.cache_key(fn, argtypes)
    saved_ir = lowered_cache.get(lowered_key)
    saved = cache.pop(key, None)
    lowered_cache[lowered_key] = ir
    try:
        return interpreter.infer(fn, argtypes)
    finally:
        if not keep:
            lowered_cache[lowered_key] = saved_ir
        cache.pop(key, None)
        if saved is not None:
            cache[key] = saved


def _reinfer(fn: types.FunctionType, ir: FunctionIR, argtypes: tuple[Abstract, ...],
             interpreter: Any) -> Any:
    """Infer ``ir`` as rewritten by the ``typed`` hooks, so that its values' types are
    those of the rewritten program (a replacement may return another type than the
    original callee); other functions' inferences keep seeing ``fn`` as the context runs
    it."""
    return _infer(fn, ir, argtypes, interpreter, keep=False)


def infer_under(hooks: HookTable, fn: types.FunctionType, ir: FunctionIR,
                 argtypes: tuple[Abstract, ...], interpreter: Any, *, again: bool = False
                 ) -> Any:
    """:func:`_infer` (``again``: :func:`_reinfer`), where an interpreter that a plugin
    chose and that raises or gives something other than an inference is an
    ``InterpreterError`` (a plugin's bug: a context then runs ``fn`` without its typed
    stages). The default interpreter's errors are splice's own and propagate as they are."""
    chooser = hooks.chooser  # (whose interpreter ``interpreter_for`` gave, if any)
    if chooser is None:
        return _reinfer(fn, ir, argtypes, interpreter) if again else \
            _infer(fn, ir, argtypes, interpreter)
    try:
        inference = _reinfer(fn, ir, argtypes, interpreter) if again else \
            _infer(fn, ir, argtypes, interpreter)
        if inference is None and again:
            return None  # without the default's caches: cannot re-infer (the caller says)
        typed = getattr(inference, "ir", None)
    except RecursionError:
        raise  # (the compile's own: ``UnsupportedError.recursion_limit`` says so)
    except Exception as exc:
        raise InterpreterError.raised(chooser, "interpreter", describe(fn), exc) from exc
    if not isinstance(typed, FunctionIR):
        raise InterpreterError.returned(chooser, "interpreter", describe(fn), inference,
                                        "its infer() returns a splice.infer.Inference")
    return inference


#: call statement id -> the (load statement id, temp id, name) inserted before it
Loaded = dict[int, list[tuple[int, int, Var]]]


def load_call_arguments(ir: FunctionIR) -> Loaded:
    """Give every name passed to a call its own ``load`` right before the call, so each
    argument is a temp carrying its inferred type (``splice.ir.typed_tools.type_of``).
    A name operand is read when its op runs, and nothing runs between the inserted load and
    the call, so this changes no behaviour; :func:`unload_call_arguments` undoes it before
    codegen wherever the loads are still right before their call."""
    inserted: Loaded = {}
    for loc in list(locations(ir)):
        stmt = loc.stmt
        if not isinstance(stmt, Assign) or not isinstance(stmt.op, Call):
            continue
        loads: list[Stmt] = []
        record: list[tuple[int, int, Var]] = []

        def load(operand: Any, loads: list[Stmt] = loads,
                 record: list[tuple[int, int, Var]] = record, pos: Any = stmt.pos) -> Any:
            if not isinstance(operand, Var):
                return operand
            temp = ir.new_temp()
            assign = Assign((temp,), Load(operand), pos)
            loads.append(assign)
            record.append((assign.id, temp.id, operand))
            return temp

        op = stmt.op
        op.args = [load(a) for a in op.args]
        op.keywords = [Keyword(k.name, load(k.value)) for k in op.keywords]
        if loads:
            index = loc.block.index(stmt)
            loc.block[index:index] = loads
            inserted[stmt.id] = record
    return inserted


def unload_call_arguments(ir: FunctionIR, inserted: Loaded) -> int:
    """Put back the name operands :func:`load_call_arguments` replaced, where the loads are
    still right before their call and used by it alone. Returns how many were put back."""
    if not inserted:
        return 0
    uses: dict[int, int] = {}
    for stmt in walk(ir):
        for operand in stmt.operands():
            if isinstance(operand, Temp):
                uses[operand.id] = uses.get(operand.id, 0) + 1
        for region in stmt.regions():
            if isinstance(region.value, Temp):
                uses[region.value.id] = uses.get(region.value.id, 0) + 1
    count = 0
    for loc in list(locations(ir)):
        call = loc.stmt
        record = inserted.get(call.id)
        if record is None or not isinstance(call, Assign) or not isinstance(call.op, Call):
            continue
        index = loc.block.index(call)
        before = loc.block[max(0, index - len(record)):index]
        if [s.id for s in before] != [load_id for load_id, _, _ in record]:
            continue
        names = {temp_id: var for _, temp_id, var in record}
        mentioned = [o.id for o in call.op.operands()
                     if isinstance(o, Temp) and o.id in names]
        if sorted(mentioned) != sorted(names) or any(uses.get(t) != 1 for t in names):
            continue

        def back(operand: Any, names: dict[int, Var] = names) -> Any:
            if isinstance(operand, Temp) and operand.id in names:
                return names[operand.id]
            return operand
        call.op.map_operands(back)
        del loc.block[index - len(record):index]
        count += len(record)
    return count


class using:
    """``with using(interpreter):`` the interpreter of the compile under way on this thread
    (what :func:`interpreter_for` gives callee instances built meanwhile). When the last
    compile using it on this thread ends, the interpreter forgets what it learned
    (``AbstractInterpreter.forget``): a plugin's interpreter lives as long as the plugin,
    and would otherwise hold every class and function it ever looked at. Compiles run one
    at a time (``splice.cache.instances._lock``), so no other thread's is under way."""

    def __init__(self, interpreter: Any) -> None:
        self.interpreter = interpreter

    def __enter__(self) -> None:
        _current.interpreters.append(self.interpreter)

    def __exit__(self, *exc: object) -> None:
        compiling = _current.interpreters
        compiling.pop()
        if all(other is not self.interpreter for other in compiling):
            forget = getattr(self.interpreter, "forget", None)  # (a plugin's may lack it)
            if forget is not None:
                forget()

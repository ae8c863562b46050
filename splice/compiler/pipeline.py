"""Building a code instance: the typed pipeline (docs/architecture.md) for one specialization
and owner.

::

    lower (cached) -> plugin.lowered -> load call arguments -> infer (plugin.interpreter)
      -> plugin.typed -> infer again (if there were typed hooks) -> optimize, plan direct
      calls (callee instances built) -> plugin.optimized -> put call arguments back
      -> guarded direct calls -> route calls through the owner's table -> codegen

Each stage's hooks run for every plugin of the owner's context, outermost first; a hook
rewrites the IR in place or returns new IR. Calls not made direct go through the owner's
dispatch table, as in code the context transforms, so everything the instance reaches runs
under the plugin (with the plugin's ``recurse`` deciding per callee). docs/instances.md
explains each step.

``build_instance(owner, fn, argtypes, key)`` is the entry point a context can call; it
does not cache (``splice.compile`` does).
"""

from __future__ import annotations

import functools
import threading
import time
import types
import weakref
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splice.cache.guards import AttributeGuard, CellGuard, FunctionGuard, GlobalGuard, Guard
from splice.cache.headroom import with_headroom
from splice.cache.instances import (
    SELF,
    CodeInstance,
    Specialization,
    _lock,
    cache_of,
    defaults_of,
)
from splice.cache.world import add_backedge
from splice.compiler.checks import (
    Checks,
    callees_of,
    finish,
    guard_replaced_callees,
    world_age_callees,
)
from splice.compiler.direct import apply_direct_calls, building, plan_direct_calls
from splice.compiler.lowered import lowered as lowered_ir_of
from splice.compiler.optimize import optimize
from splice.errors import InterpreterError, SpliceError, UnsupportedError
from splice.hooks import HookTable
from splice.ir.assemble import CompiledCode, compile_code, restore_nested_code
from splice.ir.nodes import (
    Assign,
    Call,
    Copy,
    FunctionIR,
    GetItem,
    Keyword,
    Load,
    Stmt,
    Temp,
    Try,
    Var,
)
from splice.ir.nodes import Const as ConstOperand
from splice.ir.source import describe
from splice.ir.tools import locations, walk

if TYPE_CHECKING:
    from splice.infer.lattice import Abstract

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["build_instance", "builder_of", "compile_for", "edge_guards"]


def _argtypes(fn: types.FunctionType, argtypes: tuple[Any, ...]) -> tuple[Abstract, ...]:
    from splice.infer.lattice import abstract

    code = fn.__code__
    if len(argtypes) > code.co_argcount:
        raise TypeError(f"{fn.__qualname__}() has {code.co_argcount} positional parameters, "
                        f"{len(argtypes)} argument types were given")
    return tuple(abstract(t) for t in argtypes)


_current = threading.local()


def _interpreter(hooks: HookTable) -> Any:
    """The plugins' interpreter, or the default one of the compile under way on this
    thread (callee instances built for direct calls reuse the caller's, whose cache
    already holds their inferences), or a fresh default one."""
    from splice.infer import AbstractInterpreter

    chooser = hooks.chooser
    if chooser is not None:
        return chooser.interpreter
    current = getattr(_current, "interpreter", None)
    return AbstractInterpreter() if current is None else current


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


def _infer_under(hooks: HookTable, fn: types.FunctionType, ir: FunctionIR,
                 argtypes: tuple[Abstract, ...], interpreter: Any, *, again: bool = False
                 ) -> Any:
    """:func:`_infer` (``again``: :func:`_reinfer`), where an interpreter that a plugin
    chose and that raises or gives something other than an inference is an
    ``InterpreterError`` (a plugin's bug: a context then runs ``fn`` without its typed
    stages). The default interpreter's errors are splice's own and propagate as they are."""
    chooser = hooks.chooser  # (whose interpreter ``_interpreter`` gave, if any)
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


def walk_edges(inference: Any) -> Iterator[Any]:
    """The edges of an inference and of its callees' inferences, each once."""
    seen: set[int] = set()
    stack = [inference]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield from getattr(current, "edges", ())
        callees = getattr(current, "callee_inferences", None) or ()
        stack.extend(callees.values() if isinstance(callees, dict) else callees)


@dataclass
class _Reliance:
    """What an instance's inferences relied on, sorted by how it is checked."""

    guards: list[Guard] = field(default_factory=list)
    #: Python functions whose code or defaults were used (backedges)
    callees: list[Any] = field(default_factory=list)
    #: the builder's own cells read: (free variable index, object or SELF)
    cells: list[tuple[int, Any]] = field(default_factory=list)
    #: whether the builder's own defaults were read (it called itself)
    own_defaults: bool = False


def _reliance(edges: list[Any], builder: types.FunctionType) -> _Reliance:
    found = _Reliance()
    seen: set[tuple[str, int, Any]] = set()
    code = builder.__code__
    for edge in edges:
        kind, target, name = edge.kind, edge.target, getattr(edge, "name", None)
        marker = (kind, id(target), name)
        if marker in seen:
            continue
        seen.add(marker)
        if kind == "callee":
            if target is builder:
                found.own_defaults = True  # it called itself: _bind read its defaults
            else:
                found.callees.append(target)
        elif kind == "global" and isinstance(target, dict) and isinstance(name, str):
            found.guards.append(GlobalGuard.now(target, name))
        elif kind == "attribute" and isinstance(name, str):
            found.guards.append(AttributeGuard.now(target, name))
        elif kind == "cell" and isinstance(name, str):
            index = target.__code__.co_freevars.index(name)
            cell = target.__closure__[index]
            if target is builder:
                content = cell.cell_contents
                found.cells.append((index, SELF if content is builder else content))
            else:
                found.guards.append(CellGuard.now(cell, name))
    assert all(index < len(code.co_freevars) for index, _ in found.cells)
    return found


def edge_guards(edges: list[Any], fn: types.FunctionType) -> list[Guard]:
    """Guards for everything ``edges`` (of an inference of ``fn``) rely on, checkable at
    any later time: bindings, ``fn``'s own cells, the callees' code and defaults."""
    reliance = _reliance(edges, fn)
    guards = list(reliance.guards)
    freevars, closure = fn.__code__.co_freevars, fn.__closure__ or ()
    for index, _ in reliance.cells:
        guards.append(CellGuard.now(closure[index], freevars[index]))
    guards.extend(FunctionGuard.now(f) for f in [fn, *reliance.callees]
                  if isinstance(f, types.FunctionType))
    return guards


def builder_of(fn: types.FunctionType, *, cell_free: bool = False) -> types.FunctionType:
    """The function an instance for ``fn`` is inferred and compiled from: ``fn`` itself if
    it is not a closure, else a copy of ``fn`` with its own cells holding only what
    inference reads from cells (functions and classes; a cell holding ``fn`` holds the
    copy), so the instance keeps neither ``fn`` nor what ``fn`` captured. ``cell_free``:
    every cell empty (inference reads nothing from them; the instance fits every function
    object of the code)."""
    code = fn.__code__
    if not code.co_freevars:
        return fn
    closure = fn.__closure__ or ()
    cells: list[types.CellType] = []
    itself: list[types.CellType] = []
    for cell in closure:
        try:
            content = cell.cell_contents
        except ValueError:
            content = None
        if cell_free or not isinstance(content, (types.FunctionType, type)):
            cells.append(types.CellType())
        elif content is fn:
            cells.append(types.CellType())
            itself.append(cells[-1])
        else:
            cells.append(types.CellType(content))
    builder = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                                 tuple(cells))
    for cell in itself:
        cell.cell_contents = builder
    builder.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    builder.__qualname__ = fn.__qualname__
    builder.__module__ = fn.__module__
    builder.__doc__ = fn.__doc__
    builder.__annotations__ = dict(fn.__annotations__)
    return builder


def build_instance(owner: Any, fn: types.FunctionType, argtypes: tuple[Abstract, ...],
                   key: Hashable = None, *, cell_free: bool = False) -> CodeInstance:
    """Run the pipeline for ``fn`` specialized on ``argtypes`` (and ``key``) under
    ``owner`` (a ``Context``). Raises ``UnsupportedError`` if ``fn`` cannot be lowered or
    compiled. ``cell_free``: infer without reading ``fn``'s closure cells (see
    :func:`builder_of`). The stages see ``builder_of(fn)`` as ``ir.function``."""
    times: dict[str, float] = {}
    plugins: tuple[Any, ...] = owner.plugins
    start = time.perf_counter()
    lowered = lowered_ir_of(fn)
    if isinstance(lowered, UnsupportedError):
        raise lowered
    builder = builder_of(fn, cell_free=cell_free)
    staged = lowered.copy()
    staged.function = builder
    staged = owner.hooks.run_stage("lowered", staged, describe(fn))
    lowered_ir = staged.copy()
    loaded = load_call_arguments(staged)
    times["lower"] = time.perf_counter() - start

    start = time.perf_counter()
    interpreter = _interpreter(owner.hooks)
    outer_interpreter = getattr(_current, "interpreter", None)
    _current.interpreter = interpreter
    try:
        return _build(owner, fn, builder, argtypes, key, plugins, staged, lowered_ir,
                      loaded, interpreter, times, start)
    finally:
        _current.interpreter = outer_interpreter


def _build(owner: Any, fn: types.FunctionType, builder: types.FunctionType,
           argtypes: tuple[Abstract, ...], key: Hashable, plugins: tuple[Any, ...],
           staged: FunctionIR, lowered_ir: FunctionIR, loaded: Loaded, interpreter: Any,
           times: dict[str, float], start: float) -> CodeInstance:
    """The stages after lowering (see :func:`build_instance`), on ``builder``."""
    inference = _infer_under(owner.hooks, builder, staged, argtypes, interpreter)
    first_inference = inference
    typed: FunctionIR = inference.ir
    typed.function = builder
    times["infer"] = time.perf_counter() - start

    start = time.perf_counter()
    checks = Checks()
    typed_hooks = owner.hooks.stages["typed"]
    before = callees_of(typed) if typed_hooks else {}
    typed = owner.hooks.run_stage("typed", typed, describe(fn))
    if not typed_hooks:
        replaced: list[str] = []
    elif any(getattr(plugin, "world_age", False) for plugin in plugins):
        replaced = world_age_callees(typed, before)
    else:
        replaced = guard_replaced_callees(typed, before, checks, argtypes)
    times["passes"] = time.perf_counter() - start
    if typed_hooks:
        start = time.perf_counter()
        again = _infer_under(owner.hooks, builder, typed, argtypes, interpreter, again=True)
        if again is None:
            raise SpliceError(f"cannot infer {describe(fn)} again after its typed hooks: "
                              f"the interpreter {type(interpreter).__name__} lacks the "
                              "caches of AbstractInterpreter")
        inference = again
        typed = inference.ir
        typed.function = builder
        times["infer"] += time.perf_counter() - start
    start = time.perf_counter()
    typed_ir = typed.copy()
    optimizations = [*replaced, *optimize(typed)]
    times["passes"] += time.perf_counter() - start
    with building(fn.__code__):
        plan = plan_direct_calls(owner, typed, functools.partial(_callee_instance, owner))
    start = time.perf_counter()
    optimized = owner.hooks.run_stage("optimized", typed, describe(fn))
    unload_call_arguments(optimized, loaded)
    optimizations.extend(apply_direct_calls(optimized, plan, checks, argtypes))
    optimized_ir = optimized.copy()
    times["passes"] += time.perf_counter() - start

    start = time.perf_counter()
    targets = {id(binding.function) for binding in plan.values()}
    routed, compiled, direct = _codegen(owner, optimized, builder, targets, checks)
    optimizations.extend(direct)
    times["codegen"] = time.perf_counter() - start

    edges = list(dict.fromkeys([*walk_edges(first_inference), *walk_edges(inference)]))
    reliance = _reliance(edges, builder)
    guards, callees = reliance.guards, reliance.callees
    for binding in plan.values():
        # the caller runs the callee instance directly: it relies on its guards too
        callee_instance, callee = binding.instance, binding.fn
        guards.extend(g for g in callee_instance.guards if g not in guards)
        for index, expected in callee_instance.cells:
            guards.append(CellGuard(callee.__closure__[index], "", callee
                                    if expected is SELF else expected))
        callees.append(callee)
    ci = CodeInstance(
        specialization=Specialization(fn.__code__, argtypes, key), owner=owner,
        builder=builder, function=fn, lowered=lowered_ir, typed=typed_ir,
        optimized=optimized_ir, routed=routed, code=compiled,
        return_type=inference.return_type, edges=tuple(edges),
        cells=tuple(reliance.cells),
        defaults=defaults_of(builder) if reliance.own_defaults else None,
        direct=list(plan.values()), untyped_return_type=first_inference.return_type,
        retyped=bool(typed_hooks), guards=tuple(guards), inference=inference, times=times,
        optimizations=optimizations)
    _connect(ci, fn, callees)
    return ci


def _connect(ci: CodeInstance, fn: types.FunctionType, callees: list[Any]) -> None:
    """Backedges: the instance is invalidated when ``fn`` or a callee it relied on changes
    (``__code__``, defaults; ``splice.invalidate``), and with the instances of its callees
    under the same owner."""
    ref = weakref.ref(ci)

    def drop_for(what: Any) -> Callable[[], None]:
        name = describe(what)

        def drop() -> None:
            live = ref()
            if live is not None:
                live.invalidate(f"{name} was redefined")
        return drop

    add_backedge(fn, drop_for(fn))
    cache = cache_of(ci.owner)
    for callee in callees:
        if callee is fn:
            continue
        try:
            add_backedge(callee, drop_for(callee))
        except TypeError:  # cannot be weakly referenced (a builtin)
            continue
        code = getattr(callee, "__code__", None)
        if isinstance(code, types.CodeType):
            for other in cache.of_code(code):
                other.add_dependent(ci)


def _codegen(owner: Any, ir: FunctionIR, fn: types.FunctionType, targets: set[int],
             checks: Checks) -> tuple[FunctionIR, CompiledCode, list[str]]:
    """Route the calls of ``ir`` through ``owner``'s table, make the use-site checks' type
    reads real (not routed: no hook sees them) and compile it (as ``Context._build`` does:
    the plain form if the ``try`` form cannot be an expression)."""
    fallback = ir.copy()
    routed = ir
    try:
        owner._route(routed, plain=False)
        finish(routed, checks)
        direct = direct_native_calls(owner, routed, targets)
        compiled = compile_code(routed, fn, comprehension_functions=True)
    except UnsupportedError:
        routed = fallback
        owner._route(routed, plain=True)
        finish(routed, checks)
        direct = direct_native_calls(owner, routed, targets)
        compiled = compile_code(routed, fn, comprehension_functions=True)
    code = restore_nested_code(compiled.code, fn.__code__)
    return routed, CompiledCode.of(code, compiled.hidden, fn.__code__.co_freevars), direct


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
        loc.block[index] = Assign((result,), Copy(ConstOperand(callee, stmt.pos)), stmt.pos)
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
    if result is None or not isinstance(container, ConstOperand) or \
            not isinstance(index, ConstOperand):
        return None
    # the ``try`` form looks up ``table.fast``; the plain form subscripts the table itself
    if container.value is not (fast if isinstance(stmt, Try) else table):
        return None
    return result, index.value


#: instances of one function under one owner before callers get its generic instance
MAX_SPECIALIZATIONS = 8


#: instances of one specialization for function objects that differ in what inference
#: read from them (cells, defaults) before one that reads no cell is built for all
MAX_VARIANTS = 4


def _callee_instance(owner: Any, function: types.FunctionType,
                     types_: tuple[Abstract, ...]) -> CodeInstance:
    """The instance a direct call runs (or a specializing entry uses): specialised on
    ``types_``, or the generic one (every argument ``Any``) once ``function``'s code has
    ``MAX_SPECIALIZATIONS`` instances of other specialisations."""
    cache = cache_of(owner)
    code = function.__code__
    found = cache.find(Specialization(code, types_), function)
    if found is not None and found.check():
        return found
    if types_ and len({ci.argtypes for ci in cache.of_code(code)} - {()}) >= \
            MAX_SPECIALIZATIONS:
        types_ = ()
    return _compile_owner(owner, function, types_)


def _compile_owner(owner: Any, function: types.FunctionType, types_: tuple[Abstract, ...],
                   key: Hashable = None, *, own: bool = False) -> CodeInstance:
    """The cached instance of ``function`` for ``types_`` under ``owner`` (shared with
    the other function objects of its code that fit it: ``CodeInstance.fits``), built if
    missing or no longer valid. ``own``: an instance built for ``function`` itself (its
    ``fn`` and ``compiled``: what ``splice.compile`` returns). Built with room on the
    stack (``splice.cache.headroom``: the lock is taken where the build runs)."""
    return with_headroom(_compile_owner_here, owner, function, types_, key, own)


def _compile_owner_here(owner: Any, function: types.FunctionType,
                        types_: tuple[Abstract, ...], key: Hashable, own: bool
                        ) -> CodeInstance:
    spec = Specialization(function.__code__, types_, key)
    cache = cache_of(owner)
    with _lock:
        found = cache.find(spec, function, own=own)
        if found is not None and found.check():
            return found
        cell_free = cache.variants(spec) >= MAX_VARIANTS
        try:
            ci = build_instance(owner, function, types_, key, cell_free=cell_free)
        except RecursionError:
            # on a fresh stack when the caller had little room: the limit itself is too
            # low for splice (docs/runtime.md, "Recursion limit")
            raise UnsupportedError.recursion_limit(describe(function)) from None
        cache.add(ci)
        return ci


def compile_for(owner: Any, fn: types.FunctionType, argtypes: tuple[Any, ...],
                key: Hashable = None) -> CodeInstance:
    """``splice.compile``'s instance: ``fn``'s for ``argtypes`` (classes, typing forms or
    abstract values) and ``key`` under ``owner``, cached, made for ``fn`` itself (its
    ``compiled`` made now, while ``fn`` is alive: ``invoke`` runs it)."""
    ci = _compile_owner(owner, fn, _argtypes(fn, argtypes), key, own=True)
    ci.compiled  # noqa: B018
    return ci

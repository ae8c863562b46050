"""Driving the pipeline: code for a context, code instances for an owner, and the cache of
instances.

``build_code(owner, fn)`` runs the stages every context runs (``splice.compiler.stages``:
lower, the ``lowered`` hooks, routing, codegen) and gives the code a context instantiates
for ``fn``. ``build_instance(owner, fn, argtypes, key)`` runs the typed stages too and wraps
the result in a ``CodeInstance``, with the guards and backedges of everything inference
relied on: the instance is invalidated when ``fn`` or a callee it relied on changes, and
with the instances of its callees. Calls not made direct go through the owner's dispatch
table, as in code the context transforms, so everything the instance reaches runs under the
plugin. docs/instances.md explains each stage.

Neither builder caches: contexts cache code per code object (``splice.cache.code_cache``),
and ``compile_for`` caches instances per owner and specialization, bounded by the owner's
``CompileParams``.
"""

from __future__ import annotations

import functools
import types
import weakref
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splice.cache.guards import (
    AttributeGuard,
    CellGuard,
    FunctionGuard,
    GlobalGuard,
    GlobalShapeGuard,
    Guard,
)
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
from splice.compiler.inference import interpreter_for, using
from splice.compiler.reporting import reporting
from splice.compiler.stages import CompileState, run_stages
from splice.errors import UnsupportedError
from splice.ir.compiled import CompiledCode
from splice.ir.functions import describe
from splice.ir.nodes import (
    FunctionIR,
)

if TYPE_CHECKING:
    from splice.infer.lattice import Abstract

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["build_code", "build_instance", "builder_of", "compile_for", "edge_guards",
           "ir_after", "make_instance", "reporting"]


def _argtypes(fn: types.FunctionType, argtypes: tuple[Any, ...]) -> tuple[Abstract, ...]:
    from splice.infer.lattice import abstract

    code = fn.__code__
    if len(argtypes) > code.co_argcount:
        raise TypeError(f"{fn.__qualname__}() has {code.co_argcount} positional parameters, "
                        f"{len(argtypes)} argument types were given")
    return tuple(abstract(t) for t in argtypes)


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
        elif kind == "global class" and isinstance(target, dict) and isinstance(name, str):
            found.guards.append(GlobalShapeGuard.now(target, name))
        elif kind == "attribute" and isinstance(name, str):
            found.guards.append(AttributeGuard.now(target, name))
        elif kind == "cell" and isinstance(name, str):
            index = target.__code__.co_freevars.index(name)
            cell = target.__closure__[index]
            if target is builder:
                content = cell.cell_contents
                found.cells.append((index, SELF if content is builder else content))
            else:
                found.guards.append(CellGuard.now(cell, name, target, index))
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
    """Run the pipeline (``splice.compiler.stages``, typed stages included) for ``fn``
    specialized on ``argtypes`` (and ``key``) under ``owner`` (a ``Context``). Raises
    ``UnsupportedError`` if ``fn`` cannot be lowered or compiled. ``cell_free``: infer
    without reading ``fn``'s closure cells (see :func:`builder_of`). The stages see
    ``builder_of(fn)`` as ``ir.function``."""
    builder = builder_of(fn, cell_free=cell_free)
    state = CompileState(owner, fn, builder, typed=True, argtypes=argtypes, key=key,
                         callee_instance=functools.partial(_callee_instance, owner),
                         keep=True, params=owner.params,
                         interpreter=interpreter_for(owner.hooks))

    def build() -> CodeInstance:
        with using(state.interpreter):
            run_stages(state)
        return _instance(owner, state)
    return reporting(owner, fn, build)


def build_code(owner: Any, fn: types.FunctionType,
               finish: Callable[[FunctionIR], FunctionIR] | None = None,
               routed: Callable[[FunctionIR], None] | None = None
               ) -> CompiledCode | UnsupportedError:
    """``fn``'s code transformed under ``owner`` without the typed stages (its lowered
    IR through the plugins' ``lowered`` hooks, routed, then through ``finish`` if given),
    or why it cannot be. ``routed``: given the IR the code was generated from (to store
    it: ``splice.runtime.stored_code``)."""
    state = CompileState(owner, fn, fn, finish=finish, params=owner.params)
    try:
        reporting(owner, fn, functools.partial(run_stages, state))
        if routed is not None:
            routed(state.current)
    except UnsupportedError as exc:
        return exc
    finally:
        # codegen leaves reference cycles through the IR: without this, ``fn`` (a
        # closure made in a loop) would live until the cycle collector ran
        for ir in (state.ir, state.unrouted):
            if ir is not None:
                ir.function = None
    assert state.compiled is not None
    return state.compiled


def ir_after(owner: Any, fn: types.FunctionType, until: str) -> FunctionIR:
    """``fn``'s IR after the stage ``until`` of the stages every context runs (``lower``,
    ``lowered``, ``route``, ``finish``; ``splice.compiler.stages.stage_names(False)``)
    under ``owner``. Raises ``UnsupportedError`` if ``fn`` cannot be compiled."""
    if until == "codegen":
        raise ValueError("codegen gives code, not IR: splice.code_python shows its source")
    state = CompileState(owner, fn, fn, params=owner.params)
    run_stages(state, until=until)
    return state.current


def _instance(owner: Any, state: CompileState) -> CodeInstance:
    """The code instance the stages made, with what it relies on (guards, backedges)."""
    fn, builder = state.fn, state.builder
    first_inference, inference = state.first_inference, state.inference
    edges = list(dict.fromkeys([*walk_edges(first_inference), *walk_edges(inference)]))
    reliance = _reliance(edges, builder)
    guards, callees = reliance.guards, reliance.callees
    for binding in state.plan.values():
        # the caller runs the callee instance directly: it relies on its guards too
        callee_instance, callee = binding.instance, binding.fn
        guards.extend(g for g in callee_instance.guards if g not in guards)
        for index, expected in callee_instance.cells:
            guards.append(CellGuard(callee.__closure__[index], "", callee
                                    if expected is SELF else expected, callee, index))
        callees.append(callee)
    assert state.compiled is not None
    return make_instance(
        owner, fn, Specialization(fn.__code__, state.argtypes, state.key),
        builder=builder, stages=state.kept, code=state.compiled,
        return_type=inference.return_type, edges=tuple(edges),
        cells=tuple(reliance.cells),
        defaults=defaults_of(builder) if reliance.own_defaults else None,
        direct=list(state.plan.values()), untyped_return_type=first_inference.return_type,
        retyped=state.retyped, guards=tuple(guards), callees=tuple(callees),
        inference=inference, times=state.times, optimizations=state.optimizations,
        self_calls=[(sc.fn, sc.holder) for sc in dict.fromkeys(state.self_calls.values())])


def make_instance(owner: Any, fn: types.FunctionType, spec: Specialization, *,
                  self_calls: list[tuple[types.FunctionType, list[Any]]],
                  **parts: Any) -> CodeInstance:
    """A ``CodeInstance`` of ``spec`` for ``fn`` under ``owner`` from its ``parts``
    (``CodeInstance``'s fields), connected to what it relies on: backedges to ``fn`` and
    its ``callees``, dependent on their instances under ``owner``, and the holders of its
    calls of itself (``self_calls``: the function each call's guard compares with, and
    the holder) bound to it. Built by the stages, or bound from what the owner keeps
    (``splice.runtime.instance_sharing``)."""
    ci = CodeInstance(specialization=spec, owner=owner, function=fn,
                      self_holders=tuple(holder for _, holder in self_calls), **parts)
    _connect(ci, fn, list(ci.callees))
    for callee, holder in self_calls:
        ci.bind(callee, holder)
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


def _callee_instance(owner: Any, function: types.FunctionType,
                     types_: tuple[Abstract, ...], key: Hashable = None) -> CodeInstance:
    """The instance a direct call runs (or a specializing entry uses): specialised on
    ``types_`` (and the runtime ``key``), or the generic one (every argument ``Any``) once
    ``function``'s code has ``max_specializations`` instances of other specialisations
    (``owner.params``)."""
    cache = cache_of(owner)
    code = function.__code__
    found = cache.find(Specialization(code, types_, key), function)
    if found is not None and found.check():
        return found
    too_often = cache.rebuilt_too_often(code, owner.params.max_rebuilds)
    if too_often is not None:
        # what its instances rely on keeps changing: built no more, wherever it is called
        # from (a caller's direct call takes the ordinary call, whose entry runs the
        # function without its typed stages: splice.runtime.specializing)
        raise UnsupportedError(describe(function), too_often)
    if types_ and len({ci.argtypes for ci in cache.of_code(code)} - {()}) >= \
            owner.params.max_specializations:
        types_ = ()
    return _compile_owner(owner, function, types_, key)


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
        # what another context of the owner built (splice.runtime.instance_sharing)
        shared = getattr(owner, "shared_instance", None)
        bound: CodeInstance | None = None if shared is None else reporting(
            owner, function, functools.partial(shared, function, spec))
        if bound is not None:
            cache.add(bound, built=False)
            return bound
        cell_free = cache.variants(spec) >= owner.params.max_variants
        try:
            ci = build_instance(owner, function, types_, key, cell_free=cell_free)
        except RecursionError:
            # on a fresh stack when the caller had little room: the limit itself is too
            # low for splice (docs/runtime.md, "Recursion limit")
            raise UnsupportedError.recursion_limit(describe(function)) from None
        cache.add(ci)
        if shared is not None:
            owner.keep_instance(ci)
        return ci


def compile_for(owner: Any, fn: types.FunctionType, argtypes: tuple[Any, ...],
                key: Hashable = None) -> CodeInstance:
    """``splice.compile``'s instance: ``fn``'s for ``argtypes`` (classes, typing forms or
    abstract values) and ``key`` under ``owner``, cached, made for ``fn`` itself (its
    ``compiled`` made now, while ``fn`` is alive: ``invoke`` runs it)."""
    ci = _compile_owner(owner, fn, _argtypes(fn, argtypes), key, own=True)
    ci.compiled  # noqa: B018
    return ci

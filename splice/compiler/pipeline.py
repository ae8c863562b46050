"""Driving the pipeline: code for a context, and code instances for an owner.

``build_code(owner, fn)`` runs the stages every context runs (``splice.compiler.stages``:
lower, the ``lowered`` hooks, routing, codegen) and gives the code a context instantiates
for ``fn``. ``build_instance(owner, fn, argtypes, key)`` runs the typed stages too and wraps
the result in a ``CodeInstance``, with the guards and backedges of everything inference
relied on: the instance is invalidated when ``fn`` or a callee it relied on changes, and
with the instances of its callees. Calls not made direct go through the owner's dispatch
table, as in code the context transforms, so everything the instance reaches runs under the
plugin. docs/instances.md explains each stage.

Neither builder caches: contexts cache code per code object (``splice.cache.code_cache``),
and ``splice.compiler.instances`` (the instance cache's driver, ``compile_for``) caches
instances per owner and specialization, bounded by the owner's ``CompileParams``; the
instances a build's direct calls run come from the owner (``owner.callee_instance``), so
this module needs nothing of that driver.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splice.cache.guards import (
    AttributeGuard,
    AttributeShapeGuard,
    CellGuard,
    FunctionGuard,
    GlobalGuard,
    GlobalShapeGuard,
    Guard,
)
from splice.cache.instances import (
    SELF,
    CodeInstance,
    Specialization,
    builder_of,
    defaults_of,
    make_instance,
)
from splice.compiler.inference import interpreter_for, using
from splice.compiler.reporting import reporting
from splice.compiler.stages import CompileState, run_stages
from splice.errors import UnsupportedError
from splice.ir.compiled import CompiledCode
from splice.ir.nodes import (
    FunctionIR,
)

if TYPE_CHECKING:
    from splice.infer.lattice import Abstract

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["build_code", "build_instance", "edge_guards", "ir_after", "reporting"]


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
        elif kind == "attribute class" and isinstance(name, str):
            found.guards.append(AttributeShapeGuard.now(target, name))
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


def build_instance(owner: Any, fn: types.FunctionType, argtypes: tuple[Abstract, ...],
                   key: Hashable = None, *, cell_free: bool = False) -> CodeInstance:
    """Run the pipeline (``splice.compiler.stages``, typed stages included) for ``fn``
    specialized on ``argtypes`` (and ``key``) under ``owner`` (a ``Context``). Raises
    ``UnsupportedError`` if ``fn`` cannot be lowered or compiled. ``cell_free``: infer
    without reading ``fn``'s closure cells (see :func:`builder_of`). The stages see
    ``builder_of(fn)`` as ``ir.function``."""
    builder = builder_of(fn, cell_free=cell_free)
    state = CompileState(owner, fn, builder, typed=True, argtypes=argtypes, key=key,
                         callee_instance=owner.callee_instance,
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



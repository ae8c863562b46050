"""Code instances shared by the contexts of one owner: made of a built instance, bound to
another context.

``share_instance(ci, context)`` turns an instance ``context`` built into what its owner
keeps (``splice.cache.shared_instances.SharedInstance``): the code's hidden cells as
``splice.runtime.sharing`` tells them apart, with the holders and functions of its direct
calls (``splice.compiler.direct``) named by the call they serve, since each context has its
own instances of the callees; the guards, backedges, types and the IR before routing as
they are. ``bind_instance(shared, context, fn)`` makes ``context``'s own ``CodeInstance`` of
it: each direct callee's instance is ``context``'s (found, bound the same way, or built),
bound to the callee function the call's guard compares with; its holder and function, new
holders for the instance's calls of itself, and the context's table, sites and plugin state
fill the code's cells; the instance is connected to what it relies on as a built one is
(``splice.cache.instances.make_instance``).

Soundness: see ``splice.cache.shared_instances``. In short, an owner's contexts build the
same code, so binding is building without the work, provided everything the build relied
on holds now: the shared instance's guards (checked by ``SharedInstances.find``), its
function guards (each callee still has the code and defaults it had), what the function
object binding it holds where inference read it (its globals, the closure cells inference
read, its defaults if read: ``SharedInstance.fits``, as ``CodeInstance.fits`` for function
objects of one code in one context), and its direct callees' instances, which must bind
(or be built) for exactly the specialization the build chose, else the context builds the
instance itself. The function's own code is the key the owner finds it by, so a function
whose ``__code__`` was replaced finds nothing.
"""

from __future__ import annotations

import functools
import threading
import types
import weakref
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

from splice.cache.guards import FunctionGuard
from splice.cache.instances import (
    INVALID,
    CodeInstance,
    Specialization,
    builder_of,
    make_instance,
)
from splice.cache.shared_code import StoredIR
from splice.cache.shared_instances import DirectCall, SharedInstance
from splice.cache.world import add_backedge
from splice.errors import UnsupportedError
from splice.ir.compiled import CompiledCode
from splice.pristine import BUILTINS
from splice.runtime.sharing import bind, share
from splice.runtime.stored_code import regenerate, restore_ir, store_ir

if TYPE_CHECKING:
    from splice.ir.nodes import FunctionIR

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["bind_instance", "share_instance"]

#: the stages whose IR is the same for every context (before routing)
_CONTEXT_FREE_STAGES = ("lowered", "typed")


def share_instance(ci: CodeInstance, context: Any) -> SharedInstance | None:
    """What the owner of ``context`` keeps of ``ci`` (built under ``context``), or None if
    it cannot be shared (the other contexts build their own)."""
    fn = ci.fn
    if fn is None or not ci.valid:
        return None
    made: dict[int, tuple[Any, ...]] = {}
    direct = []
    for index, binding in enumerate(ci.direct):
        callee = binding.holder[0]
        if callee is INVALID or not isinstance(callee, types.FunctionType):
            return None
        made[id(binding.holder)] = ("direct", index, "holder")
        made[id(binding.function)] = ("direct", index, "function")
        spec = binding.instance.specialization
        direct.append(DirectCall(callee, spec.argtypes, spec.key))
    for index, holder in enumerate(ci.self_holders):
        made[id(holder)] = ("self", index)
    code = share(ci.code, context, fn.__code__.co_freevars, made)
    if isinstance(code, UnsupportedError) or code.template is None:
        return None
    made[id(fn)] = made[id(ci.builder)] = ("function",)
    stored = _stored_stages(ci, context, made)
    shared = SharedInstance(
        argtypes=ci.argtypes, key=ci.specialization.key, globals=fn.__globals__, code=code,
        direct=tuple(direct), self_calls=len(ci.self_holders), guards=ci.guards,
        # (the callees': the function's own code is the entry's key, and a closure's
        # guard would keep the closure, and what it captured, alive)
        function_guards=tuple(FunctionGuard.now(f) for f in ci.callees
                              if isinstance(f, types.FunctionType) and f is not fn),
        callees=ci.callees, defaults=ci.defaults, cells=ci.cells,
        return_type=ci.return_type,
        untyped_return_type=ci.untyped_return_type, retyped=ci.retyped,
        stages={name: ci.stages[name] for name in _CONTEXT_FREE_STAGES if name in ci.stages},
        stored_ir=stored, optimizations=list(ci.optimizations), edges=ci.edges)
    _watch(shared, fn, ci.callees)
    ci.shared = shared
    return shared


def _stored_stages(ci: CodeInstance, context: Any, made: dict[int, tuple[Any, ...]]
                   ) -> dict[str, StoredIR]:
    """The IR of ``ci``'s stages as data with the objects of ``context`` and of the instance
    itself (``made``) left out as markers (``splice.runtime.stored_code``); a stage that
    cannot be stored is left out."""
    origin = ci.stages["lowered"].origin if "lowered" in ci.stages else None
    stored: dict[str, StoredIR] = {}
    for stage, ir in ci.stages.items():
        found = store_ir(ir, context, ci.specialization.code, made, origin)
        if found is not None:
            stored[stage] = found
    return stored


def _restore(shared: SharedInstance, context: Any, fn: types.FunctionType,
             objects: Mapping[Hashable, object], stage: str) -> FunctionIR | None:
    """The IR of ``stage`` of ``context``'s instance bound from ``shared`` (None if it was
    not kept)."""
    stored = shared.stored_ir.get(stage)
    return None if stored is None else restore_ir(stored, context, fn, objects)


def _cure(shared: SharedInstance, context: Any, fn: types.FunctionType,
          objects: dict[Hashable, object]) -> CompiledCode | None:
    """The code of a loaded instance whose stored code cannot be used here, generated from
    its stored routed IR under ``context`` (no inference, no hook: the IR is what they
    made); the shared instance takes it for the other contexts, and the entry on disk is
    written again. None if the IR cannot be made into code."""
    stored = shared.stored_ir.get("routed")
    compiled = None if stored is None else regenerate(stored, context, fn, objects)
    if compiled is None:
        return None
    why = shared.cure
    made = {id(value): key for key, value in objects.items()}
    code = share(compiled, context, fn.__code__.co_freevars, made)
    if not isinstance(code, UnsupportedError) and code.template is not None:
        shared.code, shared.cure = code, None
        context.owner.save_instance(fn, shared)
    context.note_cured(fn, why)
    return compiled


def _watch(shared: SharedInstance, fn: types.FunctionType, callees: tuple[Any, ...]) -> None:
    """Invalidate ``shared`` when ``fn`` or a callee changes (``splice.invalidate`` too),
    even while no context holds an instance bound from it."""
    ref = weakref.ref(shared)

    def drop() -> None:
        live = ref()
        if live is not None:
            live.invalidate("a function it relied on was redefined")
    for function in (fn, *callees):
        try:
            add_backedge(function, drop)
        except TypeError:  # cannot be weakly referenced (a builtin)
            continue


class _Binding(threading.local):
    """The shared instances being bound on this thread (a cycle of direct calls between
    them is built instead)."""

    def __init__(self) -> None:
        self.under_way: set[int] = set()


_BINDING = _Binding()


def bind_instance(shared: SharedInstance, context: Any, fn: types.FunctionType
                  ) -> CodeInstance | None:
    """``context``'s own instance of ``shared`` for ``fn`` (module docstring), or None if
    it cannot be bound (``context`` builds it)."""
    under_way = _BINDING.under_way
    if id(shared) in under_way or not shared.holds():
        return None
    under_way.add(id(shared))
    try:
        return _bind(shared, context, fn)
    finally:
        under_way.discard(id(shared))


def _bind(shared: SharedInstance, context: Any, fn: types.FunctionType) -> CodeInstance | None:
    from splice.compiler.instances import obtain

    bindings = []
    objects: dict[Hashable, object] = {}
    for index, call in enumerate(shared.direct):
        try:
            callee = obtain(context, call.callee, call.argtypes, call.key)
        except UnsupportedError:
            return None
        if callee.argtypes != call.argtypes or callee.specialization.key != call.key or \
                not callee.valid or not callee.preserves_return_type:
            return None
        binding = callee.bind(call.callee)
        bindings.append(binding)
        objects[("direct", index, "holder")] = binding.holder
        objects[("direct", index, "function")] = binding.function
    holders: list[list[Any]] = [[INVALID, None] for _ in range(shared.self_calls)]
    for index, holder in enumerate(holders):
        objects[("self", index)] = holder
    origin = "bound"
    if shared.code is None:
        code = _cure(shared, context, fn, objects)
        origin = "cured"
    else:
        code = bind(shared.code, context, objects)
    if code is None or not shared.holds():
        return None
    ci = make_instance(
        context, fn, Specialization(fn.__code__, shared.argtypes, shared.key),
        builder=builder_of(fn), stages=dict(shared.stages), code=code,
        return_type=shared.return_type,
        edges=shared.edges, defaults=shared.defaults, cells=shared.cells, direct=bindings,
        untyped_return_type=shared.untyped_return_type, retyped=shared.retyped,
        guards=shared.guards, callees=shared.callees,
        optimizations=list(shared.optimizations), origin=origin,
        restore=functools.partial(_restore, shared, context, fn, objects),
        self_calls=[(fn, holder) for holder in holders])
    ci.shared = shared
    shared.binds += 1
    return ci

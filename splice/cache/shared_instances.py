"""Code instances an owner keeps for every context of its configuration.

A code instance (``splice.cache.instances``) is built under one context: its code reads
that context's dispatch table and call sites, and its direct calls run the instances of its
callees that the same context built. What does not depend on the context is everything its
build decided: the specialization, the generated code with its hidden cells told apart
(``splice.runtime.sharing``'s template), the guards and backedges of what inference relied
on, the direct calls it makes (which callee, specialised on which types), the inferred
types and the IR of the stages before routing. A ``SharedInstance`` is that part; the owner
(``splice.cache.owners.Owner``) keeps one per specialization, and a context of the same
owner that needs the instance *binds* it (``splice.runtime.instance_sharing``): it makes a
``CodeInstance`` of its own whose code runs its own table and sites, whose direct calls run
its own instances of the same callees (bound the same way, recursively), with the same
guards. So a fresh plugin per run with an equal token builds nothing that an earlier one
built, and each still has its own state.

Soundness. A context whose owner key equals the builder's takes the same decisions at every
stage (the tokens name what the plugins' compile-time hooks read: ``Plugin.cache_token``),
so the code it would build is the code the owner keeps, given that what the build relied on
still holds. Binding checks that first: the shared instance is still valid (it is marked
invalid with the first of its bound instances that is invalidated, whatever the reason, and
when the function or a callee it relied on changes: its own backedges), each guard holds
now, and each direct callee's shared instance binds too. Anything else makes the context
build the instance itself, as without an owner.

What an owner keeps must not hold a context, a plugin or anything a plugin recorded (an
owner lives for the process). A ``SharedInstance`` holds the program's module namespaces,
the objects its guards and the closure cells it read expect (functions and classes, as any
instance does: ``splice.cache.instances.builder_of``) and, through the IR it keeps, the
function it was inferred from (a closure's copy holding those functions and classes only),
never the data a closure captured. The registry holds its entries weakly by code object,
so they go with the code; for a nested function, whose code lives as long as its enclosing
function's, it keeps at most ``CompileParams.max_variants`` instances of a specialization
for function objects whose cells hold other functions or classes, then one reading none.
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splice.cache.code_cache import ByCode
from splice.cache.guards import Guard
from splice.cache.shared_code import SharedCode, StoredIR
from splice.pristine import BUILTINS

if TYPE_CHECKING:
    from splice.ir.nodes import FunctionIR

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["DirectCall", "SharedInstance", "SharedInstances"]


@dataclass(frozen=True, slots=True)
class DirectCall:
    """A direct call a shared instance makes: the callee function (the object the program
    calls, which the call's guard compares with) and its instance's specialization."""

    callee: types.FunctionType
    argtypes: tuple[Any, ...]
    key: Hashable = None


@dataclass(eq=False)
class SharedInstance:
    """What every context of one owner can bind of a code instance (module docstring).

    ``code``'s template names, besides ``splice.runtime.sharing``'s kinds, the objects a
    bound instance makes itself: ``("direct", i, "holder" | "function")`` for the i-th
    direct call's binding, ``("self", i)`` for the i-th holder of the instance's calls of
    itself (``splice.compiler.direct.SelfCall``)."""

    argtypes: tuple[Any, ...]
    key: Hashable
    #: the namespace of the function's module (bound instances must run with it)
    globals: dict[str, Any]
    #: None until a loaded instance whose code could not be used is made again from its
    #: stored IR (``cure``)
    code: SharedCode | None
    direct: tuple[DirectCall, ...]
    self_calls: int
    guards: tuple[Guard, ...]
    #: the function and each callee still have the code and defaults they had
    function_guards: tuple[Guard, ...]
    #: Python functions whose code or defaults inference used (backedges)
    callees: tuple[Any, ...]
    defaults: Any
    #: the function's own closure cells inference read: (index, object or ``SELF``)
    cells: tuple[tuple[int, Any], ...]
    return_type: Any
    untyped_return_type: Any
    retyped: bool
    #: the IR kept after the stages before routing (``lowered``, ``typed``), shared by
    #: reference: nothing in it belongs to a context
    stages: dict[str, FunctionIR]
    #: the IR of every stage kept, as data with the context's objects left out as
    #: markers (``splice.runtime.instance_sharing``): a bound instance's listings, and
    #: what a loaded instance's code is made again from when it cannot be used
    stored_ir: dict[str, StoredIR]
    optimizations: list[str]
    edges: tuple[Any, ...]
    #: why a loaded instance's code could not be used (its code is then generated again
    #: from the stored routed IR when first bound, without inference), or None
    cure: str | None = None
    #: False once what it relied on changed (no context binds it again)
    valid: bool = True
    invalidated_because: str | None = None
    #: how many times a context bound it
    binds: int = 0
    _registry: Any = field(default=None, repr=False)
    _code: Any = field(default=None, repr=False)

    def holds(self) -> bool:
        """Whether a context may bind it now: still valid, every guard holding."""
        if not self.valid:
            return False
        for guard in (*self.guards, *self.function_guards):
            if not guard.holds():
                self.invalidate(f"{guard.describe()} changed")
                return False
        return True

    def invalidate(self, reason: str) -> None:
        """No context binds it any more (those that did invalidate their own instances)."""
        if not self.valid:
            return
        self.valid = False
        self.invalidated_because = reason
        registry = self._registry
        if registry is not None:
            registry.discard(self)

    def fits(self, fn: types.FunctionType, argtypes: tuple[Any, ...], key: Hashable) -> bool:
        """Whether it is ``fn``'s instance for ``argtypes`` and ``key`` (``fn``'s defaults
        as inference read them, if it did)."""
        if fn.__globals__ is not self.globals or self.argtypes != argtypes or \
                self.key != key:
            return False
        if self.cells:
            from splice.cache.instances import SELF

            closure = fn.__closure__ or ()
            for index, expected in self.cells:
                try:
                    content = closure[index].cell_contents
                except (IndexError, ValueError):
                    return False
                if content is not (fn if expected is SELF else expected):
                    return False
        if self.defaults is None:
            return True
        from splice.cache.instances import defaults_of

        return bool(defaults_of(fn) == self.defaults)


class SharedInstances:
    """An owner's shared instances, by code object (held weakly: they go with the code)."""

    def __init__(self) -> None:
        self._by_code: ByCode[list[SharedInstance]] = ByCode()
        self._lock = threading.Lock()
        #: how many were added (built by some context of the owner)
        self.added = 0

    def find(self, fn: types.FunctionType, code: types.CodeType, argtypes: tuple[Any, ...],
             key: Hashable) -> SharedInstance | None:
        """The valid shared instance of ``code`` that ``fn`` may bind for ``argtypes`` and
        ``key``, if there is one whose guards hold now."""
        for shared in list(self._by_code.get(code) or ()):
            if shared.fits(fn, argtypes, key) and shared.holds():
                return shared
        return None

    def add(self, code: types.CodeType, shared: SharedInstance, max_variants: int = 8
            ) -> bool:
        """Keep ``shared`` for ``code``, unless ``max_variants`` instances of its
        specialization are kept already (for function objects holding other cells: a
        closure made anew with other functions or classes in it); whether it was kept."""
        with self._lock:
            found = self._by_code.get(code)
            if found is None:
                found = []
                self._by_code[code] = found
            if sum(1 for other in found if other.argtypes == shared.argtypes and
                   other.key == shared.key) >= max_variants:
                return False
            found.append(shared)
            shared._registry, shared._code = self, weakref.ref(code)
            self.added += 1
            return True

    def discard(self, shared: SharedInstance) -> None:
        with self._lock:
            code = shared._code() if shared._code is not None else None
            found = None if code is None else self._by_code.get(code)
            if found is not None and shared in found:
                found.remove(shared)
                if not found and code is not None:
                    self._by_code.pop(code)

    def __len__(self) -> int:
        return sum(len(found) for found in self._by_code.values())

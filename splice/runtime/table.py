"""The dispatch table of a context: ``callee -> what to call instead``, resolved on first
use (``Context.resolve``) and swept so that it holds nothing the program dropped.

Generated code looks callees up here (``@dispatch[f](args)``), or in ``fast``, the same
entries in an exact ``dict`` for call sites that catch a missing key. Entries whose key
nothing else references are swept when the table has doubled since the last sweep and at
every full collection; a nested function whose entry does not hold it (its rebuilt copy, a
C entry holding it weakly) is keyed weakly (``splice.runtime.weakkeys``), so its entry goes
when the program drops it; classes
defined in Python are dropped before each full collection (a class is part of reference
cycles, so an entry would keep it alive for good). Entries are made again on demand.
"""

from __future__ import annotations

import functools
import gc
import sys
import types
import weakref
from typing import Any

from splice.compiler.reporting import reporting
from splice.keys import ClassSet, hashed_by_identity
from splice.pristine import BUILTINS
from splice.runtime import native
from splice.runtime.constructors import COMPILED_ENTRY
from splice.runtime.sites import Site
from splice.runtime.weakkeys import WeakKey, holds_weakly, is_nested

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["DispatchTable"]

_BuiltinMethodType = types.BuiltinMethodType
_FunctionType = types.FunctionType
_MethodType = types.MethodType
_partial = functools.partial
_MethodWrapperType = types.MethodWrapperType
_ModuleType = types.ModuleType
_HEAPTYPE = 1 << 9
#: the kinds of callees ``Context.resolve`` makes entries of by kind: everything else that is
#: not a class is a callable object (``Context.callable_object``)
_NOT_OBJECTS = ClassSet({
    types.FunctionType, types.MethodType, types.BuiltinFunctionType,
    types.MethodWrapperType, types.WrapperDescriptorType, types.MethodDescriptorType,
    types.ClassMethodDescriptorType, functools.partial,
    *((native.RUN_CALL,) if native.RUN_CALL is not None else ())})
_ABSENT = object()


class DispatchTable(dict[Any, Any]):
    """``callee -> what to call`` for one context; missing entries are resolved on first use.

    Entries whose key nothing else references any more are swept when the table has doubled
    since the last sweep, so closures created in a loop do not pile up.
    """

    __name__ = "dispatch"  # the hidden cell's name in generated code: ``@dispatch``
    _SWEEP_FLOOR = 1024

    def __init__(self, context: Any) -> None:
        super().__init__()
        #: the ``splice.runtime.context.Context`` whose callees the table resolves
        self.context = context
        self._sweep_at = self._SWEEP_FLOOR
        #: id of an ``__init__`` -> the classes whose constructors were made from it
        self._constructed: dict[int, list[weakref.ref[type]]] = {}
        #: callee -> the call sites caching its entry (``splice.runtime.sites``)
        self._sites: dict[Any, weakref.WeakSet[Site]] = {}
        _live_tables[id(self)] = self
        #: the same entries in an exact ``dict`` (subscripted faster than a subclass), for
        #: call sites that can catch a missing key
        self.fast: dict[Any, Any] = {}
        #: entries of new function objects of nested functions' code, made in C (None
        #: without the extension): ``Context.recompiled`` adds a code once it decided it
        self._renewals = None if native.RENEWALS is None else \
            native.RENEWALS(self, self.fast, native.INSTANTIATE)
        if self._renewals is not None:
            self._renewals.sweep_at = self._sweep_at
        #: the C classes whose instances are their own entries under this context
        #: (immutable, called before; no hooks, no intercepts: ``Context.callable_object``),
        #: answered before resolving by the C lookup and ``_slow_entry``. Only classes whose
        #: metaclass is ``type`` are keys (hashed by identity: no code of the program's)
        self.native_callables: dict[type, type] = {}
        #: one bound method, so generated code shares one constant for it
        self.slow_entry = self._slow_entry
        #: method lookups without a bound method (splice/runtime/_methods.c; None when the
        #: extension is not built: the Python form of method calls)
        self.methods = None if native.METHODS is None else \
            native.METHODS(self.fast, self.slow_entry, None, None, self.native_callables)
        #: the same lookups for method calls that pass no callable an overlay would enter
        #: (``xs.sort()`` without ``key=``): their builtin methods are their own entries
        self.methods_without_callbacks = self.methods

    def call_builtin_methods(self, routed: frozenset[str],
                             callback_free: frozenset[str] = frozenset()) -> None:
        """From now on (before any code is compiled under the context), ``methods(callee)``
        returns a builtin method bound to an object other than a module as its own entry,
        unless its name is in ``routed`` (as ``__missing__`` does): for contexts without
        per-call hooks. ``methods_without_callbacks`` does the same for the names of
        ``routed`` outside ``callback_free`` (names routed only for a callable the call
        may pass). When the context intercepts nothing, the C lookup also makes the entry
        of a callable object whose class's ``__call__`` is a Python function with an entry
        (what ``Context.callable_object`` makes: ``SLOT_CALL(entry, obj)``) itself."""
        if native.METHODS is not None:
            objects = native.SLOT_CALL if not self.context.intercepts else None
            self.methods = native.METHODS(self.fast, self.slow_entry, routed, objects,
                                          self.native_callables)
            self.methods_without_callbacks = self.methods if not callback_free & routed \
                else native.METHODS(self.fast, self.slow_entry, routed - callback_free,
                                    objects, self.native_callables)

    def unkept_entry(self, callee: Any) -> Any:
        """The entry of a callee the table never keeps (the entry would keep it alive),
        made for each call without hashing it and without the checks of resolving that
        cannot match it; None for other callees. A Python method bound to an object: its
        function's entry bound to the same object (no intercept names a bound method: the
        context intercepts its function). Under a context with no intercept, a
        ``functools.partial`` (``Context.partial_entry``) and a callable object (an
        instance of a class with ``__call__``, a C callable such as
        ``operator.itemgetter(1)``): ``Context.callable_object`` (overlays and protocol
        builtins are functions and classes)."""
        if not self.unkept(callee):
            return None
        kind = type(callee)
        if kind is _MethodType:
            function = callee.__func__
            entry = self.fast.get(function) if type(function) is _FunctionType else None
            return _MethodType(self[function] if entry is None else entry, callee.__self__)
        if kind is _partial:
            return self.context.partial_entry(callee)
        return self.context.callable_object(callee)

    def unkept(self, callee: Any) -> bool:
        """Whether ``callee`` gets its entry from ``unkept_entry``."""
        kind = type(callee)
        return kind is _MethodType or (
            (kind is _partial or kind not in _NOT_OBJECTS) and not self.context.intercepts
            and not issubclass(kind, type))

    def _missing(self, callee: Any) -> Any:
        """``__missing__``'s Python part: everything the C ``Missing`` does not answer
        (its renewals, ``native.RENEWALS``)."""
        kind = type(callee)
        if kind is _FunctionType and self.context.recompiles:
            # the common miss: a function object made since the last call (a closure or
            # lambda made in a loop) whose code was compiled already
            entry = self.context.recompiled(callee)
            if entry is not None:
                if len(self) >= self._sweep_at:
                    self.sweep()
                key = self._key(callee, entry)
                entry = self.setdefault(key, entry)
                self.fast[key] = entry
                return entry
        context = self.context
        if kind is _BuiltinMethodType or kind is _MethodWrapperType:
            entry = self._bound_builtin_entry(callee, kind)
            if entry is not None:
                return entry
        entry = self.unkept_entry(callee)
        if entry is not None:
            return entry
        if context.hooks.compile_observers:
            # what a first call costs splice (resolving, compiling) is reported as one
            # compile span, so a profiler keeps it out of the caller's time
            entry, cacheable, _ = reporting(context, callee,
                                            functools.partial(context.resolve, callee))
        else:
            entry, cacheable, _ = context.resolve(callee)
        if cacheable:
            if len(self) >= self._sweep_at:
                self.sweep()
            key = self._key(callee, entry)
            entry = self.setdefault(key, entry)
            self.fast[key] = entry
        return entry

    __missing__ = _missing if native.MISSING is None else native.MISSING(_missing)

    def _bound_builtin_entry(self, callee: Any, kind: type) -> Any:
        """The entry of a builtin method bound to an object (``obj.append``,
        ``super().__init__``) when builtin methods are called directly: itself, or the
        overlay of a routed name; None when it must be resolved. Such methods are new
        objects each time, so they are answered without hashing or caching them (builtin
        functions, bound to their module, get an entry like any callee)."""
        context = self.context
        if not context.direct_builtin_methods or type(callee.__self__) is _ModuleType:
            return None
        if callee.__name__ not in context.routed_names:
            return callee
        if not context.intercepts and kind is _BuiltinMethodType:
            return context.bound_overlay(callee)
        return None

    def _key(self, callee: Any, entry: Any) -> Any:
        """What to key ``callee``'s entry by: a nested function whose entry does not hold
        it (the function rebuilt from transformed code, a C entry holding it weakly)
        weakly, so the entry goes when the function does (splice/runtime/weakkeys.py);
        anything else itself."""
        if type(callee) is _FunctionType and is_nested(callee) and holds_weakly(entry, callee):
            return WeakKey(callee, self._dropped)
        return callee

    def _slow_entry(self, callee: Any) -> Any:
        """The entry for a callee not in ``fast``: resolved (and cached) if its class
        hashes it by identity; resolved on every call, without hashing it, if not (its
        ``__hash__`` is the program's, which CPython never calls to call it, or it has none;
        splice/keys.py)."""
        kind = type(callee)
        if kind is _FunctionType:  # (a function made since: ``__missing__`` answers it)
            return self[callee]
        if type(kind) is type and kind in self.native_callables:
            return callee  # ``operator.itemgetter(0)`` called again: no resolving
        if kind is _BuiltinMethodType or kind is _MethodWrapperType:
            # (``super().__init__()`` comes here on every call without the C lookup, which
            # answers a method-wrapper itself: answered before the checks that cannot
            # match it)
            entry = self._bound_builtin_entry(callee, kind)
            if entry is not None:
                return entry
        entry = self.unkept_entry(callee)
        if entry is not None:
            return entry
        if hashed_by_identity(callee):
            return self[callee]
        entry, _, _ = self.context.resolve(callee)
        return entry

    def _dropped(self, key: Any) -> None:
        """A nested function keyed weakly died: its entry goes with it."""
        dict.pop(self, key, None)
        self.fast.pop(key, None)

    def sweep(self) -> int:
        """Remove entries whose key is referenced only by this table (and its entry);
        returns how many were removed."""
        removed = 0
        for key in list(self):
            if type(key) is WeakKey:
                continue  # removed when its function dies
            held = _references_held(dict.get(self, key), key)
            for site in self._sites.get(key, ()):
                held += (site.callee is key) + (site.entry is key)
            # references here: the list, the loop name, getrefcount's argument
            if sys.getrefcount(key) - 3 <= held:
                self.forget(key)
                removed += 1
        self._sweep_at = max(self._SWEEP_FLOOR, 2 * len(self))
        if self._renewals is not None:
            self._renewals.sweep_at = self._sweep_at
        return removed

    def forget(self, callee: Any) -> bool:
        """Drop ``callee``'s entry (its definition changed), and the entries of the classes
        whose constructors it is the ``__init__`` of; returns whether there was one."""
        try:
            held = self.pop(callee, _ABSENT) is not _ABSENT
            self.fast.pop(callee, None)
            sites = self._sites.pop(callee, ())
        except TypeError:  # unhashable: never an entry
            return False
        for site in sites:
            site.empty()
        for ref in self._constructed.pop(id(callee), ()):
            cls = ref()
            if cls is not None:
                held = self.forget(cls) or held
        return held

    def register_site(self, callee: Any, site: Site) -> None:
        """``site`` caches ``callee``'s entry: ``forget(callee)`` empties it."""
        sites = self._sites.get(callee)
        if sites is None:
            sites = self._sites[callee] = weakref.WeakSet()
        sites.add(site)

    def constructed_by(self, init: Any, cls: type) -> None:
        """``cls``'s entry is a constructor made from ``init``: ``forget(init)`` drops it."""
        self._constructed.setdefault(id(init), []).append(weakref.ref(cls))

    def release_nested(self) -> None:
        """Drop the entries keyed weakly. Run before each full collection: a nested
        function in a reference cycle through its own cell (a recursive closure) is kept
        alive by its entry, which holds that cell, so the collector would never free it;
        entries are made again on demand (from the cached code)."""
        for key in list(self):
            if type(key) is WeakKey:
                self._dropped(key)

    def release_classes(self) -> None:
        """Drop the entries of classes defined in Python. Run before each full collection: a
        class is part of reference cycles (its ``__mro__``, its methods' ``__class__``
        cells), so the table's reference would keep a class the program dropped alive for
        good, where natively the collector frees it. Entries are made again on demand. A
        class its module still binds under its qualified name is alive whatever the table
        holds: its entry stays (a program calling ``gc.collect()`` between runs, as
        benchmark harnesses do, would otherwise pay for making them again each time)."""
        for key in list(self):
            kind = type(key)
            if issubclass(kind, type) and _type_flags(key) & _HEAPTYPE \
                    and not _bound_by_its_module(key):
                self.forget(key)


_type_flags = type.__dict__["__flags__"].__get__
_type_module = type.__dict__["__module__"].__get__
_type_qualname = type.__dict__["__qualname__"].__get__
_type_dict = type.__dict__["__dict__"].__get__
_MappingProxy = types.MappingProxyType


def _bound_by_its_module(cls: type) -> bool:
    """Whether the module named by ``cls.__module__`` (in ``sys.modules``) holds ``cls``
    under its qualified name (read through ``type``'s own descriptors and plain dicts:
    no metaclass or module code runs)."""
    module = sys.modules.get(_type_module(cls))
    namespace: Any = getattr(module, "__dict__", None)
    found: Any = None
    for part in _type_qualname(cls).split("."):
        if type(namespace) is not dict and type(namespace) is not _MappingProxy:
            return False
        found = namespace.get(part)
        namespace = _type_dict(found) if isinstance(found, type) else None
    return found is cls


#: every dispatch table alive, swept at each full garbage collection as well: a function
#: dropped by the program (a closure, a local function) is then freed at the latest when the
#: program asks for ``gc.collect()``, as it would be natively (by reference counting)
_live_tables: weakref.WeakValueDictionary[int, DispatchTable] = weakref.WeakValueDictionary()


def _sweep_tables(phase: str, info: dict[str, int]) -> None:
    if phase == "start" and info.get("generation") == 2:
        for table in list(_live_tables.values()):
            table.release_classes()
            table.release_nested()
            table.sweep()


gc.callbacks.append(_sweep_tables)


def _references_held(entry: Any, callee: Any) -> int:
    """How many references to ``callee`` the table holds once ``entry`` is stored: the keys
    of both dicts, the values if the entry is the callee itself, and closure cells of the
    entry holding the callee (a hooks wrapper, an instantiation)."""
    held = 2
    if entry is callee:
        held += 2
    if type(entry) is COMPILED_ENTRY:  # a compiled constructor: its spec holds the class
        for arg in entry.args:
            held += arg is callee or (type(arg) is tuple and any(a is callee for a in arg))
    # hooks in C hold what they wrap
    if native.HOOKED is not None and type(entry) is native.HOOKED:
        held += (entry.callee is callee) + (entry.target is callee) + \
            (entry.continuation is callee)
    # and the class they make
    if native.INSTANTIATOR is not None and type(entry) is native.INSTANTIATOR:
        held += entry.cls is callee
    if native.CONSTRUCTOR is not None and type(entry) is native.CONSTRUCTOR:
        held += entry.cls is callee
    # a specializing entry's callee
    if native.CHOSEN is not None and type(entry) is native.CHOSEN:
        held += entry.callee is callee
    # (only a function's own cells: an entry may be any callable, a class among them,
    # whose ``__closure__`` could be anything, even a descriptor)
    closure = entry.__closure__ if type(entry) is _FunctionType else None
    for cell in closure or ():
        try:
            if cell.cell_contents is callee:
                held += 1
        except ValueError:  # an empty cell
            pass
    return held

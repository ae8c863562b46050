"""Contexts: a stack of plugins, and how each callee is entered under it.

A ``Context`` is the owner of compiled code (its code cache, instance cache, hook table
and compile parameters): code transformed under it calls through its ``DispatchTable``
(``splice.runtime.table``), which maps a callee to what to call instead, as
``Context.resolve`` decides:

=====================================  =================================================
callee                                 entry
=====================================  =================================================
Python function, entered               the function rebuilt from transformed code, sharing
                                       the original's globals, closure cells and defaults
Python function, ``recurse`` is False  the function itself (runs natively, with its subtree)
intercepted target                     the plugin's intercepting method
class with Python ``__new__``/         an instantiation running them under the context
``__init__`` or metaclass ``__call__``
bound method (not at a method site)    a bound method of the entered function
``functools.partial``                  the partial, with its function entered
callable object                        its ``__call__`` entered, called with it first as
                                       the type's call slot calls it
builtin with an overlay                the overlay (callbacks entered)
``Plugin.run`` of another plugin       run under the composition of both
anything else                          the object itself
=====================================  =================================================

This module holds the last of a context's jobs, what each callee is entered as; the others
are below it, one module each: the fields and the record for ``explain``
(``context_fields``), the entries of Python functions (``compiling``) and of classes
(``instantiation``). Which context a stack of plugins gets is ``splice.runtime.registry``'s.

With per-call hooks (``prehook``, ``posthook``, ``overdub``) every entry is wrapped in a C
object that runs them (splice/runtime/_hooks.c), no frame on the program's stack; without
the C extension, in one Python frame that runs them, named ``splice_call``.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Hashable
from typing import Any

from splice.cache.code_cache import CodeCache
from splice.cache.instances import InstanceCache
from splice.cache.owners import Owner, owner_for
from splice.cache.world import watch
from splice.compiler.params import CompileParams
from splice.errors import UnsupportedError
from splice.hooks import Hooks, HookTable, nesting
from splice.ir.compiled import CompiledCode
from splice.keys import get_hashed, keyable_class
from splice.pristine import BUILTINS
from splice.runtime import overlays, processes
from splice.runtime.attributes import (
    OBJECT_DELATTR,
    OBJECT_GETATTRIBUTE,
    OBJECT_SETATTR,
)
from splice.runtime.context_fields import Reached, is_splice_code
from splice.runtime.dunders import drive, immutable, special
from splice.runtime.implicit import Implicit
from splice.runtime.instantiation import Instantiating
from splice.runtime.native import CHOSEN, RUN_CALL, SLOT_CALL
from splice.runtime.pending import PENDING, PENDING_ANYWHERE, continuation_for
from splice.runtime.plugin_state import plugins_of, state_of
from splice.runtime.table import DispatchTable

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)
__all__ = ["Context", "Reached"]


_BuiltinMethodType = types.BuiltinMethodType
_MethodWrapperType = types.MethodWrapperType
_ModuleType = types.ModuleType


class Context(Instantiating):
    """The plugins a call graph runs under (outermost first): the owner of a code cache.
    Its fields are declared, with what each is for, in ``ContextFields``."""

    def __init__(self, plugins: tuple[Hooks, ...], tokens: tuple[Hashable, ...] | None,
                 context_of: Callable[[tuple[Hooks, ...]], Context]) -> None:
        self.plugins = plugins
        self.context_of = context_of
        self.hooks = hooks = HookTable.of(plugins)
        self.instantiate = drive(self._instantiate_steps)
        self.table = DispatchTable(self)
        watch(self.table)
        self.code = CodeCache[CompiledCode | UnsupportedError]()
        self.instances = InstanceCache()
        self._last_choices = {}
        self._shared_entries = {}
        self._declined = None
        self.params = CompileParams()
        self.constructors = CodeCache[CompiledCode | UnsupportedError]()
        self._reached = {}
        self.strict = any(getattr(p, "strict", False) for p in plugins)
        self.typed_stages = hooks.typed_stages
        self.intercepts = {}
        for plugin in reversed(plugins):  # the outermost plugin's intercept wins
            for target, name in type(plugin)._splice_intercepts.items():
                # ``Class.classmethod`` is a bound method: intercept its function (the
                # intercepting method then receives ``cls`` first, as the function does)
                if isinstance(target, types.MethodType):
                    target = target.__func__
                self.intercepts[target] = (plugin, name)
        self.hooked = hooks.hooked
        self.follow_threads = all(getattr(p, "follow_threads", True) for p in plugins)
        self.follow_processes = all(getattr(p, "follow_processes", True) for p in plugins)
        self._processes = None
        self.plain_functions = (not self.hooked and hooks.recurse_everywhere
                                and not self.typed_stages)
        #: a new function object of code compiled already is rebuilt from that code (or
        #: shares its specializing entry) without resolving it (``Compiling.recompiled``):
        #: unhooked contexts, whatever their ``recurse`` (asked again for each object)
        self.recompiles = not self.hooked
        self.direct_builtin_methods = not self.hooked
        intercepted_names = frozenset(
            getattr(t, "__name__", "") for t in self.intercepts
            if type(t) is not types.FunctionType and not isinstance(t, type))
        self.routed_names = overlays.NAMES | intercepted_names
        #: routed names whose overlay only enters a callable passed by keyword (name ->
        #: keyword): a call passing neither it nor ``**`` is not routed
        self.callback_keywords = {name: keyword for name, keyword
                                  in overlays.CALLBACK_KEYWORDS.items()
                                  if name not in intercepted_names}
        wanted = [getattr(p, "implicit_calls", None) for p in plugins]
        routed = any(w is True for w in wanted) or (self.hooked and False not in wanted)
        self.implicit = Implicit(self.table) if routed else None
        if routed:
            # ``super().__setattr__(...)``: object's slots reach descriptors' Python code
            self.routed_names |= {"__getattribute__", "__setattr__", "__delattr__"}
        self.owner = self._owner(tokens)
        if self.direct_builtin_methods:
            self.table.call_builtin_methods(frozenset(self.routed_names),
                                            frozenset(self.callback_keywords))
        self._cache_notes = {}
        self._method_overlays = {}
        self._native_objects = set()
        self._recompilable = {}

    def _owner(self, tokens: tuple[Hashable, ...] | None) -> Owner | None:
        """The owner of the stacks of these plugins' classes with these tokens and this
        context's compile switches, if every plugin has a token."""
        if tokens is None or any(t is None for t in tokens):
            return None
        switches = (self.implicit is not None, self.strict, self.hooked,
                    self.direct_builtin_methods, self.plain_functions, self.routed_names,
                    self.params)
        classes = tuple(zip((type(p) for p in self.plugins), tokens, strict=True))
        return owner_for((classes, switches))

    def __repr__(self) -> str:
        return f"<splice context {' ∘ '.join(type(p).__name__ for p in self.plugins)}>"

    # ------------------------------------------------------------------------- entering

    def enter(self, callee: Any) -> Any:
        """What to call instead of ``callee`` under this context."""
        return self.table.slow_entry(callee)

    def resolve(self, callee: Any, intercepted: bool = True) -> tuple[Any, bool, int]:
        """(entry, whether it may be cached by ``callee``, references the entry holds to
        ``callee``) for a callee not yet in the table. ``intercepted``: False for the
        callee as if no plugin intercepted it."""
        intercept = self._intercept(callee) if intercepted else None
        if intercept is not None:
            return self._wrap(callee, intercept), True, 1
        if intercepted and self.intercepts:
            # ``obj.append(x)`` where the plugin intercepts ``list.append``: the bound C
            # method is new with each call (and holds ``obj``), so it is wrapped, not cached
            unbound = _unbound_c_method(callee)
            if unbound is not None and (intercept := self._intercept(unbound)) is not None:
                return functools.partial(self._wrap(unbound, intercept), callee.__self__), \
                    False, 0
        overlay = get_hashed(overlays.FUNCTIONS, callee)
        if overlay is not None and (self.follow_threads or
                                    callee not in overlays.THREAD_STARTERS):
            return self._wrap(callee, overlay(self.enter)), True, int(self.hooked)
        if self.implicit is not None:
            protocol = self._protocol_builtin(callee)
            if protocol is not None:
                if type(callee) is types.MethodWrapperType:  # bound to an object: not kept
                    return self._wrap(callee, protocol), False, 0
                return self._wrap(callee, protocol), True, int(self.hooked)
        kind = type(callee)
        if kind is types.FunctionType and self.follow_processes:
            starter = processes.starter(callee)
            if starter is not None:
                return self._wrap(callee, starter(self.process_channel, callee)), True, \
                    int(self.hooked)
        if kind is RUN_CALL:  # ``Plugin.run`` in C (splice/runtime/_recurse.c)
            return self._splice_function(callee), True, 0
        if kind is types.FunctionType:
            if is_splice_code(callee):
                return self._splice_function(callee), True, 0
            entry = self._function(callee)
            return self._wrap(callee, entry), True, int(self.hooked)
        if kind is types.MethodWrapperType and callee.__name__ == "__call__" and \
                isinstance(callee.__self__, type):
            # ``super().__call__(...)`` in a metaclass: type.__call__ for that class
            cls = callee.__self__
            return functools.partial(self.instantiate, cls), False, 0
        if kind is types.MethodType:
            if isinstance(callee.__self__, Hooks) and nesting(callee.__func__):
                return self._nested_run(callee.__self__), False, 0
            return types.MethodType(self.table[callee.__func__], callee.__self__), False, 0
        if isinstance(callee, type):
            return self._class(callee)
        if kind is types.BuiltinFunctionType or kind is types.BuiltinMethodType:
            return self._builtin(callee)
        if kind is functools.partial:
            return self.partial_entry(callee), False, 0
        return self.callable_object(callee), False, 0

    def callable_object(self, callee: Any) -> Any:
        """The entry of a callable object that is no function, method, class, builtin or
        partial: its class's ``__call__`` run as the type's call slot runs it, a Python one
        entered, else the object itself. Made for each call (it holds the object); the
        table takes this path first when no intercept could match the object."""
        kind = type(callee)
        keyable = type(kind) is type or keyable_class(kind)
        if keyable and kind in self._native_objects:
            return self._wrap(callee, callee)
        call = special(kind, "__call__")
        if type(call) is types.FunctionType:
            # not a bound method: the interpreter would unpack it and hand the caller's
            # argument references to the callee's frame, where natively the slot leaves
            # them on the caller's stack (the order in which temporaries die)
            entry = self.table.fast.get(call)
            return _slot_call(self.table[call] if entry is None else entry, callee)
        # recorded by class: one line per kind of object, not one per object
        self._record(kind, False, "not Python code (" + kind.__name__ + ")")
        if keyable and immutable(kind):  # its call stays C code: no need to look again
            self._native_objects.add(kind)
            if not self.hooked and not self.intercepts and type(kind) is type:
                self.table.native_callables[kind] = kind  # its own entry: answered first
        return self._wrap(callee, callee)

    def _splice_function(self, fn: Any) -> Any:
        """splice's own code is never transformed; ``Plugin.run`` called on another plugin
        (at a method site: ``other.run(f, x)``) runs under the composition of both."""
        if nesting(fn):
            def run_nested(plugin: Hooks, target: Any, /, *args: Any, **kwargs: Any) -> Any:
                return self.context_of((*self.plugins, *plugins_of(plugin))).run(
                    target, args, kwargs)
            return run_nested
        return fn

    def _protocol_builtin(self, callee: Any) -> Any:
        """``str(x)``, ``repr(x)``, ``format(x, spec)``, ``iter(x)``, ``bool(x)``,
        ``getattr``, ``hasattr``, ``setattr``, ``delattr`` and ``object``'s own
        ``__getattribute__``/``__setattr__``/``__delattr__`` calling Python dunders under the
        context (other argument shapes run natively)."""
        implicit = self.implicit
        assert implicit is not None
        attributes = implicit.attributes
        protocols: dict[Any, tuple[Callable[..., Any], int, int]] = {
            str: (implicit.str, 1, 1), repr: (implicit.repr, 1, 1),
            format: (implicit.format, 1, 2), iter: (implicit.iter, 1, 1),
            bool: (implicit.truth, 1, 1), getattr: (attributes.builtin_getattr, 2, 3),
            hasattr: (attributes.builtin_hasattr, 2, 2),
            setattr: (attributes.builtin_setattr, 3, 3),
            delattr: (attributes.builtin_delattr, 2, 2),
            OBJECT_GETATTRIBUTE: (attributes.object_getattribute, 2, 2),
            OBJECT_SETATTR: (attributes.object_setattr, 3, 3),
            OBJECT_DELATTR: (attributes.object_delattr, 2, 2)}
        receiver: tuple[Any, ...] = ()
        key = callee
        if type(callee) is types.MethodWrapperType:
            # ``super().__setattr__`` or ``self.__setattr__``: object's slot, bound
            if callee.__objclass__ is not object:
                return None
            key = vars(object).get(callee.__name__)
            receiver = (callee.__self__,)
        found = protocols.get(key) if _plain_hash(key) else None
        if found is None:
            return None
        method, least, most = found
        native = callee
        routed = functools.partial(method, *receiver) if receiver else method

        def choose(*args: Any, **kwargs: Any) -> Any:
            if kwargs or not least <= len(receiver) + len(args) <= most:
                return native
            return routed
        if CHOSEN is not None:
            return CHOSEN(choose, callee)  # no frame of splice's while the protocol runs

        def protocol(*args: Any, **kwargs: Any) -> Any:
            return choose(*args, **kwargs)(*args, **kwargs)
        return protocol

    def _intercept(self, callee: Any) -> Callable[..., Any] | None:
        if not self.intercepts:
            return None
        found = get_hashed(self.intercepts, callee)
        if found is None:
            return None
        plugin, name = found
        method: Callable[..., Any] = getattr(plugin, name)
        self._record(callee, False, f"intercepted by {type(plugin).__name__}.{name}")
        state = state_of(plugin)
        if not self.hooked and not plugin.dynamic_scope and \
                state.claim_bypass(self):
            # the first context of this plugin to intercept: the entry is the plugin's
            # method itself (no frame in between); its ``recurse_call`` finds the original
            # in the plugin state's ``bypass`` (other contexts, and a dynamically scoped
            # plugin's, whose own ``recurse_call`` runs originals natively, push it on
            # PENDING)
            bypass: dict[Any, Any] = state.bypass

            def resolve_original(*args: Any, **kwargs: Any) -> Any:
                entry = bypass[callee] = self._bypass(callee)
                return entry(*args, **kwargs)
            bypass[callee] = resolve_original  # made anew with each entry: code may change
            return method

        bypassed: list[Any] = []  # the original's entry, resolved on first use

        def original(*args: Any, **kwargs: Any) -> Any:
            if not bypassed:
                bypassed.append(self._bypass(callee))
            return bypassed[0](*args, **kwargs)

        pending, anywhere = PENDING, PENDING_ANYWHERE

        def intercepted(*args: Any, **kwargs: Any) -> Any:
            stack = pending.stack
            anywhere.append(None)
            stack.append((callee, bypassed[0] if bypassed else original))
            try:
                return method(*args, **kwargs)
            finally:
                stack.pop()
                anywhere.pop()
        return intercepted

    def _bypass(self, callee: Any) -> Any:
        """``callee`` entered as if no plugin intercepted it (``recurse_call`` from an
        intercepting method). Resolved once per intercept entry: a change of ``callee``'s
        definition drops that entry, and with it this one."""
        entry, _, _ = self.resolve(callee, intercepted=False)
        return entry

    def _builtin(self, fn: Any) -> tuple[Any, bool, int]:
        self_ = getattr(fn, "__self__", None)
        if self_ is not None and not isinstance(self_, types.ModuleType):
            overlaid = self.bound_overlay(fn)
            return self._wrap(fn, fn if overlaid is None else overlaid), False, 0
        return self._wrap(fn, fn), True, int(self.hooked)

    def bound_overlay(self, fn: Any) -> Any:
        """The overlay of a builtin method bound to an object (``xs.sort`` entering its
        ``key``), bound to that object; None if it has none. The overlay itself is made
        once per context: the bound method is new with each call."""
        key = (type(fn.__self__), fn.__name__)
        overlay = self._method_overlays.get(key)
        if overlay is None:
            factory = overlays.METHODS.get(key)
            if factory is None:
                return None
            overlay = self._method_overlays[key] = factory(self.enter)
        return functools.partial(overlay, fn.__self__)

    def partial_entry(self, p: functools.partial[Any]) -> Any:
        # a partial of the entry (C code: no splice frame between the caller and the
        # callee), made again for every call, so the callee's latest entry is used
        return self._wrap(p, functools.partial(self.table[p.func], *p.args, **p.keywords))

    def _nested_run(self, inner: Hooks) -> Any:
        composed = self.context_of((*self.plugins, *plugins_of(inner)))

        def run_nested(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            return composed.run(fn, args, kwargs)
        return run_nested

    # ---------------------------------------------------------------------------- hooks

    def recurse_call(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Go on with a call that an ``overdub`` or intercepting method received (or, for
        another callee, call it under this context)."""
        continuation = continuation_for(fn)
        if continuation is not None:
            return continuation(*args, **kwargs)
        return self.table[fn](*args, **kwargs)

    # ---------------------------------------------------------------------- entry point

    def run(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call ``fn(*args, **kwargs)`` with everything it reaches under this context (and
        then merge what the plugins' copies in other processes reported)."""
        try:
            return self.table[fn](*args, **kwargs)
        finally:
            if self._processes is not None:
                self._processes.collect()

    @property
    def process_channel(self) -> processes.Channel:
        """This context's link to the processes it starts work in (made on first use)."""
        channel = self._processes
        if channel is None:
            channel = self._processes = processes.Channel(self, self.context_of)
        return channel


def _unbound_c_method(callee: Any) -> Any:
    """The method descriptor (``list.append``) that ``callee`` (``[].append``) was bound
    from, if ``callee`` is a C method bound to an object other than a module."""
    kind = type(callee)
    if kind is not _BuiltinMethodType and kind is not _MethodWrapperType:
        return None
    owner = callee.__self__
    if type(owner) is _ModuleType:
        return None
    return special(type(owner), callee.__name__)


_slot_call: Callable[[Any, Any], Any] = SLOT_CALL if SLOT_CALL is not None else types.MethodType


def _plain_hash(obj: Any) -> bool:
    """Whether hashing ``obj`` runs no Python code (functions, builtins, classes, slot
    wrappers)."""
    kind = type(obj)
    return (kind is types.FunctionType or kind is types.BuiltinFunctionType or kind is type
            or kind is types.WrapperDescriptorType)

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

With per-call hooks (``prehook``, ``posthook``, ``overdub``) every entry is wrapped in a C
object that runs them (splice/runtime/_hooks.c), no frame on the program's stack; without
the C extension, in one Python frame that runs them, named ``splice_call``.
"""

from __future__ import annotations

import functools
import sys
import types
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from splice.cache.code_cache import CodeCache
from splice.cache.guards import lookup_global
from splice.cache.instances import InstanceCache
from splice.cache.owners import Owner, SharedCode, owner_for
from splice.cache.world import watch
from splice.compiler.constructors import constructor_ir, sentinel_defaults
from splice.compiler.params import CompileParams
from splice.compiler.pipeline import build_code
from splice.compiler.route_calls import route_calls
from splice.compiler.route_implicit import route_implicit
from splice.errors import InterpreterError, UnsupportedError
from splice.hooks import Hooks, HookTable, nesting
from splice.ir.assemble import CompiledCode, instantiate
from splice.ir.nodes import FunctionIR
from splice.pristine import BUILTINS
from splice.runtime import overlays, processes
from splice.runtime.attributes import (
    ATTRIBUTE_NATIVE_TYPES,
    OBJECT_DELATTR,
    OBJECT_GETATTRIBUTE,
    OBJECT_SETATTR,
)
from splice.runtime.constructors import constructor_for, eligible_init, reconstruct
from splice.runtime.dunders import Steps, drive, immutable, special
from splice.runtime.exec_watch import watch as watch_exec_sources
from splice.runtime.hooked import with_hooks
from splice.runtime.implicit import NATIVE_TYPES, Implicit
from splice.runtime.native import CHOSEN, INSTANTIATOR, SLOT_CALL
from splice.runtime.pending import PENDING, PENDING_ANYWHERE, continuation_for, get_hashed
from splice.runtime.plugin_state import plugins_of, state_of
from splice.runtime.sharing import bind, share
from splice.runtime.sites import Site
from splice.runtime.specializing import SpecializingEntry
from splice.runtime.table import DispatchTable

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)
__all__ = ["Context", "Reached"]


@dataclass(frozen=True, slots=True)
class Reached:
    """What happened to one callee reached under a context (see ``splice.explain``)."""

    name: str
    entered: bool
    reason: str


_TYPE_CALL = type.__dict__["__call__"]
_BuiltinMethodType = types.BuiltinMethodType
_FunctionType = types.FunctionType
_MethodWrapperType = types.MethodWrapperType
_ModuleType = types.ModuleType




class Context:
    """The plugins a call graph runs under (outermost first): the owner of a code cache."""

    #: ``cls(*args, **kwargs)`` as ``type.__call__`` does it, a Python ``__new__`` and
    #: ``__init__`` entered under this context, with no frame of splice's in between
    #: (``_instantiate_steps`` driven by C code, splice.runtime.dunders.drive)
    instantiate: Callable[..., Any]

    def __init__(self, plugins: tuple[Hooks, ...], tokens: tuple[Hashable, ...] | None,
                 context_of: Callable[[tuple[Hooks, ...]], Context]) -> None:
        self.plugins = plugins
        #: the context of another stack of plugins, for the runs this one nests
        #: (``splice.runtime.registry.context_of``)
        self.context_of = context_of
        #: which plugins override which hook (``splice.hooks``)
        self.hooks = hooks = HookTable.of(plugins)
        self.instantiate = drive(self._instantiate_steps)
        self.table = DispatchTable(self)
        watch(self.table)
        self.code = CodeCache[CompiledCode | UnsupportedError]()
        #: code instances built under this context (``splice.cache.instances``)
        self.instances = InstanceCache()
        #: id of a code object -> the specializing entry made last for a function of it
        #: (weakly), whose choices a closure made anew adopts
        self._last_entries: dict[int, weakref.ref[SpecializingEntry]] = {}
        #: the compiler's limits and switches for this context
        self.params = CompileParams()
        #: ``__init__`` code compiled as constructors (``splice.runtime.constructors``)
        self.constructors = CodeCache[CompiledCode | UnsupportedError]()
        #: (module, qualified name or repr) -> (entered, reason); ``reached`` names them
        self._reached: dict[tuple[Any, str], tuple[bool, str]] = {}
        self.strict = any(getattr(p, "strict", False) for p in plugins)
        #: some plugin has a ``typed``/``optimized`` hook or an ``interpreter``: functions
        #: run code instances specialised on their arguments' classes
        self.typed_stages = hooks.typed_stages
        self.intercepts: dict[Any, tuple[Hooks, str]] = {}
        for plugin in reversed(plugins):  # the outermost plugin's intercept wins
            for target, name in type(plugin)._splice_intercepts.items():
                # ``Class.classmethod`` is a bound method: intercept its function (the
                # intercepting method then receives ``cls`` first, as the function does)
                if isinstance(target, types.MethodType):
                    target = target.__func__
                self.intercepts[target] = (plugin, name)
        self.hooked = hooks.hooked
        #: threads started under the context run their function under it (a plugin opts
        #: out with ``follow_threads = False``)
        self.follow_threads = all(getattr(p, "follow_threads", True) for p in plugins)
        #: work started in other processes runs there under copies of the plugins
        #: (``splice.runtime.processes``; a plugin opts out with ``follow_processes``)
        self.follow_processes = all(getattr(p, "follow_processes", True) for p in plugins)
        self._processes: processes.Channel | None = None
        #: a Python function is entered as its transformed code, nothing more (no hook
        #: wraps it, ``recurse`` accepts it under every plugin, no code instances)
        self.plain_functions = (not self.hooked and hooks.recurse_everywhere
                                and not self.typed_stages)
        #: builtin functions and methods may be called directly at method sites (and
        #: bound ones need no entry) when no hook sees them; those whose name an overlay
        #: or an intercepted builtin has go through the table
        self.direct_builtin_methods = not self.hooked
        self.routed_names = overlays.NAMES | frozenset(
            getattr(t, "__name__", "") for t in self.intercepts
            if type(t) is not types.FunctionType and not isinstance(t, type))
        #: operators, subscripts, iteration and formatting of non-builtin types reach
        #: Python dunders under the context only where some hook needs to see every call
        wanted = [getattr(p, "implicit_calls", None) for p in plugins]
        routed = any(w is True for w in wanted) or (self.hooked and False not in wanted)
        self.implicit = Implicit(self.table) if routed else None
        if routed:
            # ``super().__setattr__(...)``: object's slots reach descriptors' Python code
            self.routed_names |= {"__getattribute__", "__setattr__", "__delattr__"}
        #: the owner of the code this context shares with the contexts of equally
        #: configured plugins (``splice.cache.owners``); None: the context owns its code
        self.owner = self._owner(tokens)
        #: id of a code object -> why its entry in the disk cache was ignored (explain)
        self._cache_notes: dict[int, str] = {}

    def _owner(self, tokens: tuple[Hashable, ...] | None) -> Owner | None:
        """The owner of the stacks of these plugins' classes with these tokens and this
        context's compile switches, if every plugin has a token. (Contexts with typed
        stages keep their code instances themselves, for now.)"""
        if tokens is None or any(t is None for t in tokens) or self.typed_stages:
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
        if kind is types.FunctionType:
            if _is_splice_code(callee):
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
            return self._partial(callee), False, 0
        call = special(kind, "__call__")
        if type(call) is types.FunctionType:
            # not a bound method: the interpreter would unpack it and hand the caller's
            # argument references to the callee's frame, where natively the slot leaves
            # them on the caller's stack (the order in which temporaries die)
            return _slot_call(self.table[call], callee), False, 0
        self._record(callee, False, "not Python code (" + kind.__name__ + ")")
        return self._wrap(callee, callee), False, 0

    def _splice_function(self, fn: types.FunctionType) -> Any:
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

    def decide(self, fn: types.FunctionType) -> tuple[Hooks, ...]:
        """The plugins ``fn``'s body runs under, by each plugin's ``recurse``."""
        if self.hooks.recurse_everywhere:
            return self.plugins
        return self.hooks.decide(fn)

    def _function(self, fn: types.FunctionType) -> Any:
        plugins = self.decide(fn)
        if not plugins:
            self._record(fn, False, "recurse returned False")
            return fn
        if plugins != self.plugins:
            return self.context_of(plugins).transformed(fn)
        return self.transformed(fn)

    def recompiled(self, fn: types.FunctionType) -> Any:
        """``fn``'s entry if ``fn``'s code was compiled under this context already and
        nothing but the transformation applies to it (``plain_functions``); else None,
        and ``resolve`` decides."""
        if fn in self.intercepts or fn in overlays.FUNCTIONS or _is_splice_code(fn) or \
                processes.starter(fn) is not None:
            return None
        code = fn.__code__
        compiled = self.code.cached(code)
        if compiled is None or isinstance(compiled, UnsupportedError):
            return None
        self._record(fn, True, "transformed")
        return instantiate(compiled, fn, share_kwdefaults=True, code=code)

    def transformed(self, fn: types.FunctionType) -> Any:
        """``fn`` rebuilt from its code transformed under this context (``fn`` itself, with
        the reason recorded, if it cannot be transformed)."""
        # the table is watched (``splice.cache.world.watch``): a change of ``fn``'s code or
        # defaults drops the entry made here
        if self.typed_stages:
            return self._specializing(fn)
        code = fn.__code__  # read once: each read raises an audit event
        compiled = self.code.get(fn, self._build, code)
        if isinstance(compiled, UnsupportedError):
            self._record(fn, False, compiled.reason)
            if self.strict:
                raise compiled
            return fn
        note = self._cache_notes.get(id(code)) if self._cache_notes else None
        self._record(fn, True, "transformed" if note is None
                     else f"transformed, its cache entry ignored: {note}")
        return instantiate(compiled, fn, share_kwdefaults=True, code=code)

    def _specializing(self, fn: types.FunctionType) -> Any:
        """For plugins with typed stages: an entry that runs ``fn``'s code instance for its
        arguments' exact classes (``splice.runtime.specializing``), or ``fn`` if none can be
        built."""
        entry = SpecializingEntry(self, fn)
        code = fn.__code__
        last = self._last_entries.get(id(code))
        before = last() if last is not None else None
        try:
            # a closure made anew (in a loop) takes the choices of the one before it that
            # fit it; a first function object of its code builds what any call can run
            # now, so a function that cannot be transformed runs as itself from its start
            if not (before is not None and entry.adopt(before)) and \
                    not any(ci.fits(fn) for ci in self.instances.of_code(code)):
                entry.generic()
        except UnsupportedError as exc:
            self._record(fn, False, exc.reason)
            if self.strict:
                raise
            return fn
        except InterpreterError as exc:
            return self.untyped(fn, exc)
        self._record(fn, True, "transformed")
        self._last_entries[id(code)] = weakref.ref(
            entry, functools.partial(self._forget_entry, id(code)))
        if CHOSEN is not None:
            # no frame of the entry's; its earlier choices run without Python (_hooks.c)
            return CHOSEN(entry.choose, fn, runners=entry.runners)
        return entry

    def _forget_entry(self, key: int, _freed: Any = None) -> None:
        """Drop the freed entry of ``_last_entries[key]`` (not a newer one)."""
        last = self._last_entries.get(key)
        if last is not None and last() is None:
            del self._last_entries[key]

    def untyped(self, fn: types.FunctionType, error: Exception,
                argtypes: tuple[Any, ...] = ()) -> Any:
        """What runs ``fn`` (for arguments of ``argtypes``: abstract values, none for any
        arguments) without its typed stages, for ``error``: the plugin's interpreter failed
        to infer it (an ``InterpreterError``: a strict context raises it instead), or its
        instances were rebuilt too often (``splice.runtime.specializing.RebuildLimit``).
        That is ``fn`` transformed as a context without typed stages transforms it (the
        ``lowered`` hooks, calls routed through the table), or ``fn`` itself if that cannot
        be done; the reason is recorded."""
        if self.strict and isinstance(error, InterpreterError):
            raise error
        code = fn.__code__
        compiled = self.code.get(fn, self._build, code)
        if isinstance(compiled, UnsupportedError):
            self._record(fn, False, f"{compiled.reason} (and {error})")
            return fn
        which = f" for arguments ({', '.join(map(str, argtypes))})" if argtypes else ""
        self._record(fn, True, f"transformed without its typed stages{which}: {error}")
        return instantiate(compiled, fn, share_kwdefaults=True, code=code)

    def _build(self, fn: types.FunctionType,
               finish: Callable[[FunctionIR], FunctionIR] | None = None
               ) -> CompiledCode | UnsupportedError:
        """``fn``'s code transformed under this context (``splice.compiler.pipeline``):
        built, or bound from the code its owner keeps (``splice.runtime.sharing``)."""
        owner = self.owner
        if owner is None:
            return build_code(self, fn, finish)
        built: list[CompiledCode | UnsupportedError] = []
        kind = "code" if finish is None else "constructor"

        def build(function: types.FunctionType) -> SharedCode | UnsupportedError:
            loaded = owner.load(function, kind)
            if isinstance(loaded, SharedCode):
                return loaded
            if loaded is not None:  # why the entry on disk was not used
                self._cache_notes[id(function.__code__)] = loaded
            compiled = build_code(self, function, finish)
            owner.compiles += 1
            built.append(compiled)
            shared = share(compiled, self, function.__code__.co_freevars)
            if isinstance(shared, SharedCode):
                owner.save(function, kind, shared)
            return shared

        cache = owner.code if finish is None else owner.constructors
        shared = cache.get(fn, build)
        if built:
            return built[0]
        if not isinstance(shared, SharedCode):
            return shared
        bound = bind(shared, self)
        return bound if bound is not None else build_code(self, fn, finish)

    def _build_constructor(self, init: types.FunctionType) -> CompiledCode | UnsupportedError:
        """``init`` compiled as a constructor (``splice.runtime.constructors``)."""
        return self._build(init, functools.partial(constructor_ir,
                                                   fallback=self._reinstantiate))

    def _route(self, ir: FunctionIR, *, plain: bool) -> FunctionIR:
        native_attributes: set[int] = set()
        route_calls(ir, self.table, self.routed_names, plain=plain,
                    direct_builtins=self.direct_builtin_methods,
                    global_site=self._site_maker(ir),
                    native_attributes=native_attributes, methods=self.table.methods)
        if self.implicit is not None:
            route_implicit(ir, self.implicit, NATIVE_TYPES, ATTRIBUTE_NATIVE_TYPES,
                           skip=(self.table, self.table.fast), compact=plain,
                           native_attributes=frozenset(native_attributes))
        return ir

    def _site_maker(self, ir: FunctionIR) -> Callable[[str], Site | None] | None:
        """For the calls of global names in ``ir``'s scope: one ``Site`` per name, filled
        at once when the table has an entry for the name's current value."""
        fn = ir.function
        if fn is None or ir.kind not in ("function", "lambda"):
            return None
        code = fn.__code__
        local = {*code.co_varnames, *code.co_cellvars, *code.co_freevars}
        namespace = fn.__globals__
        made: dict[str, Site] = {}

        def site_for(name: str) -> Site | None:
            if name in local:
                return None
            site = made.get(name)
            if site is None:
                site = made[name] = Site(self.table)
                site.fill(lookup_global(namespace, name))
            return site
        return site_for

    # ------------------------------------------------------------------------ callables

    def _class(self, cls: type) -> tuple[Any, bool, int]:
        meta = type(cls)
        call = special(meta, "__call__")
        if type(call) is types.FunctionType:
            entry = types.MethodType(self.table[call], cls)
            return self._wrap(cls, entry), False, 0
        if call is not _TYPE_CALL:
            # a metaclass __call__ that is a staticmethod, classmethod, partialmethod,
            # bound or builtin method: the class's call runs it as type's slot binds it
            return self._wrap(cls, cls), True, int(self.hooked)
        if meta is type and all(immutable(kind) for kind in cls.__mro__):
            # a builtin or C extension class (static or immutable heap type, as 3.12's
            # typing.TypeVar): its __new__/__init__ are C code, called from the program's
            # frame (TypeVar takes its __module__ from its caller's globals)
            return self._wrap(cls, cls), True, int(self.hooked)
        if not self.hooked and not self.typed_stages:
            constructor = self._constructor(cls)
            if constructor is not None:
                return constructor, True, 1
        return self._wrap(cls, self._instantiator(cls)), True, 1

    def _constructor(self, cls: type) -> Any:
        """``cls``'s entry as C code calling its ``__init__`` compiled as a constructor
        (``splice.runtime.constructors``: no splice frame), or None where that does not
        apply (then ``_instantiator`` does it)."""
        init = eligible_init(cls)
        if init is None or init in self.intercepts or _is_splice_code(init) or \
                self.decide(init) != self.plugins:
            return None
        compiled = self.constructors.get(init, self._build_constructor)
        if isinstance(compiled, UnsupportedError):
            return None
        defaults, kwdefaults = init.__defaults__, init.__kwdefaults__
        constructor = instantiate(compiled, init)
        constructor.__defaults__, constructor.__kwdefaults__ = sentinel_defaults(
            init.__code__, defaults, kwdefaults)
        # the table is watched: a change of ``init``'s code or defaults drops this entry
        self.table.constructed_by(init, cls)
        self._record(init, True, "transformed")
        return constructor_for(constructor, cls, init, defaults, kwdefaults)

    def _reinstantiate(self, spec: tuple[Any, ...], positional: tuple[Any, ...],
                       varargs: tuple[Any, ...], keywords: dict[str, Any],
                       varkw: dict[str, Any] | None) -> Any:
        """A constructor found its class changed: drop the class's entry and instantiate
        it anew with the arguments its caller passed."""
        args, kwargs = reconstruct(spec, positional, varargs, keywords, varkw)
        cls = spec[0]
        self.table.forget(cls)
        return self.table[cls](*args, **kwargs)

    def _instantiator(self, cls: type) -> Callable[..., Any]:
        """What calling ``cls`` runs under the context. The common case (``__new__`` is
        ``object.__new__``, ``__init__`` a Python function) takes a short path; ``__new__``
        and ``__init__`` are looked up on every call, so replacing them is seen at once."""
        table = self.table
        function = types.FunctionType
        partial = functools.partial

        def instance_steps(*args: Any, **kwargs: Any) -> Steps:
            init: Any = special(cls, "__init__")  # as type's slot finds it, unbound
            new: Any = cls.__new__
            if type(init) is function:
                if type(new) is not function:
                    # a C __new__ (object's, or a builtin base's such as BaseException's)
                    # with the arguments, as type.__call__ passes them: object.__new__
                    # rejects them when the class's __new__ slot is not its own
                    obj: Any = yield (partial(new, cls, *args, **kwargs),)
                    kind = type(obj)
                    if kind is not cls and cls not in kind.__mro__:
                        return obj
                    if kind is not cls:
                        init = special(kind, "__init__")
                        if type(init) is not function:
                            yield (partial(init.__get__(obj, kind), *args, **kwargs),)
                            return obj
                    result = yield (partial(table[init], obj, *args, **kwargs),)
                    if result is not None:
                        raise TypeError("__init__() should return None, not "
                                        f"'{type(result).__name__}'")
                    return obj
            elif type(new) is not function:
                # no Python code to enter
                return (yield (partial(cls, *args, **kwargs),))
            return (yield from self._instantiate_steps(cls, *args, **kwargs))
        instance_steps.__qualname__ = instance_steps.__name__ = getattr(cls, "__name__",
                                                                         "instance")
        instance = drive(instance_steps)
        if INSTANTIATOR is not None:
            # the common case in C, no frame between the caller and ``__init__``
            return INSTANTIATOR(cls, table, instance)  # type: ignore[no-any-return]
        return instance

    def _instantiate_steps(self, cls: type, /, *args: Any, **kwargs: Any) -> Steps:
        """``cls(*args, **kwargs)`` as ``type.__call__`` does it, with a Python ``__new__``
        and ``__init__`` entered under this context (the steps of ``instantiate``)."""
        partial = functools.partial
        new = cls.__new__
        init = special(cls, "__init__")
        if type(new) is not types.FunctionType and type(init) is not types.FunctionType:
            return (yield (partial(type.__call__, cls, *args, **kwargs),))
        if type(new) is types.FunctionType:
            obj = yield (partial(self.table[new], cls, *args, **kwargs),)
        else:
            obj = yield (partial(new, cls, *args, **kwargs),)
        kind = type(obj)
        if cls not in kind.__mro__:
            return obj
        init = special(kind, "__init__")
        if type(init) is types.FunctionType:
            result = yield (partial(self.table[init], obj, *args, **kwargs),)
        else:
            result = yield (partial(init.__get__(obj, kind), *args, **kwargs),)
        if result is not None:
            raise TypeError(f"__init__() should return None, not '{type(result).__name__}'")
        return obj

    def _builtin(self, fn: Any) -> tuple[Any, bool, int]:
        self_ = getattr(fn, "__self__", None)
        if self_ is not None and not isinstance(self_, types.ModuleType):
            method = overlays.METHODS.get((type(self_), fn.__name__))
            if method is not None:
                return self._wrap(fn, functools.partial(method(self.enter), self_)), False, 0
            return self._wrap(fn, fn), False, 0
        return self._wrap(fn, fn), True, int(self.hooked)

    def _partial(self, p: functools.partial[Any]) -> Any:
        # a partial of the entry (C code: no splice frame between the caller and the
        # callee), made again for every call, so the callee's latest entry is used
        return self._wrap(p, functools.partial(self.table[p.func], *p.args, **p.keywords))

    def _nested_run(self, inner: Hooks) -> Any:
        composed = self.context_of((*self.plugins, *plugins_of(inner)))

        def run_nested(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            return composed.run(fn, args, kwargs)
        return run_nested

    # ---------------------------------------------------------------------------- hooks

    def _wrap(self, fn: Any, target: Any) -> Any:
        """``target`` with this context's per-call hooks around it (itself if none).
        Builtins that read their caller's frame (``locals()``, zero-argument ``super()``,
        ...) are never wrapped: a wrapper's frame would become their caller."""
        if not self.hooked or _frame_sensitive(fn):
            return target
        return with_hooks(self.hooks, fn, target)

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

    def _record(self, callee: Any, entered: bool, reason: str) -> None:
        # cheap: called for every new function object entered (``describe`` runs later)
        qualname = getattr(callee, "__qualname__", None) or getattr(callee, "__name__", None)
        key = (getattr(callee, "__module__", None), qualname) if qualname else \
            (None, repr(callee))
        self._reached[key] = (entered, reason)

    @property
    def reached(self) -> dict[str, Reached]:
        """What happened to each callee reached so far, by its name (``splice.explain``)."""
        found: dict[str, Reached] = {}
        for (module, qualname), (entered, reason) in list(self._reached.items()):
            name = f"{module}.{qualname}" if module else str(qualname)
            found[name] = Reached(name, entered, reason)
        return found


_HEAPTYPE = 1 << 9

watch_exec_sources()  # functions made by exec/eval from now on have a source

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


#: builtins whose result depends on the frame that calls them (``compile`` inherits the
#: caller's ``from __future__`` flags)
FRAME_SENSITIVE: frozenset[Any] = frozenset({
    locals, vars, dir, globals, super, eval, exec, compile, breakpoint, sys._getframe,
})


_slot_call: Callable[[Any, Any], Any] = SLOT_CALL if SLOT_CALL is not None else types.MethodType


def _is_splice_code(fn: types.FunctionType) -> bool:
    module = fn.__module__ or ""
    return module == "splice" or module.startswith("splice.")


def _plain_hash(obj: Any) -> bool:
    """Whether hashing ``obj`` runs no Python code (functions, builtins, classes, slot
    wrappers)."""
    kind = type(obj)
    return (kind is types.FunctionType or kind is types.BuiltinFunctionType or kind is type
            or kind is types.WrapperDescriptorType)


def _frame_sensitive(fn: Any) -> bool:
    return (fn is super or type(fn) is types.BuiltinFunctionType) and fn in FRAME_SENSITIVE

"""How a context turns a Python function into its entry: its code transformed.

The code of a function is built once per context (``splice.compiler.pipeline.build_code``)
or, when the context shares code with equally configured ones, bound from what their owner
keeps, built or loaded from the disk cache (``splice.runtime.sharing``,
``splice.cache.owners``). Plugins with typed stages get a specializing entry instead, which
runs a code instance per argument classes (``splice.runtime.specializing``). A function
that cannot be transformed runs as itself, with the reason recorded for ``explain`` (a
strict context raises it). Routing (``_route``) is the context's part of the pipeline: it
points the IR's calls at this context's table and sites.
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from splice.cache.guards import lookup_global
from splice.cache.instances import CodeInstance, Specialization
from splice.cache.owners import Cure
from splice.cache.shared_code import SharedCode
from splice.cache.shared_instances import SharedInstance
from splice.errors import InterpreterError, UnsupportedError
from splice.ir.compiled import CompiledCode, instantiate
from splice.pristine import BUILTINS
from splice.runtime import overlays, processes
from splice.runtime.attributes import ATTRIBUTE_NATIVE_TYPES
from splice.runtime.context_fields import ContextFields, is_splice_code
from splice.runtime.implicit import NATIVE_TYPES
from splice.runtime.native import CHOSEN, HELD_CALL
from splice.runtime.sharing import bind, share
from splice.runtime.sites import Site
from splice.runtime.specializing import SpecializingEntry
from splice.runtime.weakkeys import is_nested

if TYPE_CHECKING:
    from splice.ir.nodes import FunctionIR

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Compiling"]


def _build_code(context: Any, fn: types.FunctionType,
                finish: Callable[[FunctionIR], FunctionIR] | None = None,
                routed: Callable[[FunctionIR], None] | None = None
                ) -> CompiledCode | UnsupportedError:
    """``splice.compiler.pipeline.build_code``, the compiler imported when first needed."""
    from splice.compiler.pipeline import build_code

    return build_code(context, fn, finish, routed)


def _shareable(fn: types.FunctionType) -> bool:
    """Whether ``fn``'s specializing entry may serve every function object of its code
    with the same globals and names (``Compiling._shareable_entry``): a nested function
    without cells and defaults."""
    return fn.__closure__ is None and fn.__defaults__ is None and \
        fn.__kwdefaults__ is None and is_nested(fn)


class Compiling(ContextFields):
    """A context's compiling job: the entries of Python functions."""

    def _function(self, fn: types.FunctionType) -> Any:
        plugins = self._decision(fn)
        if not plugins:
            self._record(fn, False, "recurse returned False")
            return fn
        if plugins != self.plugins:
            return self.context_of(plugins).transformed(fn)
        return self.transformed(fn)

    def recompiled(self, fn: types.FunctionType) -> Any:
        """``fn``'s entry if ``fn``'s code was compiled under this context already and
        nothing but the transformation applies to it (``recompiles``: no per-call hooks,
        and ``recurse`` keeps ``fn`` under this context's plugins); else None, and
        ``resolve`` decides. With typed stages, only a function without cells that can
        share the entry of an earlier object of its code (``_shareable_entry``).

        A closure made in a loop comes here once per function object: what was decided
        for an earlier function of the same code and module (not splice's, not one that
        starts processes, compiled, recorded for ``explain``) is kept in
        ``_recompilable``, checked against the code cache (a code object whose entry
        was dropped is decided again). ``recurse`` is asked for every function object, as
        ``resolve`` asks it: a plugin may decide by the object."""
        declined = self._declined
        if fn in overlays.FUNCTIONS or declined is not None and declined[0]() is fn:
            return None  # (declined: ``keeps`` asked already; ``_function`` takes it)
        code = fn.__code__
        if self.typed_stages:
            shared = self._shareable_entry(fn, code)
            return shared if shared is not None and self.keeps(fn) else None
        compiled = self.code.cached(code)
        if compiled is None or isinstance(compiled, UnsupportedError):
            return None
        module = fn.__module__
        known = self._recompilable.get(id(code))
        fresh = known is None or known[0] is not compiled or known[1] != module
        if fresh and (is_splice_code(fn) or processes.starter(fn) is not None):
            return None
        if not self.keeps(fn):
            return None
        if fresh:
            self._record(fn, True, "transformed")
            self._recompilable[id(code)] = (compiled, module)
            renewals = self.table._renewals
            if renewals is not None and is_nested(fn):
                # from now on the table makes these entries itself, in C, as below (asking
                # ``keeps`` where the plugins have a ``recurse`` or intercept functions)
                plain = self.plain_functions and not self.intercepts
                renewals.add(code, compiled.code, module, compiled.closure_plan,
                             None if plain else self.keeps)
        return instantiate(compiled, fn, share_kwdefaults=True, code=code)

    def keeps(self, fn: types.FunctionType) -> bool:
        """Whether ``fn`` runs under exactly this context, not intercepted: what makes a
        new function object of code compiled already its code's entry again. A function
        the plugins' ``recurse`` sends elsewhere is remembered (weakly) for ``_function``,
        which takes that decision instead of asking again."""
        if self.intercepts and fn in self.intercepts:
            return False
        if self.plain_functions:
            return True
        plugins = self.decide(fn)
        if plugins == self.plugins:
            return True
        self._declined = (weakref.ref(fn), plugins)
        return False

    def _decision(self, fn: types.FunctionType) -> tuple[Any, ...]:
        """The plugins ``fn`` runs under: as ``keeps`` decided it just now, else asked."""
        declined = self._declined
        if declined is not None and declined[0]() is fn:
            self._declined = None
            return declined[1]
        return self.decide(fn)

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
        self._record(fn, True, self._transformed_note(code))
        return instantiate(compiled, fn, share_kwdefaults=True, code=code)

    def _specializing(self, fn: types.FunctionType) -> Any:
        """For plugins with typed stages: an entry that runs ``fn``'s code instance for its
        arguments' exact classes (``splice.runtime.specializing``), or ``fn`` if none can be
        built."""
        code = fn.__code__
        shared = self._shareable_entry(fn, code)
        if shared is not None:
            return shared
        entry = SpecializingEntry(self, fn)
        before = self._last_choices.get(id(code))
        try:
            # a closure made anew (in a loop) takes the choices of the one before it that
            # fit it; a first function object of its code builds what any call can run
            # now, so a function that cannot be transformed runs as itself from its start
            # (one rebuilt too often has no instance to build: its calls run it untyped)
            if not (before is not None and entry.adopt(before)) and \
                    not any(ci.fits(fn) for ci in self.instances.of_code(code)) and \
                    entry.rebuilt_too_often() is None:
                entry.generic()
        except UnsupportedError as exc:
            if entry.rebuilt_too_often() is None:
                self._record(fn, False, exc.reason)
                if self.strict:
                    raise
                return fn
            # (the check of a stale instance made it the last invalidation: the entry
            # runs the function untyped)
        except InterpreterError as exc:
            return self.untyped(fn, exc)
        self._record(fn, True, self._transformed_note(code))
        # (the instances only, by classes: the entry itself holds fn's cells, which must
        # die with fn, and the closure before this one is often dead already)
        self._last_choices[id(code)] = entry.instances
        made: Any = entry
        if CHOSEN is not None:
            # no frame of the entry's; its earlier choices run without Python (_hooks.c)
            # (a nested function held weakly: the table then keys it weakly)
            made = CHOSEN(entry.choose, fn, runners=entry.runners, generic=entry.generic_box,
                          weak=is_nested(fn))
        if _shareable(fn):  # (the first one made: a renamed function keeps its own)
            self._shared_entries.setdefault(id(code), (entry, made))
        return made

    def _shareable_entry(self, fn: types.FunctionType, code: types.CodeType) -> Any:
        """The entry made for an earlier function object of ``code`` that ``fn`` can share,
        or None. A lambda or ``def`` without free variables and defaults made anew in a
        loop (a sort key) is a new object of the same code, globals and names: the entry,
        its instances and the functions running them serve it unchanged (a call cannot
        tell which of the objects it runs), keyed weakly by each object in the table
        (``holds_weakly``). The entry is kept for the code, as the instances are
        (``_last_choices``): it holds nothing else of the program's (no cells, no
        defaults), so it keeps nothing alive that the instances do not. Anything differing
        (a name changed) makes an entry of its own."""
        known = self._shared_entries.get(id(code))
        if known is None or not _shareable(fn):
            return None
        entry, made = known
        parts = entry._parts
        if parts[0] is not code or parts[1] is not fn.__globals__ or \
                entry.__name__ is not fn.__name__ or \
                entry.__qualname__ is not fn.__qualname__ or \
                entry.__module__ is not fn.__module__:
            return None
        return made

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
        built, or bound from the code its owner keeps (``splice.runtime.sharing``). (The
        compiler is imported only where code is built or cured: a process whose code all
        comes from the cache on disk does not load it.)"""
        owner = self.owner
        if owner is None:
            return _build_code(self, fn, finish)
        built: list[CompiledCode | UnsupportedError] = []
        kind = "code" if finish is None else "constructor"

        def build(function: types.FunctionType) -> SharedCode | UnsupportedError:
            loaded = owner.load(function, kind)
            if isinstance(loaded, SharedCode):
                return loaded
            code = function.__code__
            made = {id(function): ("function",)}
            if isinstance(loaded, Cure):
                # its code object cannot be used here, its IR can: generated again from it
                from splice.runtime.stored_code import regenerate

                compiled: CompiledCode | UnsupportedError | None = regenerate(
                    loaded.ir, self, function, {})
                if compiled is not None:
                    self.note_cured(function, loaded.why)
                    built.append(compiled)
                    shared = share(compiled, self, code.co_freevars)
                    if isinstance(shared, SharedCode):
                        owner.save(function, kind, replace(shared, ir=loaded.ir))
                    return shared
                loaded = f"its code cannot be used ({loaded.why}), nor its IR"
            if loaded is not None:  # why the entry on disk was not used
                self._cache_notes[id(code)] = loaded
            ir: list[FunctionIR] = []
            compiled = _build_code(self, function, finish,
                                  ir.append if owner.disk is not None else None)
            owner.compiles += 1
            built.append(compiled)
            shared = share(compiled, self, code.co_freevars)
            if isinstance(shared, SharedCode):
                if ir and shared.template is not None:
                    from splice.runtime.stored_code import store_ir

                    origin = getattr(ir[0], "origin", None)
                    shared = replace(shared, ir=store_ir(ir[0], self, code, made, origin))
                owner.save(function, kind, shared)
            return shared

        cache = owner.code if finish is None else owner.constructors
        shared = cache.get(fn, build)
        if built:
            return built[0]
        if not isinstance(shared, SharedCode):
            return shared
        bound = bind(shared, self)
        return bound if bound is not None else _build_code(self, fn, finish)

    def _transformed_note(self, code: types.CodeType) -> str:
        """What ``explain`` says of a function of ``code`` that was transformed: what
        happened to its entry in the code cache, if anything did."""
        note = self._cache_notes.get(id(code)) if self._cache_notes else None
        if note is None:
            return "transformed"
        return note if note.startswith(("transformed", "cured")) else \
            f"transformed, its cache entry ignored: {note}"

    def callee_instance(self, fn: types.FunctionType, argtypes: tuple[Any, ...],
                        key: Hashable = None) -> CodeInstance:
        """The instance of ``fn`` a direct call for ``argtypes`` (and ``key``) runs under
        this context (``splice.compiler.instances``): the pipeline asks its owner, so that
        it need not import the driver that imports it."""
        from splice.compiler.instances import callee_instance

        return callee_instance(self, fn, argtypes, key)

    def note_cured(self, fn: types.FunctionType, why: str | None) -> None:
        """Say in ``explain`` that ``fn``'s code was generated again from its stored IR,
        not loaded (its stored code could not be used: ``why``) and not built."""
        note = (f"cured: its code in the cache could not be used ({why}), so it was "
                "generated again from the IR stored with it (no hook, no inference)")
        self._cache_notes[id(fn.__code__)] = note
        self._record(fn, True, note)

    def shared_instance(self, fn: types.FunctionType, spec: Specialization
                        ) -> CodeInstance | None:
        """This context's instance of ``spec`` for ``fn`` bound from what its owner keeps
        (``splice.runtime.instance_sharing``), or None: the context builds it."""
        owner = self.owner
        if owner is None:
            return None
        code = spec.code
        shared = owner.instances.find(fn, code, spec.argtypes, spec.key)
        if shared is None:
            loaded = owner.load_instance(fn, spec.argtypes, spec.key)
            if not isinstance(loaded, SharedInstance):
                if loaded is not None:  # why the entry on disk was not used
                    self._cache_notes[id(code)] = loaded
                return None
            owner.instances.add(code, loaded, self.params.max_variants)
            shared = loaded
        from splice.runtime.instance_sharing import bind_instance

        return bind_instance(shared, self, fn)

    def keep_instance(self, ci: CodeInstance) -> None:
        """Give what this context built of ``ci`` to its owner, for the other contexts."""
        owner = self.owner
        if owner is None:
            return
        from splice.runtime.instance_sharing import share_instance

        shared = share_instance(ci, self)
        if shared is not None and owner.instances.add(ci.specialization.code, shared,
                                                      self.params.max_variants):
            fn = ci.fn
            if fn is not None:
                owner.save_instance(fn, shared)

    def _route(self, ir: FunctionIR, *, plain: bool) -> FunctionIR:
        from splice.compiler.route_calls import route_calls
        from splice.compiler.route_implicit import route_implicit

        native_attributes: set[int] = set()
        route_calls(ir, self.table, self.routed_names, plain=plain,
                    callback_keywords=self.callback_keywords,
                    direct_builtins=self.direct_builtin_methods,
                    global_site=self._site_maker(ir),
                    native_attributes=native_attributes, methods=self.table.methods,
                    # entries that may hold a nested function weakly (per-call hooks, typed
                    # stages): a callee only a temporary holds stays alive through its call
                    held_call=HELD_CALL if self.hooked or self.typed_stages else None)
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

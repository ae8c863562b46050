"""What a context holds: its declared fields, and the record of what it reached.

A ``Context`` (``splice.runtime.context``) is built up by job, one module each, each class
adding one job to the one below it:

=====================================  =================================================
``context_fields.ContextFields``       the fields, which plugins a function runs under,
                                       per-call hook wrapping, the record for ``explain``
``compiling.Compiling``                a Python function's entry: its code transformed
                                       (built, shared through the owner, or specialised)
``instantiation.Instantiating``        a class's entry: its instantiation under the context
``context.Context``                    what each callee is entered as (``resolve``),
                                       intercepts, nested runs, the entry point ``run``
=====================================  =================================================

Every piece of state a context keeps is declared here, with what it is for; the context's
``__init__`` sets them all. Nothing of it lives in module globals or on the program's
objects (the context itself is kept in its newest plugin's state:
``splice.runtime.registry``).
"""

from __future__ import annotations

import sys
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splice.cache.code_cache import CodeCache
from splice.cache.instances import CodeInstance, InstanceCache
from splice.cache.owners import Owner
from splice.compiler.params import CompileParams
from splice.errors import UnsupportedError
from splice.hooks import Hooks, HookTable
from splice.ir.compiled import CompiledCode
from splice.pristine import BUILTINS
from splice.runtime.hooked import with_hooks
from splice.runtime.implicit import Implicit
from splice.runtime.table import DispatchTable

if TYPE_CHECKING:
    from splice.runtime.processes import Channel

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["FRAME_SENSITIVE", "ContextFields", "Reached", "is_splice_code", "reached_by_name"]


@dataclass(frozen=True, slots=True)
class Reached:
    """What happened to one callee reached under a context (see ``splice.explain``)."""

    name: str
    entered: bool
    reason: str


class ContextFields:
    """The state of a context, and the jobs every other part of it uses."""

    #: the plugins, outermost first
    plugins: tuple[Hooks, ...]
    #: the context of another stack of plugins, for the runs this one nests
    #: (``splice.runtime.registry.context_of``)
    context_of: Callable[[tuple[Hooks, ...]], Any]
    #: which plugins override which hook (``splice.hooks``)
    hooks: HookTable
    #: ``cls(*args, **kwargs)`` as ``type.__call__`` does it, a Python ``__new__`` and
    #: ``__init__`` entered under this context, with no frame of splice's in between
    #: (``Instantiating._instantiate_steps`` driven by C code, splice.runtime.dunders.drive)
    instantiate: Callable[..., Any]
    #: callee -> what to call instead (``splice.runtime.table``)
    table: DispatchTable
    #: a function's code transformed under this context, by code object
    code: CodeCache[CompiledCode | UnsupportedError]
    #: ``__init__`` code compiled as constructors (``splice.runtime.constructors``)
    constructors: CodeCache[CompiledCode | UnsupportedError]
    #: code instances built under this context (``splice.cache.instances``)
    instances: InstanceCache
    #: id of a code object -> the instances chosen by the specializing entry made last for
    #: a function of it, by argument classes, which a closure made anew adopts (each
    #: instance holds its code, so the id stays unique while this holds them)
    _last_choices: dict[int, dict[tuple[type, ...], CodeInstance]]
    #: id of a code object -> the specializing entry made for a nested function of it
    #: without cells and defaults, and what that entry runs, which a function object made
    #: anew of the same code, globals and names shares (``Compiling._shareable_entry``; the
    #: entry holds its code, so the id stays unique)
    _shared_entries: dict[int, tuple[Any, Any]]
    #: the function ``Compiling.keeps`` last found the plugins send elsewhere (held weakly)
    #: and the plugins they chose, taken by the ``resolve`` that follows
    _declined: tuple[weakref.ref[types.FunctionType], tuple[Hooks, ...]] | None
    #: the compiler's limits and switches for this context
    params: CompileParams
    #: (module, qualified name or repr) -> (entered, reason); ``reached`` names them
    _reached: dict[tuple[Any, str], tuple[bool, str]]
    #: a callee that cannot be transformed raises instead of running natively
    strict: bool
    #: some plugin has a ``typed``/``optimized`` hook or an ``interpreter``: functions
    #: run code instances specialised on their arguments' classes
    typed_stages: bool
    #: intercepted target -> (the plugin, the name of its intercepting method)
    intercepts: dict[Any, tuple[Hooks, str]]
    #: some plugin has per-call hooks (``prehook``, ``posthook``, ``overdub``)
    hooked: bool
    #: threads started under the context run their function under it (a plugin opts
    #: out with ``follow_threads = False``)
    follow_threads: bool
    #: work started in other processes runs there under copies of the plugins
    #: (``splice.runtime.processes``; a plugin opts out with ``follow_processes``)
    follow_processes: bool
    #: the link to the processes work was started in (``Context.process_channel``)
    _processes: Channel | None
    #: a Python function is entered as its transformed code, nothing more (no hook
    #: wraps it, ``recurse`` accepts it under every plugin, no code instances)
    plain_functions: bool
    #: a new function object of code compiled already is entered without resolving it
    #: (``Compiling.recompiled``): no per-call hook wraps functions
    recompiles: bool
    #: builtin functions and methods may be called directly at method sites (and
    #: bound ones need no entry) when no hook sees them; those whose name an overlay
    #: or an intercepted builtin has go through the table
    direct_builtin_methods: bool
    #: the names whose calls are routed through the table even at method sites
    routed_names: frozenset[str]
    #: routed names whose overlay only enters a callable passed by this keyword: a call
    #: that passes neither it nor ``**`` calls the builtin method as it is
    callback_keywords: dict[str, str]
    #: operators, subscripts, iteration and formatting of non-builtin types reach
    #: Python dunders under the context only where some hook needs to see every call
    implicit: Implicit | None
    #: the owner of the code this context shares with the contexts of equally
    #: configured plugins (``splice.cache.owners``); None: the context owns its code
    owner: Owner | None
    #: id of a code object -> why its entry in the disk cache was ignored (explain)
    _cache_notes: dict[int, str]
    #: (type, name) of a builtin method -> its overlay under this context, made once
    _method_overlays: dict[tuple[type, str], Callable[..., Any]]
    #: immutable types (C code) whose instances were called: their call is their own
    _native_objects: set[type]
    #: id of a code object -> (its compiled code, a module) whose functions ``recompiled``
    #: found plain (``Compiling.recompiled``)
    _recompilable: dict[int, tuple[Any, Any]]

    def decide(self, fn: types.FunctionType) -> tuple[Hooks, ...]:
        """The plugins ``fn``'s body runs under, by each plugin's ``recurse``."""
        if self.hooks.recurse_everywhere:
            return self.plugins
        return self.hooks.decide(fn)

    def _wrap(self, fn: Any, target: Any) -> Any:
        """``target`` with this context's per-call hooks around it (itself if none).
        Builtins that read their caller's frame (``locals()``, zero-argument ``super()``,
        ...) are never wrapped: a wrapper's frame would become their caller."""
        if not self.hooked or _frame_sensitive(fn):
            return target
        return with_hooks(self.hooks, fn, target)

    def _record(self, callee: Any, entered: bool, reason: str) -> None:
        # cheap: called for every new function object entered (``describe`` runs later)
        qualname = getattr(callee, "__qualname__", None) or getattr(callee, "__name__", None)
        key = (getattr(callee, "__module__", None), qualname) if qualname else \
            (None, repr(callee))
        self._reached[key] = (entered, reason)

    @property
    def reached(self) -> dict[str, Reached]:
        """What happened to each callee reached so far, by its name (``splice.explain``)."""
        return reached_by_name(self._reached)

    @property
    def reached_records(self) -> dict[tuple[Any, str], tuple[bool, str]]:
        """The records ``reached`` reads, live (a composition's members keep them for
        their own ``splice.explain``: ``PluginState.ran_in``)."""
        return self._reached


def reached_by_name(records: dict[tuple[Any, str], tuple[bool, str]]) -> dict[str, Reached]:
    """Records of what a context reached, as ``Reached`` by the callee's name."""
    found: dict[str, Reached] = {}
    for (module, qualname), (entered, reason) in list(records.items()):
        name = f"{module}.{qualname}" if module else str(qualname)
        found[name] = Reached(name, entered, reason)
    return found


def is_splice_code(fn: types.FunctionType) -> bool:
    """Whether ``fn`` is splice's own (never transformed)."""
    module = fn.__module__ or ""
    return module == "splice" or module.startswith("splice.")


#: builtins whose result depends on the frame that calls them (``compile`` inherits the
#: caller's ``from __future__`` flags)
FRAME_SENSITIVE: frozenset[Any] = frozenset({
    locals, vars, dir, globals, super, eval, exec, compile, breakpoint, sys._getframe,
})


def _frame_sensitive(fn: Any) -> bool:
    return (fn is super or type(fn) is types.BuiltinFunctionType) and fn in FRAME_SENSITIVE

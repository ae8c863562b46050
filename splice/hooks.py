"""The plugin hooks: their names, their defaults, and which of them a stack of plugins
overrides.

``Hooks`` is the base of ``splice.Plugin``: it defines every hook with the default that
changes nothing. A plugin *overrides* a hook when its class's attribute is not the default
(``Hooks.<name>``). ``HookTable.of(plugins)`` computes, once per stack of plugins
(outermost first), which plugins override which hooks; the compiler and the runtime ask it,
never the plugin classes, so one place decides what "has a ``typed`` hook" means.

A hook that is not overridden is never called: a stack of plugins whose hooks are all
defaults runs the program as CPython would, and pays for no hook. That is sound because
each default is the identity of its stage (``lowered``/``typed``/``optimized`` return
None: the IR unchanged; ``recurse`` returns True; ``prehook``/``posthook`` do nothing;
``overdub`` goes on with the call; ``specialize`` returns None: no runtime key).

``run_stage`` runs one IR stage's hooks in order (outermost plugin first), each rewriting
the IR in place or returning new IR; a hook that raises or returns something else becomes
a ``PluginError`` naming the plugin, the hook and the function. ``decide`` asks each
plugin's ``recurse`` which plugins a function runs under, with the same error handling.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from splice.errors import PluginError
from splice.ir.functions import describe
from splice.pristine import BUILTINS

if TYPE_CHECKING:
    from splice.ir.nodes import FunctionIR

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["CALL_HOOKS", "COMPILE_HOOKS", "IR_STAGES", "HookTable", "Hooks", "nests_plugins",
           "nesting", "overrides"]

#: the hooks that rewrite IR, in the order the pipeline runs them
IR_STAGES = ("lowered", "typed", "optimized")
#: the hooks that run around every call under a plugin
CALL_HOOKS = ("prehook", "posthook", "overdub")
#: the hooks that observe the compiler
COMPILE_HOOKS = ("compiled",)

_RETURNS = {stage: f"{stage} hooks return None or a FunctionIR" for stage in IR_STAGES}


class Hooks:
    """Every plugin hook and switch, with the default that changes nothing
    (``splice.Plugin`` documents what each does)."""

    #: a callee splice cannot transform raises ``UnsupportedError`` instead of running
    #: natively
    strict: bool = False
    #: whether operators, subscripts, attribute access, iteration and formatting of
    #: non-builtin types enter Python dunders, properties and descriptors under the plugin
    #: (docs/runtime.md, "Implicit calls"): None means only when
    #: the plugin has per-call hooks (``prehook``, ``posthook``, ``overdub``); True asks for
    #: it anyway (a ``lowered`` pass that must see dunder bodies), False declines it
    implicit_calls: bool | None = None
    #: a call keeps the definitions it started with (``splice.Plugin`` says more)
    world_age: bool = False
    #: intercepts apply to the calls made while ``run`` is active (``splice.Plugin`` says more)
    dynamic_scope: bool = False
    #: threads started under the plugin (``threading.Thread``, ``ThreadPoolExecutor``,
    #: ``loop.run_in_executor``) run their targets under it too; False: natively
    follow_threads: bool = True
    #: work started under the plugin in other processes (``ProcessPoolExecutor``,
    #: ``multiprocessing.Pool``, ``multiprocessing.Process``) runs there under an equal
    #: plugin, sent pickled (``splice.runtime.processes``); False: natively
    follow_processes: bool = True
    #: intercepted target -> the name of the method that replaces it (``__init_subclass__``
    #: of ``splice.Plugin`` fills it from ``@splice.intercept`` marks)
    _splice_intercepts: ClassVar[dict[Any, str]] = {}
    #: splice's state of this plugin object (``splice.runtime.plugin_state``): None on the
    #: class, set in each instance's ``__dict__``
    _splice: ClassVar[Any] = None
    #: the abstract interpreter inference uses under this plugin (None: the default)
    interpreter: Any = None

    def recurse(self, fn: Callable[..., Any]) -> bool | Hooks:
        """Whether to enter ``fn`` under this plugin (True), run it natively with
        everything below it (False), or run it under another plugin (return that one)."""
        return True

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Called before each call under the plugin."""

    def posthook(self, result: Any, fn: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        """Called after each call under the plugin returns."""

    def overdub(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run one call under the plugin; the default goes on with it unchanged."""
        return self.recurse_call(fn, *args, **kwargs)

    def recurse_call(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Go on with the call of ``fn`` under the plugin (``splice.Plugin`` defines it)."""
        raise NotImplementedError

    def lowered(self, ir: FunctionIR) -> FunctionIR | None:
        """Rewrite a function's lowered IR (with ``splice.ir.tools``) before compilation."""
        return None

    def typed(self, ir: FunctionIR) -> FunctionIR | None:
        """Rewrite a function's type-inferred IR (in place, or return new IR). Rewrites
        that depend on types must hold for every value of the inferred types."""
        return None

    def optimized(self, ir: FunctionIR) -> FunctionIR | None:
        """Rewrite a function's IR after splice's optimisation stage."""
        return None

    def specialize(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                   ) -> Hashable | None:
        """A runtime key to specialize this call on (None: types only)."""
        return None

    def cache_token(self) -> Hashable:
        """A hashable value naming everything this plugin's compile-time hooks read
        (``lowered``, ``typed``, ``optimized``, ``recurse``, ``specialize``, the intercepts
        and class attributes such as ``implicit_calls``), or None (the default).

        Plugins of the same class with equal tokens share their compiled code: a new
        plugin object configured like an earlier one compiles nothing the earlier one
        compiled. The token is read each time a run starts, so a plugin whose
        configuration changed gets code for its new configuration. What a hook reads at
        run time (a list it appends events to, counters) is not part of the token, and
        must not be inserted into the code as a constant other than as an attribute of the
        plugin (those are rebound to each plugin's own). None: this plugin object owns its
        code, built again for every new plugin object (call ``invalidate`` after changing
        what its hooks read)."""
        return None

    def compiled(self, fn: Any, start_ns: int, end_ns: int) -> None:
        """Called after splice compiled ``fn`` (and what that compile built with it) under
        the plugin, with the ``time.perf_counter_ns`` interval it took, on the thread
        that compiled it, before ``fn`` runs: a profiler can keep compile time out of
        the program's."""


F = TypeVar("F", bound=Callable[..., Any])

#: the mark of a method that runs a call under its plugin (``nests_plugins``)
_NESTS = "_splice_nests_plugins"


def nests_plugins(method: F) -> F:
    """Mark ``method`` (``splice.Plugin.run``) as running a call under its plugin: called
    on another plugin under a context, the runtime runs it under the composition of both
    (``nesting``). A mark, so that the runtime, below the plugin API, need not import it."""
    setattr(method, _NESTS, True)
    return method


def nesting(fn: Any) -> bool:
    """Whether the function ``fn`` is marked by ``nests_plugins``."""
    return fn.__dict__.get(_NESTS, False) is True


def overrides(plugin: Any, hook: str) -> bool:
    """Whether ``plugin``'s class overrides ``hook`` (a method name of ``Hooks``)."""
    return getattr(type(plugin), hook, None) is not getattr(Hooks, hook)


@dataclass(frozen=True, eq=False)
class HookTable:
    """Which plugins of a stack (outermost first) override which hook."""

    plugins: tuple[Any, ...]
    #: prehooks run outermost first, posthooks innermost first, overdubs nest
    prehooks: tuple[Any, ...]
    posthooks: tuple[Any, ...]
    overdubs: tuple[Any, ...]
    #: IR stage -> the plugins overriding its hook, outermost first
    stages: dict[str, tuple[Any, ...]]
    #: plugins told how long each compile took (``compiled``)
    compile_observers: tuple[Any, ...]
    #: the outermost plugin that chooses an abstract interpreter (None: none does)
    chooser: Any
    #: no plugin overrides ``recurse``: every function is entered under all of them
    recurse_everywhere: bool
    #: plugins giving runtime keys (``specialize``), outermost first
    specializers: tuple[Any, ...] = ()

    @classmethod
    def of(cls, plugins: tuple[Any, ...]) -> HookTable:
        """The table of ``plugins`` (outermost first)."""
        def overriding(hook: str) -> tuple[Any, ...]:
            return tuple(p for p in plugins if overrides(p, hook))
        chooser = next((p for p in plugins if getattr(p, "interpreter", None) is not None),
                       None)
        return cls(plugins=plugins, prehooks=overriding("prehook"),
                   posthooks=tuple(reversed(overriding("posthook"))),
                   overdubs=overriding("overdub"),
                   compile_observers=overriding("compiled"),
                   stages={stage: overriding(stage) for stage in IR_STAGES},
                   chooser=chooser,
                   recurse_everywhere=not overriding("recurse"),
                   specializers=overriding("specialize"))

    @property
    def hooked(self) -> bool:
        """Whether some plugin has a per-call hook (``prehook``, ``posthook``,
        ``overdub``)."""
        return bool(self.prehooks or self.posthooks or self.overdubs)

    @property
    def typed_stages(self) -> bool:
        """Whether the typed stages are worth running: some plugin has a ``typed`` or
        ``optimized`` hook, chooses an ``interpreter`` or gives runtime keys (code
        instances are what a key selects)."""
        return bool(self.stages["typed"] or self.stages["optimized"]
                    or self.chooser is not None or self.specializers)

    def key_of(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable:
        """The runtime key of a call of ``fn``: the ``specialize`` result of the one plugin
        that gives keys, a tuple of them for several (None: no key, when all say None)."""
        keys = []
        for plugin in self.specializers:
            try:
                key = plugin.specialize(fn, args, kwargs)
            except RecursionError:
                raise
            except Exception as exc:
                raise PluginError.raised(plugin, "specialize", describe(fn), exc) from exc
            try:
                hash(key)
            except Exception as exc:
                raise PluginError.returned(plugin, "specialize", describe(fn), key,
                                           "it returns a hashable key or None") from exc
            keys.append(key)
        if all(k is None for k in keys):
            return None
        return keys[0] if len(keys) == 1 else tuple(keys)

    def run_stage(self, stage: str, ir: FunctionIR, fn: Any) -> FunctionIR:
        """``ir`` (of the function ``fn``) through the ``stage`` hooks (each rewrites it in
        place or returns new IR), outermost plugin first."""
        for plugin in self.stages[stage]:
            try:
                result = getattr(plugin, stage)(ir)
            except RecursionError:
                raise  # (the compile's own: ``UnsupportedError.recursion_limit`` says so)
            except Exception as exc:
                raise PluginError.raised(plugin, stage, describe(fn), exc) from exc
            if result is not None:
                from splice.ir.nodes import FunctionIR

                if not isinstance(result, FunctionIR):
                    raise PluginError.returned(plugin, stage, describe(fn), result,
                                               _RETURNS[stage])
                ir = result
        return ir

    def report_compile(self, fn: Any, start_ns: int, end_ns: int) -> None:
        """Tell the plugins that observe the compiler how long compiling ``fn`` took."""
        for plugin in self.compile_observers:
            try:
                plugin.compiled(fn, start_ns, end_ns)
            except RecursionError:
                raise
            except Exception as exc:
                raise PluginError.raised(plugin, "compiled", describe(fn), exc) from exc

    def decide(self, fn: Any) -> tuple[Any, ...]:
        """The plugins ``fn``'s body runs under, by each plugin's ``recurse``."""
        if self.recurse_everywhere:
            return self.plugins
        chosen: list[Any] = []
        for plugin in self.plugins:
            try:
                verdict = plugin.recurse(fn)
            except RecursionError:
                raise
            except Exception as exc:
                raise PluginError.raised(plugin, "recurse", describe(fn), exc) from exc
            if verdict is True:
                chosen.append(plugin)
            elif isinstance(verdict, Hooks):
                chosen.append(verdict)
            elif verdict is not False:
                raise PluginError.returned(plugin, "recurse", describe(fn), verdict,
                                           "it must return True, False or a plugin")
        return tuple(chosen)

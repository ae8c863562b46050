"""The plugin API: ``splice.Plugin``, ``splice.intercept`` and ``splice.compose``."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Hashable
from typing import Any, Self, TypeVar

from splice.cache.instances import CodeInstance
from splice.errors import SpliceError
from splice.hooks import Hooks, nests_plugins
from splice.ir.functions import function_of
from splice.keys import get_hashed
from splice.pristine import BUILTINS
from splice.runtime import native, scopes
from splice.runtime.context import Context, Reached
from splice.runtime.pending import PENDING, PENDING_ANYWHERE
from splice.runtime.plugin_state import STATE, plugins_of, state_of
from splice.runtime.registry import context_of

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Plugin", "compile", "compose", "explain", "intercept", "precompile"]

F = TypeVar("F", bound=Callable[..., Any])


def intercept(target: Any) -> Callable[[F], F]:
    """Mark a plugin method as the replacement of ``target`` under the plugin.

    ``target`` may be a Python function, a method given as ``Class.method``, a builtin
    (a C method such as ``list.append`` is intercepted however it is called, ``out.append(x)``
    too, the receiver coming first), or a class (its instantiation). The method receives the
    call's arguments; it can call
    ``self.recurse_call(target, *args, **kwargs)`` to run the original under the plugin::

        class Offline(splice.Plugin):
            @splice.intercept(urllib.request.urlopen)
            def urlopen(self, url, *args, **kwargs):
                raise OSError("offline")

    It marks methods of ``splice.Plugin`` subclasses only; anything else is a
    ``TypeError`` where the mark is used.
    """
    if not callable(target):
        raise TypeError(f"intercept() takes the function, method, builtin or class whose "
                        f"calls the method replaces, not {type(target).__name__}")

    def mark(method: F) -> F:
        if isinstance(method, _Intercepting):
            method = method.method  # (several targets: marks stack)
        if not callable(method):
            raise TypeError(f"@splice.intercept(...) marks a method, not "
                            f"{type(method).__name__}")
        targets = list(getattr(method, "_splice_targets", ()))
        targets.append(target)
        method._splice_targets = targets  # type: ignore[attr-defined]
        return _Intercepting(method)  # type: ignore[return-value]
    mark._splice_unapplied = target  # type: ignore[attr-defined]
    return mark


class _Intercepting:
    """A marked method while its class is being made: it checks that the class is a
    plugin, then puts the method itself in its place."""

    def __init__(self, method: Any) -> None:
        self.method = method

    def __set_name__(self, owner: type, name: str) -> None:
        if not issubclass(owner, Plugin):
            raise TypeError(f"@splice.intercept marks methods of splice.Plugin subclasses; "
                            f"{owner.__qualname__} is not one (make it "
                            f"class {owner.__name__}(splice.Plugin))")
        setattr(owner, name, self.method)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{getattr(self.method, '__qualname__', self.method)} is marked by "
                        "@splice.intercept outside a class: the mark is for methods of "
                        "splice.Plugin subclasses")


class Plugin(Hooks):
    """A compiler plugin: hooks that change how a whole call graph runs.

    Every hook is optional; a plugin that defines none runs code as CPython does.

    * ``recurse(fn)``: enter ``fn`` under this plugin (True, the default), run it natively
      with everything below it (False), or run it under another plugin (return that plugin).
    * ``prehook(fn, args, kwargs)`` / ``posthook(result, fn, args, kwargs)``: called around
      every call made under the plugin (``posthook`` only when the call returns).
    * ``overdub(fn, args, kwargs)``: replaces every call; ``self.recurse_call(fn, *args,
      **kwargs)`` goes on with it.
    * ``@splice.intercept(target)`` on a method: replaces calls of ``target``.
    * ``lowered(ir)``: rewrites each function's lowered IR (in place, or returns new IR)
      before it is compiled under the plugin.
    * ``typed(ir)``: rewrites the IR after type inference: values carry their abstract
      values (``Temp.annotation``; ``splice.ir.typed_tools``) and calls their resolved
      callees. ``optimized(ir)``: the same after splice's optimisation stage. Both run for
      code instances (``splice.compile``/``splice.invoke``; see docs/instances.md).
    * ``interpreter``: the ``splice.infer.AbstractInterpreter`` inference uses under this
      plugin (None: the default one).
    * ``specialize(fn, args, kwargs)``: a hashable runtime key to specialize a call on,
      finer than its argument types (None: no key).
    * ``strict``: when true, a callee splice cannot transform raises ``UnsupportedError``
      instead of running natively.
    * ``implicit_calls``: whether dunders reached by operators, subscripts, attribute
      access, iteration, ``with``, formatting and class statements run under the plugin
      (default: when it has per-call hooks).
    * ``world_age``: False (the default): a callee a ``typed`` hook replaced runs only
      where the program would still call what inference resolved, checked at each use (a
      callee may rebind a global while its caller runs, and Python calls the latest
      binding). True: a call keeps the definitions it started with, as in Julia's world
      age: they are checked when the call starts (the instance's guards), not at each use,
      so a rebinding made while the call runs is seen from the next call on.
    * ``dynamic_scope``: False (the default): ``run`` transforms the call graph it reaches.
      True, for a plugin whose only hooks are intercepts of Python functions: nothing is
      transformed; while ``run`` is active, the targets' calls made in the current
      ``contextvars`` context go to the plugin's methods and all other code runs natively
      (``splice.runtime.dynamic``: it reaches more, calls from native code included, but
      generators created under it and resumed after ``run`` returned do not keep it).

    * ``follow_threads``: True (the default): a thread started under the plugin runs its
      target under it too (as ``contextvars`` carried into the thread); False: natively.
      A composition follows threads when all its plugins do.

    A hook other than ``overdub`` and intercepts that raises, or returns what it cannot
    return, is a ``splice.PluginError`` naming the plugin, the hook and the function (the
    hook's exception is its ``__cause__``); what ``overdub`` or an intercepting method
    raises reaches the program as raised. A failing ``interpreter`` makes the function run
    without its typed stages (``explain`` says why; ``strict``: a ``PluginError``).

    Composition (``splice.compose(a, b)``, or ``a.run(b.run, f)``): prehooks run outermost
    first, posthooks innermost first, overdubs nest (``a``'s receives the call and its
    ``recurse_call`` reaches ``b``'s); the outermost plugin's intercept of a target wins; a
    callee is entered under the plugins whose ``recurse`` accepts it. A composition's
    context (its code cache) is kept by its newest plugin, and keeps all of its plugins
    alive: ``compose(long_lived, Plugin()).run(f)`` leaves nothing on ``long_lived``.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        if (args or kwargs) and cls.__init__ is object.__init__:
            raise TypeError(f"{cls.__name__}() takes no arguments")  # as object's
        self = super().__new__(cls)
        state_of(self)  # the order plugins are made in: a composition's newest keeps its context
        return self

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[Any, str] = {}
        for name, value in vars(cls).items():
            if getattr(value, "_splice_unapplied", None) is not None:
                raise TypeError(f"{cls.__qualname__}.{name}: @splice.intercept needs the "
                                "target it replaces: @splice.intercept(target)")
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                for target in getattr(value, "_splice_targets", ()):
                    found[target] = name
        cls._splice_intercepts = found

    # ------------------------------------------------------------------------- caching

    def invalidate(self) -> None:
        """Drop the code compiled under this plugin (and the compositions holding it), so
        that the next run compiles for its current configuration: for a plugin without a
        ``cache_token`` whose hooks now behave differently. (A plugin with a token needs
        none: a changed token selects other code; code shared with equal tokens stays.)"""
        state_of(self).invalidate()

    # --------------------------------------------------------------- other processes

    def __getstate__(self) -> dict[str, Any]:
        """The plugin's configuration, as pickled to run work in another process: its
        ``__dict__`` without splice's own state (contexts, code caches), which the copy
        makes anew. A plugin holding what cannot be pickled leaves it out here."""
        return {k: v for k, v in self.__dict__.items()
                if k != STATE and not k.startswith("_splice_")}

    def worker_report(self) -> Any:
        """Called on this plugin's copy in a worker process when the process ends: what
        it collected there (picklable), sent to the plugin that started the work, or None
        (the default) to send nothing."""
        return None

    def merge_worker_report(self, report: Any, pid: int) -> None:
        """Called on the plugin that started work in other processes, with the report of
        its copy in process ``pid`` (``worker_report``), at the end of a ``run`` (a report
        that arrives later, from a pool still running then, at the end of the next one).
        The default ignores it."""

    # ------------------------------------------------------------------------- running

    @property
    def context(self) -> Context:
        """This plugin's context (the owner of its code cache)."""
        return context_of((self,))

    @nests_plugins
    def run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Call ``fn(*args, **kwargs)`` with everything it reaches under this plugin."""
        if not isinstance(self, Plugin):  # ``Plugin.run(f, x)``: called on the class
            raise _on_the_class("run", self)
        if self.dynamic_scope:
            from splice.runtime import dynamic

            return dynamic.run(self, fn, args, kwargs)
        active = scopes.SCOPES.get()
        if active:  # started in dynamic scopes: they stay outermost
            return context_of((*active, *plugins_of(self))).run(fn, args, kwargs)
        return self.context.run(fn, args, kwargs)

    def wrap(self, fn: F) -> F:
        """A decorator: every call of the result runs ``fn`` under this plugin."""
        if not isinstance(self, Plugin):
            raise _on_the_class("wrap", self)
        if not callable(fn):
            raise TypeError(f"wrap() takes the function to run under the plugin (it is a "
                            f"decorator: @plugin.wrap), not {type(fn).__name__}")
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return self.run(fn, *args, **kwargs)
        return wrapper  # type: ignore[return-value]

    def recurse_call(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """From ``overdub`` or an intercepting method: go on with the call of ``fn`` under
        the plugin. Called with another callee, it calls that one under the plugin."""
        if PENDING_ANYWHERE:  # ``continuation_for``, inline: this runs for every call
            stack = PENDING.stack
            if stack:
                target, continuation = stack[-1]
                if target is fn:
                    return continuation(*args, **kwargs)
        if self.dynamic_scope:  # everything in a dynamic scope runs natively
            target = get_hashed(scopes.ACTIVE, fn)  # a patched target runs its original body
            return (fn if target is None else target.body)(*args, **kwargs)
        state = self._splice
        if state is not None:  # an intercept of its first context: its original's entry
            original = get_hashed(state.bypass, fn)
            if original is not None:
                return original(*args, **kwargs)
        return self.context.recurse_call(fn, args, kwargs)


def _on_the_class(method: str, given: Any) -> TypeError:
    """The error of ``Plugin.run(f, x)``: a plugin method called on the class, so that its
    first argument took the place of the plugin."""
    what = getattr(given, "__qualname__", None) or type(given).__name__
    return TypeError(f"Plugin.{method}() is called on a plugin object, not on the class: "
                     f"splice.Plugin().{method}(...) or MyPlugin(...).{method}(...); here "
                     f"{what} was given where the plugin goes")


try:  # the same method in C, when built (splice/runtime/_recurse.c)
    from splice.runtime._recurse import RecurseCall
except ImportError:  # pragma: no cover - built without a compiler
    pass
else:
    Plugin.recurse_call = RecurseCall(  # type: ignore[method-assign]
        Plugin.recurse_call, PENDING, PENDING_ANYWHERE, scopes.ACTIVE)

if native.RUN_CALL is not None:  # a run with no frame of splice's (splice/runtime/_recurse.c)
    Plugin.run = native.RUN_CALL(Plugin.run, scopes.SCOPES)  # type: ignore[method-assign]


class Composed(Plugin):
    """Several plugins run as one (``splice.compose``)."""

    plugins: tuple[Plugin, ...]

    def __init__(self, *plugins: Plugin) -> None:
        flat: list[Plugin] = []
        for plugin in plugins:
            flat.extend(plugin.plugins if isinstance(plugin, Composed) else (plugin,))
        if not flat:
            raise ValueError("compose() needs at least one plugin")
        self.plugins = tuple(flat)

    @property
    def context(self) -> Context:
        return context_of(self.plugins)

    def __repr__(self) -> str:
        return f"compose({', '.join(type(p).__name__ for p in self.plugins)})"


def compose(*plugins: Plugin) -> Plugin:
    """One plugin that runs ``plugins`` together, the first outermost."""
    for plugin in plugins:
        if isinstance(plugin, type) and issubclass(plugin, Plugin):
            raise TypeError(f"compose() takes plugin objects, not the class "
                            f"{plugin.__name__}: compose({plugin.__name__}(), ...)")
        if not isinstance(plugin, Plugin):
            raise TypeError(f"compose() takes plugins, not {type(plugin).__name__}")
    return Composed(*plugins)


class Explanation(list[Reached]):
    """What ``splice.explain`` returns: the ``Reached`` records (a list), printed grouped
    by what happened, with callees that are not Python code folded into one line each."""

    def __init__(self, reached: list[Reached], title: str) -> None:
        super().__init__(reached)
        self.title = title

    def __str__(self) -> str:
        if not self:
            return f"{self.title}: nothing reached yet"
        groups: dict[tuple[bool, str], list[str]] = {}
        for record in self:
            groups.setdefault((not record.entered, record.reason), []).append(record.name)
        lines = [f"{self.title}: {len(self)} callees"]
        folded: dict[str, int] = {}
        for (unentered, reason), names in sorted(groups.items(), key=lambda g: g[0]):
            if reason.startswith("not Python code"):
                folded[reason] = len(names)
                continue
            head = f"run natively: {reason}" if unentered else \
                ("entered" if reason == "transformed" else f"entered, {reason}")
            lines.append(f"{head} ({len(names)}):")
            lines.extend(f"  {name}" for name in names)
        if folded:
            lines.append(f"run natively, not Python code ({sum(folded.values())}): " +
                         ", ".join(f"{reason[len('not Python code ('):-1]} x{count}"
                                   for reason, count in sorted(folded.items())))
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython
        printer.text(str(self))


def explain(plugin: Plugin, fn: Any = None) -> Explanation:
    """What happened to each callee reached under ``plugin`` so far: entered (transformed)
    or run natively, and why (a list of ``Reached``; printing it groups them), in every
    run of the plugin: alone, and in each composition it was part of
    (``compose(a, plugin).run(...)``, ``a.run(plugin.run, ...)``), those since gone
    included. A callee reached the same way in several of them is listed once. With
    ``fn``, only the entries for that callee."""
    from splice.ir.functions import describe
    from splice.runtime.context_fields import reached_by_name

    if not isinstance(plugin, Plugin):
        raise TypeError(f"explain() takes a plugin (what ran the code: splice.explain("
                        f"plugin, fn) for one function), not {type(plugin).__name__}")
    own = list(plugin.context.reached.values())
    if fn is not None and not callable(fn):
        raise TypeError(f"explain(plugin, fn): fn is the callee to report on (a function, "
                        f"method, class or builtin), not {type(fn).__name__}")
    reached = list(own)
    seen = {(r.name, r.entered, r.reason) for r in reached}
    where = ["alone"] if own else []
    for name, records in state_of(plugin).reached_in_compositions():
        found = reached_by_name(records)
        if found:
            where.append(f"in {name}")
        for record in found.values():
            if (record.name, record.entered, record.reason) not in seen:
                seen.add((record.name, record.entered, record.reason))
                reached.append(record)
    title = f"splice.explain({type(plugin).__name__})"
    if fn is not None:
        name = describe(fn)
        reached = [r for r in reached if r.name == name]
        title = f"splice.explain({type(plugin).__name__}, {name})"
    if where != ["alone"] and where:
        title += f" ({', '.join(where)})"
    return Explanation(reached, title)


def compile(plugin: Plugin | None, fn: Any, /, *argtypes: Any, key: Hashable = None
            ) -> CodeInstance:
    """The code instance of ``fn`` specialized on ``argtypes`` (classes, typing forms such
    as ``int | float``, or ``splice.infer`` abstract values, for ``fn``'s leading positional
    parameters; the others are ``Any``) under ``plugin`` (``None``: an identity plugin).
    Cached per owner and specialization: compiling again returns the same instance while
    it is valid. ``key``: a runtime key, as ``Plugin.specialize`` returns."""
    if plugin is None:
        plugin = _identity()
    if isinstance(plugin, type) and issubclass(plugin, Plugin):
        raise TypeError(f"compile() takes a plugin object, not the class {plugin.__name__}: "
                        f"splice.compile({plugin.__name__}(), fn, ...)")
    if not isinstance(plugin, Plugin):
        raise TypeError(f"compile() takes a plugin (or None), not {type(plugin).__name__}")
    _check_argtypes(fn, argtypes)
    context = plugin.context
    if key is not None and not context.hooks.specializers:
        raise TypeError(f"compile(..., key={key!r}): {type(plugin).__name__} defines no "
                        "specialize hook, so no call would ever have that key and the "
                        "instance could never be invoked; define specialize(fn, args, "
                        "kwargs) to give calls their keys, or leave out key=")
    from splice.compiler.instances import compile_for

    return compile_for(context, function_of(fn), argtypes, key)


def _check_argtypes(fn: Any, argtypes: tuple[Any, ...]) -> None:
    """``TypeError`` naming the first of ``argtypes`` that is no type (a value given where
    its type goes: ``compile(plugin, simulate, 3)``) and what ``compile`` takes."""
    from splice.infer.lattice import abstract

    for index, given in enumerate(argtypes):
        try:
            abstract(given)
        except TypeError:
            name = getattr(fn, "__name__", "fn")
            raise TypeError(
                f"compile(plugin, {name}, *argtypes): argument type {index + 1} is "
                f"{given!r}, not a type: argtypes are the types of {name}'s leading "
                f"positional parameters (classes such as int or float, typing forms such "
                f"as int | None, or splice.infer abstract values), so "
                f"compile(plugin, {name}, {type(given).__name__}); the values go to "
                f"splice.invoke(instance, {given!r})") from None


def precompile(plugin: Plugin, fn: Any, /, *argtypes: Any) -> list[str]:
    """Build ``fn``'s code under ``plugin``, and that of the functions and classes it calls
    by name, ahead of a run (like Julia's ``precompile``): the first call then finds them
    built, and an owner with a cache token writes them to the code cache on disk
    (docs/cache.md). Under typed stages, ``fn``'s instance for ``argtypes`` is built (as
    ``splice.compile``) and the generic instances of the Python functions its typed IR
    calls. Returns the names of what was made ready; what cannot be transformed is left
    out (``splice.explain`` says why)."""
    from splice.compiler.lowered import lowered
    from splice.ir.functions import describe

    if not isinstance(plugin, Plugin):
        raise TypeError(f"precompile() takes a plugin object, not {type(plugin).__name__}")
    from splice.compiler.instances import compile_for
    from splice.ir.nodes import Assign, MakeComprehension, MakeLambda

    function = function_of(fn)
    context = plugin.context
    ready: list[str] = []
    if context.typed_stages:
        instance = compile_for(context, function, argtypes)
        ready.append(describe(function))
        for site in instance.typed.calls():
            callee = site.op.callee
            if type(callee) is types.FunctionType and callee is not function:
                try:
                    compile_for(context, callee, ())
                except SpliceError:
                    continue
                ready.append(describe(callee))
        return list(dict.fromkeys(ready))
    targets: list[Any] = [function]
    ir = lowered(function)
    if not isinstance(ir, SpliceError):
        scopes = [ir]  # (a copy: its scopes get the function, for callees to resolve in)
        while scopes:  # the function and its comprehensions and lambdas (its own code)
            scope = scopes.pop()
            scope.function = function
            scopes += [stmt.op.fn for stmt in scope.walk() if isinstance(stmt, Assign)
                       and isinstance(stmt.op, (MakeComprehension, MakeLambda))]
            for site in scope.calls():
                callee = site.callee
                if isinstance(callee, (types.FunctionType, type)) and callee is not function:
                    targets.append(callee)
    for target in dict.fromkeys(targets):
        if context.table[target] is not target:  # (itself: it runs natively)
            ready.append(describe(target))
    return ready


@functools.cache
def _identity() -> Plugin:
    """The plugin ``compile(None, ...)`` uses: one for the process, so its instances are
    cached like any plugin's."""
    return Plugin()

"""Choosing a code instance per call, for contexts whose plugins use the typed stages.

``SpecializingEntry(owner, fn)`` is a callable that a context's dispatch table can hold for
``fn``: each call picks ``fn``'s code instance for the exact classes of its positional
arguments (compiling it on first use, or sharing the instance of another function object
of the same code that fits ``fn``), up to ``max_specializations`` of them; calls beyond
that, calls with keywords and calls whose instance cannot be specialised run the generic
instance (every argument ``Any``). An instance is used only while it is valid and its
guards hold (checked on every call: 3.11 has no dict watchers), else it is rebuilt; once
the instances of ``fn``'s code were invalidated ``max_rebuilds`` times (``CompileParams``:
a program that rebinds what they relied on, run after run), calls run ``fn`` without its
typed stages (the owner's ``untyped``), so no program builds a function without bound.

Under plugins that give runtime keys (``Plugin.specialize``), a call whose key is not None
runs the instance for its classes *and* key (the stage hooks see the key as ``ir.key``), up
to ``max_keys`` keys per function (``CompileParams``); later keys run the key-less
instances. A keyed instance relies on what its key-less counterpart relies on (the same
inference, the same edges), so it is invalidated by the same changes. Plugins without
``specialize`` pay nothing: no key is asked for.

Specialising on exact classes is sound: every argument's class is exactly the one the
instance was inferred for. The cost per call is a tuple of the argument classes and a dict
lookup (skipped for the last few class tuples seen) and the instance's guard checks (a few
version comparisons while nothing they read changed); that is why a context should use this
entry only when some plugin has a ``typed`` or ``optimized`` hook or an ``interpreter``
(``splice.hooks.HookTable.typed_stages``). With the C extensions built, the table holds
``Chosen(entry.choose, fn, runners=entry.runners, generic=entry.generic_box)``: a call
without keywords whose classes were seen before runs its runner's function after the
runner's C check (the instance's validity flag, its guards and ``fn``'s cells:
``CodeInstance.check_for``), with no Python code of splice's, and so does a call with
keywords once the generic runner exists; a failing check or a new class tuple goes through
:meth:`choose`, which checks again in Python (and invalidates) before it chooses.
"""

from __future__ import annotations

import threading
import types
import weakref
from typing import Any

from splice.cache.guards import guard_check
from splice.cache.instances import MAX_WORLD, CodeInstance
from splice.errors import InterpreterError, UnsupportedError
from splice.keys import keyable_classes
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["RebuildLimit", "SpecializingEntry"]


class RebuildLimit(Exception):
    """Why a function runs without its typed stages: its instances were invalidated
    ``CompileParams.max_rebuilds`` times (never raised, not even by a strict context)."""


#: what runs a call: its code instance (None: no instance, the interpreter failed), the
#: function running it for the entry's function and the C check of whether it may run
#: (``CodeInstance.check_for``; None without the C extension)
_Runner = tuple[CodeInstance | None, types.FunctionType, Any]

#: the check of a runner without an instance: always true (None without the C extension)
_ALWAYS = guard_check(None, ())


class _ThisCallOnly(tuple):  # type: ignore[type-arg]
    """A runner for the call under way only, never kept: its instance could not be built
    for a transient reason (the program's recursion limit too low for splice's compile,
    ``UnsupportedError.recursion_limit``), so a later call builds it again."""


def _kept(runner: _Runner) -> bool:
    return type(runner) is not _ThisCallOnly


class SpecializingEntry:
    """Calls ``fn`` through the code instance chosen for its arguments' exact classes.

    The entry holds ``fn`` weakly (the dispatch table sweeps it once only the table refers
    to ``fn``); instances are shared by the function objects of one code object that fit
    them (``CodeInstance.fits``), so a closure made anew in a loop reuses the instances of
    the closures before it. What the entry keeps per class tuple is the instance and the
    function running it with ``fn``'s cells and defaults. Where the plugin's interpreter
    fails to infer ``fn`` for some classes, the entry runs ``fn`` without its typed stages
    for them (the owner's ``untyped``: ``None`` stands for the instance)."""

    def __init__(self, owner: Any, fn: types.FunctionType,
                 max_specializations: int | None = None) -> None:
        self.owner = owner
        self._fn: weakref.ref[types.FunctionType] = weakref.ref(fn)
        # what a stand-in for ``fn`` is made of, should a call come after ``fn`` died
        # (the runners hold the same cells and defaults, so this keeps nothing longer)
        self._parts = (fn.__code__, fn.__globals__, fn.__defaults__, fn.__closure__,
                       fn.__kwdefaults__)
        self._stand_in: types.FunctionType | None = None
        #: (``owner.params.max_specializations`` unless given)
        self.max_specializations = owner.params.max_specializations \
            if max_specializations is None else max_specializations
        #: the instance used for each tuple of argument classes
        self.instances: dict[tuple[type, ...], CodeInstance] = {}
        # classes -> (instance, the function running it for fn), or (None, what runs fn
        # without typed stages) where the interpreter failed
        self._runners: dict[tuple[type, ...], _Runner] = {}
        # the generic runner, in a list C code reads too (``Chosen``'s keyword calls)
        self._generic_box: list[_Runner | None] = [None]
        #: (classes, runtime key) -> runner, for plugins that give keys (``specialize``);
        #: None when no plugin does (then no call asks for a key)
        self._keyed: dict[tuple[tuple[type, ...], Any], _Runner] | None = \
            {} if owner.hooks.specializers else None
        self._keys: set[Any] = set()
        # the generic instance while no call needed its function yet
        self._generic_instance: CodeInstance | None = None
        self._lock = threading.RLock()
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__

    @property
    def fn(self) -> Any:
        """The entry's function; once the program let go of it while a call was on its
        way to the entry (a path that did not keep it alive: ``native.HELD_CALL``), a
        function of the same code, globals, cells and defaults stands in for it."""
        fn = self._fn()
        if fn is not None:
            return fn
        if self._stand_in is None:
            code, namespace, defaults, closure, kwdefaults = self._parts
            stand_in = types.FunctionType(code, namespace, self.__name__, defaults, closure)
            stand_in.__kwdefaults__ = kwdefaults
            stand_in.__qualname__ = self.__qualname__
            self._stand_in = stand_in
        return self._stand_in

    @property
    def runners(self) -> dict[tuple[type, ...], _Runner] | None:
        """The choices made so far, by the tuple of the positional arguments' exact classes
        (the dict itself, kept up to date): what C code (``Chosen``) may run at once after
        the runner's check; None when calls need a runtime key, which only
        :meth:`choose` asks for."""
        return self._runners if self._keyed is None else None

    @property
    def generic_box(self) -> list[_Runner | None] | None:
        """The generic runner (the instance for arguments of any type), once a call needed
        it, in a list of one item kept up to date: what C code (``Chosen``) may run at once
        for a call with keywords after the runner's check; None when calls need a runtime
        key, which only :meth:`choose` asks for."""
        return self._generic_box if self._keyed is None else None

    def _usable(self, ci: CodeInstance | None) -> bool:
        """Whether a runner of ``ci`` may run now (``None``: the untyped one, always)."""
        return ci is None or ci.max_world == MAX_WORLD and (
            not ci.guards or ci.check()) and (not ci.cells or ci.cells_hold(self.fn))

    def rebuilt_too_often(self) -> str | None:
        """Why the function gets no more instances (``InstanceCache.rebuilt_too_often``):
        its calls then run it without its typed stages."""
        reason: str | None = self.owner.instances.rebuilt_too_often(
            self.fn.__code__, self.owner.params.max_rebuilds)
        return reason

    def _runner(self, types_: tuple[Any, ...], key: Any = None) -> _Runner:
        fn = self.fn
        too_often = self.rebuilt_too_often()
        if too_often is not None:
            # what its instances rely on keeps changing: no build per change any more
            return None, self.owner.untyped(fn, RebuildLimit(too_often), types_), _ALWAYS
        try:
            ci = self._instance(types_, key)
        except InterpreterError as exc:
            # the plugin's interpreter failed: the owner runs fn untyped (or raises, strict)
            return None, self.owner.untyped(fn, exc, types_), _ALWAYS
        except UnsupportedError as exc:
            too_often = self.rebuilt_too_often()  # (the check of a stale instance may
            if too_often is not None:             # have made it the last invalidation)
                return None, self.owner.untyped(fn, RebuildLimit(too_often), types_), \
                    _ALWAYS
            if not exc.transient:
                raise
            # as a context without typed stages does: this call runs fn untyped (or
            # natively, if that cannot be built either), never the program's error
            return _ThisCallOnly((None, self.owner.untyped(fn, exc, types_), _ALWAYS))
        return ci, ci.function_for(fn), ci.check_for(fn)

    def _instance(self, types_: tuple[Any, ...], key: Any = None) -> CodeInstance:
        from splice.compiler.instances import callee_instance

        return callee_instance(self.owner, self.fn, types_, key)

    def adopt(self, choices: dict[tuple[type, ...], CodeInstance]) -> bool:
        """Take over ``choices`` (the instances an entry of another function object of the
        same code chose, by argument classes: a closure made anew in a loop) whose
        instances fit this entry's function: the same instances, run with this function's
        cells and defaults. Whether any was taken (none: the entry chooses on its own, as
        new)."""
        fn = self.fn
        if self._keyed is not None:
            return False
        with self._lock:
            for classes, ci in list(choices.items()):
                if ci.specialization.code is not fn.__code__ or not ci.fits(fn):
                    continue
                check = ci.check_for(fn)
                if check() if check is not None else self._usable(ci):
                    self._runners[classes] = (ci, ci.function_for(fn), check)
                    self.instances[classes] = ci
        return bool(self._runners)

    def generic(self) -> CodeInstance:
        """The instance for arguments of any type."""
        runner = self._generic_box[0]
        if runner is not None and runner[0] is not None and self._usable(runner[0]):
            return runner[0]
        with self._lock:
            self._generic_box[0] = None
            ci = self._generic_instance = self._instance(())
            return ci

    def _generic_runner(self) -> _Runner:
        runner = self._generic_box[0]
        if runner is None or not self._usable(runner[0]):
            with self._lock:
                ci = self._generic_instance
                if ci is None or not self._usable(ci):
                    runner = self._runner(())
                else:
                    runner = (ci, ci.function_for(self.fn), ci.check_for(self.fn))
                self._generic_box[0] = runner if _kept(runner) else None
                self._generic_instance = None
        return runner

    def instance_for(self, classes: tuple[type, ...]) -> CodeInstance | None:
        """The instance for positional arguments of exactly these classes (None where
        the plugin's interpreter failed to infer them: they run without typed stages)."""
        if not keyable_classes(classes):
            return self._generic_runner()[0]
        return self._runner_for(classes)[0]

    def _runner_for(self, classes: tuple[type, ...]) -> _Runner:
        runner = self._runners.get(classes)
        if runner is not None and self._usable(runner[0]):
            return runner
        from splice.infer.lattice import Exact

        with self._lock:
            self._runners.pop(classes, None)
            self.instances.pop(classes, None)
            if len(self._runners) >= self.max_specializations or \
                    len(classes) > self.fn.__code__.co_argcount:
                return self._generic_runner()
            runner = self._runner(tuple(Exact(c) for c in classes))
            if _kept(runner):
                self._runners[classes] = runner
            if runner[0] is not None:
                self.instances[classes] = runner[0]
            return runner

    def _keyed_runner(self, classes: tuple[type, ...], key: Any) -> _Runner:
        """The runner for ``classes`` and runtime ``key``: its own instance, while the
        function has fewer than ``max_keys`` keys (then the key-less one)."""
        assert self._keyed is not None
        runner = self._keyed.get((classes, key))
        if runner is not None and self._usable(runner[0]):
            return runner
        from splice.infer.lattice import Exact

        with self._lock:
            if key not in self._keys and len(self._keys) >= self.owner.params.max_keys:
                return self._runner_for(classes) if classes else self._generic_runner()
            self._keys.add(key)
            specialized = len(classes) <= self.fn.__code__.co_argcount and \
                len({c for c, _ in self._keyed} - {()}) < self.max_specializations
            types_ = tuple(Exact(c) for c in classes) if specialized else ()
            runner = self._runner(types_, key)
            if _kept(runner):
                self._keyed[(classes, key)] = runner
            return runner

    def choose(self, /, *args: Any, **kwargs: Any) -> types.FunctionType:
        """The function that runs a call with these arguments (without calling it: the
        context's table holds ``Chosen(entry.choose, fn)``, C code that calls what this
        returns, so no frame of the entry's is on the stack while ``fn`` runs)."""
        classes = () if kwargs else tuple(map(type, args))
        # a class whose metaclass hashes it in Python keys no table of splice's (that code
        # would run where the program runs none): such a call takes the generic instance
        keyable = keyable_classes(classes)
        if self._keyed is not None:
            key = self.owner.hooks.key_of(self.fn, args, kwargs)
            if key is not None:
                return self._keyed_runner(classes if keyable else (), key)[1]
        # positional-only: a keyword argument named ``self`` is the callee's
        if kwargs or not keyable:
            return self._generic_runner()[1]
        return self._runner_for(classes)[1]

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return self.choose(*args, **kwargs)(*args, **kwargs)

    def __repr__(self) -> str:
        fn = self._fn()
        name = "<freed>" if fn is None else fn.__qualname__
        return f"<splice specializing entry of {name}: {len(self.instances)} instances>"

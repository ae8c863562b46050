"""Choosing a code instance per call, for contexts whose plugins use the typed stages.

``SpecializingEntry(owner, fn)`` is a callable that a context's dispatch table can hold for
``fn``: each call picks ``fn``'s code instance for the exact classes of its positional
arguments (compiling it on first use), up to ``MAX_SPECIALIZATIONS`` of them; calls beyond
that, calls with keywords and calls whose instance cannot be specialised run the generic
instance (every argument ``Any``). An instance is used only while it is valid and its
guards hold (checked on every call: 3.11 has no dict watchers), else it is rebuilt.

Specialising on exact classes is sound: every argument's class is exactly the one the
instance was inferred for. The cost per call is a tuple of the argument classes, a dict
lookup and the instance's guard checks; that is why a context should use this entry only
when some plugin has a ``typed`` or ``optimized`` hook or an ``interpreter``
(:func:`wants_typed_stages`).
"""

from __future__ import annotations

import sys
import threading
import types
import weakref
from typing import Any

from splice.cache.instances import MAX_WORLD, CodeInstance
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["MAX_SPECIALIZATIONS", "SpecializingEntry", "wants_typed_stages"]

#: exact-class specialisations of one function before calls use its generic instance
MAX_SPECIALIZATIONS = 8


def wants_typed_stages(plugins: tuple[Any, ...]) -> bool:
    """Whether some plugin overrides ``typed`` or ``optimized`` or chooses an
    ``interpreter`` (only then are the typed stages worth running per call)."""
    # from sys.modules, not by an import statement: a context calls this while the program
    # runs, and the program may have replaced builtins.__import__ (splice.plugin is loaded
    # once any plugin exists)
    plugin_class = sys.modules["splice.plugin"].Plugin
    return any(type(p).typed is not plugin_class.typed
               or type(p).optimized is not plugin_class.optimized
               or getattr(p, "interpreter", None) is not None for p in plugins)


class SpecializingEntry:
    """Calls ``fn`` through the code instance chosen for its arguments' exact classes."""

    def __init__(self, owner: Any, fn: types.FunctionType,
                 max_specializations: int = MAX_SPECIALIZATIONS) -> None:
        self.owner = owner
        # weakly: the dispatch table sweeps an entry once only it references its function
        self._fn: weakref.ref[types.FunctionType] = weakref.ref(fn)
        self.max_specializations = max_specializations
        self.instances: dict[tuple[type, ...], CodeInstance] = {}
        self._generic: CodeInstance | None = None
        self._lock = threading.RLock()
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__

    @property
    def fn(self) -> Any:
        fn = self._fn()
        if fn is None:
            raise ReferenceError("the function of this specializing entry was freed")
        return fn

    def _usable(self, ci: CodeInstance | None) -> bool:
        return ci is not None and ci.max_world == MAX_WORLD and (
            not ci.guards or ci.check())

    def generic(self) -> CodeInstance:
        """The instance for arguments of any type."""
        ci = self._generic
        if not self._usable(ci):
            from splice.cache.pipeline import _compile_owner

            with self._lock:
                ci = self._generic = _compile_owner(self.owner, self.fn, ())
        assert ci is not None
        return ci

    def instance_for(self, classes: tuple[type, ...]) -> CodeInstance:
        """The instance for positional arguments of exactly these classes."""
        ci = self.instances.get(classes)
        if self._usable(ci):
            assert ci is not None
            return ci
        from splice.cache.pipeline import _compile_owner
        from splice.infer.lattice import Exact

        with self._lock:
            self.instances.pop(classes, None)
            code = self.fn.__code__
            if len(self.instances) >= self.max_specializations or \
                    len(classes) > code.co_argcount:
                return self.generic()
            ci = _compile_owner(self.owner, self.fn, tuple(Exact(c) for c in classes))
            self.instances[classes] = ci
            return ci

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return self.generic().compiled(*args, **kwargs)
        return self.instance_for(tuple(map(type, args))).compiled(*args)

    def __repr__(self) -> str:
        return f"<splice specializing entry of {self.fn.__qualname__}: " \
               f"{len(self.instances)} instances>"

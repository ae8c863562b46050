"""Exceptions splice raises to its users."""

from __future__ import annotations

import sys
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


class SpliceError(Exception):
    """Base class of every error splice raises on purpose."""


class UnsupportedError(SpliceError):
    """A function splice cannot transform.

    Raised for functions without retrievable source (C functions, builtins, code made by
    ``exec`` without a ``linecache`` entry) and for constructs splice does not handle.
    It names the function, the reason and, where known, the source position.
    """

    def __init__(self, function: str, reason: str, position: str | None = None, *,
                 transient: bool = False) -> None:
        self.function = function
        self.reason = reason
        self.position = position
        #: the reason may be gone at the next attempt (the recursion limit was too low):
        #: caches return this error but do not keep it
        self.transient = transient
        where = f" at {position}" if position else ""
        super().__init__(f"cannot transform {function}{where}: {reason}")

    @classmethod
    def recursion_limit(cls, function: str) -> UnsupportedError:
        """The error for a function whose compile ran out of the program's recursion limit,
        even on a fresh stack (``splice.cache.headroom``): a program that lowered the limit
        below what splice's own recursion over the function needs. Transient: the function
        may compile once the limit is back up."""
        return cls(function, "splice's compile of it ran out of the recursion limit "
                             f"({sys.getrecursionlimit()})", transient=True)


class PluginError(SpliceError):
    """A plugin's hook failed: it raised, or returned what that hook cannot return.

    Raised for the hooks splice calls to observe or compile a program (``prehook``,
    ``posthook``, ``recurse``, ``lowered``, ``typed``, ``optimized``, ``specialize``, and the
    ``interpreter`` inferring a function). It names the plugin's class (``plugin``), the
    hook (``hook``) and the function being processed (``function``: the callee of the call,
    or the function being compiled or inferred); the exception the hook raised is its
    ``__cause__``. Exceptions that an intercepting method (``@splice.intercept``) or an
    ``overdub`` raises are the program's own: they reach it as raised, never wrapped. A
    ``RecursionError`` is not wrapped either (the program's recursion may be what ran out
    of the limit).
    """

    def __init__(self, plugin: str, hook: str, function: str, problem: str) -> None:
        self.plugin = plugin
        self.hook = hook
        self.function = function
        self.problem = problem
        super().__init__(f"{plugin}.{hook}({function}) {problem}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.plugin, self.hook, self.function, self.problem))

    @classmethod
    def raised(cls, plugin: object, hook: str, function: str, exc: BaseException
               ) -> PluginError:
        """The error for ``plugin``'s ``hook`` that raised ``exc`` (raise it ``from exc``)."""
        try:
            text = str(exc)
        except Exception:  # an exception whose __str__ fails
            text = ""
        kind = type(exc).__name__
        return cls(type(plugin).__name__, hook, function,
                   f"raised {kind}: {text}" if text else f"raised {kind}")

    @classmethod
    def returned(cls, plugin: object, hook: str, function: str, value: object,
                 expected: str) -> PluginError:
        """The error for ``plugin``'s ``hook`` that returned ``value``; ``expected`` says
        what the hook returns."""
        try:
            text = repr(value)
        except Exception:  # a value whose __repr__ fails
            text = ""
        if len(text) > 60:
            text = text[:57] + "..."
        shown = f"{type(value).__name__} {text}" if text else type(value).__name__
        return cls(type(plugin).__name__, hook, function, f"returned {shown}; {expected}")


class InterpreterError(PluginError):
    """A plugin's abstract interpreter (``Plugin.interpreter``) raised while inferring a
    function, or returned something other than an inference (``hook`` is
    ``"interpreter"``). Under ``plugin.run`` that function runs its transformed code
    without the typed stages instead (``splice.explain`` says why), unless the context is
    strict; ``splice.compile`` raises it."""


class PluginSendError(SpliceError, TypeError):
    """A plugin could not be sent to another process (``splice.runtime.processes``): work
    the program started under it in a process pool or a ``multiprocessing.Process`` runs
    there under an equal plugin, made from the pickled plugin. Raised where the work is
    submitted when the plugin cannot be pickled, and as the task's exception when the
    worker cannot make it again (its class is not importable there, as a class defined
    under ``if __name__ == "__main__":`` with the spawn start method). ``plugin`` names the
    plugin's class, ``problem`` what went wrong."""

    def __init__(self, plugin: str, problem: str) -> None:
        self.plugin = plugin
        self.problem = problem
        super().__init__(
            f"cannot send the plugin {plugin} to a worker process: {problem}. Make it "
            f"picklable and importable by its module and name (define __getstate__ and "
            f"__setstate__ leaving out what only this process has), or set "
            f"follow_processes = False on it to run work in other processes natively")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.plugin, self.problem))


class InvalidatedError(SpliceError):
    """``splice.invoke`` on an instance that was invalidated (compile it again)."""


class ArgumentTypeError(SpliceError, TypeError):
    """``splice.invoke`` with arguments that do not fit the instance's specialization."""

"""Per-call hooks around an entry: ``prehook``s, the ``overdub``s (nested, each going on
with the next through ``recurse_call``) and ``posthook``s.

The C form (``_hooks.Hooked``, ``splice.runtime.native``) puts no frame of splice's between
the caller and the callee, so tracebacks, ``sys._getframe`` and stack levels are native.
Without the C extension, one Python frame runs the hooks, named ``splice_call`` and given the
callee's name (argument errors name the callee, as natively). Either way a hook that raises
is a ``PluginError`` naming the plugin, the hook and the callee, while the call's own
exceptions pass as they are.
"""

from __future__ import annotations

import types
from typing import Any

from splice.errors import PluginError
from splice.hooks import HookTable
from splice.ir.functions import describe
from splice.pristine import BUILTINS
from splice.runtime import native
from splice.runtime.pending import PENDING, PENDING_ANYWHERE, overdub_step
from splice.runtime.weakkeys import holds_weakly, is_nested

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["with_hooks"]


def with_hooks(hooks: HookTable, fn: Any, target: Any) -> Any:
    """``target`` (what runs a call of ``fn``) with the per-call hooks of ``hooks``
    around it."""
    prehooks, posthooks = hooks.prehooks, hooks.posthooks
    if native.HOOKED is not None:
        # the C form: no frame of splice's between the caller and the callee
        continuation: Any = None
        overdub: Any = None
        if hooks.overdubs:
            first, *others = hooks.overdubs
            continuation = target
            for plugin in reversed(others):
                continuation = overdub_step(plugin, fn, continuation)
            overdub = first.overdub
        # a nested function is held weakly where nothing else the entry holds holds it
        # (one overdub at most: the steps between overdubs hold it), so the table can key
        # it weakly and the entry goes when the program drops it (splice/runtime/weakkeys.py)
        weak = type(fn) is types.FunctionType and is_nested(fn) and \
            len(hooks.overdubs) <= 1 and holds_weakly(target, fn)
        return native.HOOKED(fn, target, tuple(prehooks), tuple(posthooks), overdub,
                             continuation, PENDING, PENDING_ANYWHERE, _hook_failed, weak=weak)
    # a hook that raises is a PluginError, the call's own exceptions pass as they are:
    # a ``try`` around the hooks' loops costs nothing in 3.11 until something raises
    # (no frame or call more on the way)
    if hooks.overdubs:
        first, *others = hooks.overdubs
        # the continuation each overdub's ``recurse_call`` reaches: the next overdub,
        # or (for the innermost) the target itself, called with no frame in between
        continuation = target
        for plugin in reversed(others):
            continuation = overdub_step(plugin, fn, continuation)

        def splice_call(*args: Any, **kwargs: Any) -> Any:
            _run_hooks(prehooks, "prehook", fn, (fn, args, kwargs))
            stack = PENDING.stack
            PENDING_ANYWHERE.append(None)
            stack.append((fn, continuation))
            try:
                result = first.overdub(fn, args, kwargs)
            finally:
                stack.pop()
                PENDING_ANYWHERE.pop()
            _run_hooks(posthooks, "posthook", fn, (result, fn, args, kwargs))
            return result
    else:
        def splice_call(*args: Any, **kwargs: Any) -> Any:
            _run_hooks(prehooks, "prehook", fn, (fn, args, kwargs))
            result = target(*args, **kwargs)
            _run_hooks(posthooks, "posthook", fn, (result, fn, args, kwargs))
            return result
    # argument errors raised by the call name the callee, as natively
    splice_call.__name__ = getattr(fn, "__name__", splice_call.__name__)
    splice_call.__qualname__ = getattr(fn, "__qualname__", splice_call.__qualname__)
    splice_call.__module__ = getattr(fn, "__module__", None)  # type: ignore[assignment]
    return splice_call


def _run_hooks(plugins: tuple[Any, ...], hook: str, fn: Any, arguments: tuple[Any, ...]
               ) -> None:
    """Call ``hook`` of each of ``plugins`` with ``arguments``; a hook that raises is a
    ``PluginError`` (the Python form of what ``_hooks.c``'s ``run_hooks`` does)."""
    for plugin in plugins:
        try:
            getattr(plugin, hook)(*arguments)
        except RecursionError:
            raise
        except Exception as exc:
            raise _hook_failed(plugin, hook, fn, exc) from exc


def _hook_failed(plugin: Any, hook: str, fn: Any, exc: Exception) -> PluginError:
    """The error for a per-call hook that raised ``exc`` on a call of ``fn`` (off the hot
    path: only made when a hook raised)."""
    return PluginError.raised(plugin, hook, describe(fn), exc)

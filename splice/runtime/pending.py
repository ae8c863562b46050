"""Calls an ``overdub`` or an intercepting method received and has not finished, per
thread, with what ``recurse_call`` goes on with.

``recurse_call(fn, ...)`` inside such a method continues *that* call (the next overdub, or
the target itself) rather than starting a new one under the context; the stack is per
thread (``threading.local``), so threads and generators resumed elsewhere never see
another thread's calls. ``PENDING_ANYWHERE`` makes the common case cheap: while no thread
has an entry, ``recurse_call`` skips reading its thread's stack.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["PENDING", "PENDING_ANYWHERE", "continuation_for", "overdub_step"]


class _Pending(threading.local):
    """Per thread: the calls that an ``overdub`` or intercepting method received and has
    not finished, with what ``recurse_call`` goes on with (innermost last)."""

    def __init__(self) -> None:
        self.stack: list[tuple[Any, Callable[..., Any]]] = []


#: read on every intercepted call: an attribute of a ``threading.local`` is C-level
PENDING = _Pending()
#: one item for each entry of any thread's ``PENDING`` stack, pushed before the entry and
#: popped after it (list operations are atomic): while it is empty no thread has an entry,
#: and ``recurse_call`` skips reading its thread's stack (the read of a ``threading.local``
#: attribute costs as much as the rest of a dynamic scope's ``recurse_call``)
PENDING_ANYWHERE: list[None] = []


def overdub_step(plugin: Any, fn: Any, continuation: Callable[..., Any]
                  ) -> Callable[..., Any]:
    """A call going on into ``plugin``'s overdub (which continues with ``continuation``)."""
    def step(*args: Any, **kwargs: Any) -> Any:
        stack = PENDING.stack
        PENDING_ANYWHERE.append(None)
        stack.append((fn, continuation))
        try:
            return plugin.overdub(fn, args, kwargs)
        finally:
            stack.pop()
            PENDING_ANYWHERE.pop()
    return step


def continuation_for(fn: Any) -> Callable[..., Any] | None:
    """What ``recurse_call(fn, ...)`` goes on with on this thread, if an overdub or an
    intercepting method received a call of ``fn`` and is running."""
    if not PENDING_ANYWHERE:
        return None
    stack = PENDING.stack
    if stack:
        target, continuation = stack[-1]
        if target is fn:
            return continuation
    return None

"""Room on the stack for splice's own compile work, however deep the program is.

Under a plugin a function is compiled at its first call, wherever that call happens: maybe a
few frames below the program's recursion limit (a deep recursion, or a program that lowered
the limit, as ``test.support.infinite_recursion`` does). Lowering, code generation and
``compile()`` recurse over the syntax tree and need tens of frames (108 at most over 1,100
functions of twelve standard library modules); natively the function was compiled at import
and the call needs none. So :func:`with_headroom` runs the work where the caller's depth does
not count: on the calling thread if it has ``HEADROOM`` frames left below the limit (the
common case, free), else on a new thread, which starts with an empty stack (the limit is per
interpreter, the depth per thread), while the caller waits for its outcome.

Why a thread rather than lifting the limit while splice works: ``sys.setrecursionlimit`` is
process-wide. Lifting it would let every other thread of the program recurse deeper than its
limit meanwhile (a RecursionError it provokes would come later, or not at all), it would show
in ``sys.getrecursionlimit()`` on any thread, and restoring it could undo a limit another
thread set in between. The thread changes nothing the program observes: it is started with
``_thread`` (so ``threading.enumerate()``/``active_count()`` do not list it and the
``threading.settrace``/``setprofile`` functions are not installed in it), it runs in a copy
of the caller's ``contextvars`` context, and its outcome, a result or an exception, is
returned or raised on the calling thread. It gets the C stack size the program chose
(``threading.stack_size``): the 532 functions of difflib, argparse, json.encoder, typing and
tarfile all compile within the least size CPython accepts (32 KiB).

If the work runs out of the limit even so (the program set the limit below what splice's
own recursion over that function needs), the callers (``CodeCache``, the typed pipeline)
report the function as unsupported with a transient reason: it runs natively, and the caches
do not keep that verdict.

Work that starts while other work is under way on the same thread (a build that builds its
callees' instances, a plugin hook that calls a new function) stays on that thread: the outer
work holds the caches' locks, and its thread-local state (builds under way, the interpreter
in use) belongs to that thread.
"""

from __future__ import annotations

import _thread
import contextvars
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["HEADROOM", "with_headroom"]

T = TypeVar("T")

#: frames left below the recursion limit under which the work moves to a new thread: twice
#: what the deepest function of the standard library sample needed, as frames undercount
#: the depth (C code calling Python code counts one more level)
HEADROOM = 250
_state = threading.local()


def with_headroom(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` (splice's compile work), on this thread if it has ``HEADROOM`` frames
    left below the recursion limit or other work is under way on it, else on a new thread."""
    if getattr(_state, "busy", False):
        return work(*args)
    if sys.getrecursionlimit() - _depth() >= HEADROOM:
        _state.busy = True
        try:
            return work(*args)
        finally:
            _state.busy = False
    return _on_new_thread(work, args)


def _depth() -> int:
    """The number of Python frames on this thread's stack."""
    depth = 0
    frame = sys._getframe(1)
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth


def _on_new_thread(work: Callable[..., T], args: tuple[Any, ...]) -> T:
    outcome: list[tuple[bool, Any]] = []
    done = _thread.allocate_lock()
    done.acquire()
    context = contextvars.copy_context()

    def run() -> None:
        _state.busy = True
        try:
            outcome.append((True, context.run(work, *args)))
        except BaseException as exc:  # handed to the caller, raised there
            outcome.append((False, exc))
        finally:
            _state.busy = False
            done.release()

    try:
        _thread.start_new_thread(run, ())
    except RuntimeError:  # no thread can start (resources, interpreter shutdown)
        run()
    done.acquire()
    succeeded, value = outcome.pop()
    if succeeded:
        return value  # type: ignore[no-any-return]
    try:
        raise value
    finally:
        del value  # no cycle through this frame

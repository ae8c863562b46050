"""Feeding ``splice.exec_sources`` from CPython's audit events.

``watch()`` installs, once per process, the audit hook that pairs a ``compile`` event of a
string with the next ``exec`` of a code object of that file name on the same thread and
records the text for the code (splice/exec_sources.py says why a wrong pairing is safe).
The hook is C (``splice.runtime._hooks.watch_compiles``): audit hooks see every audited
event of the process, and most must cost nothing. Without the C extension a Python hook
does the same, at the price of a Python call per event.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from splice.exec_sources import EXEC_SOURCES
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["watch"]

_watching: list[bool] = []


def watch() -> None:
    """Record the texts of code run by ``exec``/``eval`` from now on (idempotent)."""
    if _watching:
        return
    _watching.append(True)
    try:
        from splice.runtime._hooks import watch_compiles
    except ImportError:  # built without a compiler
        sys.addaudithook(_python_hook())
    else:
        watch_compiles(EXEC_SOURCES.record)


def _python_hook() -> Any:
    # the last text compiled on each thread and its file name
    pending = threading.local()

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event == "compile":
            source, filename = args[0], args[1]
            textual = isinstance(source, str | bytes) and isinstance(filename, str)
            pending.pair = (source, filename) if textual else None
        elif event == "exec" and getattr(pending, "pair", None) is not None:
            source, filename = pending.pair
            pending.pair = None
            code = args[0]
            if type(code) is type(audit.__code__) and code.co_filename == filename:
                EXEC_SOURCES.record(code, source)
    return audit

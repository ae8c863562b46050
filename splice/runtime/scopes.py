"""Which dynamically scoped plugins are running (``splice.runtime.dynamic``): the state that
``Plugin.run`` reads on every run, kept apart so that a run need not load the dynamic
scope's machinery (which lowers and compiles its targets) unless one is used."""

from __future__ import annotations

import contextvars
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["ACTIVE", "SCOPES"]

#: the dynamically scoped plugins whose runs are active in the current context, outermost
#: first (a transformed context started under them composes with them)
SCOPES: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "splice.dynamic.scopes", default=())

#: target function -> its patch while a dynamic scope intercepting it is active
#: (``splice.runtime.dynamic._Target``)
ACTIVE: dict[Any, Any] = {}

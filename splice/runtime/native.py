"""The optional C extensions, loaded in one place: each name is None when splice was built
without a compiler, and the pure-Python form it documents runs instead (docs/runtime.md).

* ``HOOKED`` (``_hooks.Hooked``): an entry running per-call hooks around a callee, with no
  frame of splice's on the program's stack (else ``splice.runtime.hooked``'s Python form).
* ``INSTANTIATOR`` (``_hooks.Instantiator``): instantiation of a class under a context.
* ``CHOSEN`` (``_hooks.Chosen``): a callee chosen per call (a specializing entry's code
  instance) called with no frame of the chooser's.
* ``CONSTRUCTOR`` (``_hooks.Constructor``): a class's entry that checks in C that the
  class still instantiates as when it was made, then makes the object and calls its
  ``__init__``'s entry, as ``type.__call__`` does (else ``__init__`` compiled as a
  constructor, ``splice.compiler.constructors``, called through ``SLOT_CALL``).
* ``SLOT_CALL`` (``_hooks.SlotCall``): ``fn(first, *args)`` as a type's call slot runs it:
  a class's entry calling its compiled constructor without ``CONSTRUCTOR``, counted as
  ``type.__call__`` counts (else a ``functools.partial``), and a callable object's entry
  (else a bound method).
* ``METHODS`` (``_methods.Methods``): method calls without a bound method.
* ``RENEWALS``, ``MISSING`` (``_methods.Renewals``, ``_methods.Missing``) and
  ``INSTANTIATE`` (``splice._functions.instantiate``): a dispatch table's entries of new
  function objects of a nested function's code, made with no Python frame (else
  ``DispatchTable.__missing__`` and ``Context.recompiled`` make each).
* ``HELD_CALL`` (``_hooks.held_call``): a call of an entry that keeps the callee on the
  caller's stack until it returns, so entries may hold nested functions weakly (else
  entries hold them, and the table keys them strongly).
* ``BESIDE`` (``_hooks.Beside``): a function of splice's that the program's code calls
  (whether an attribute access runs Python code) run with recursion units of its own, so
  its frames do not count against the program's recursion limit (else called as it is).
* ``OVERLAID`` (``_hooks.Overlaid``): an overlay of a native function that calls back into
  the program (``sorted(xs, key=f)``), calling the native function with no frame of
  splice's on the stack (else the overlay is a Python frame: splice/runtime/overlays.py).
* ``HANDS_OVER``: whether those entries hand the caller's arguments over to the callee's
  frame as CPython's own call does (``_cstack.h``; False without them, or where the
  interpreter's internal headers were not installed at build time).
* ``RUN_CALL`` (``_recurse.RunCall``): ``Plugin.run`` with no frame of splice's on the
  program's stack (else the Python method, two frames).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["BESIDE", "CHOSEN", "CONSTRUCTOR", "HANDS_OVER", "HELD_CALL", "HOOKED",
           "INSTANTIATE", "INSTANTIATOR", "METHODS", "MISSING", "OVERLAID", "RENEWALS",
           "RUN_CALL", "SLOT_CALL"]

HOOKED: Callable[..., Any] | None
INSTANTIATOR: Callable[..., Any] | None
CHOSEN: Callable[..., Any] | None
SLOT_CALL: Callable[..., Any] | None
HELD_CALL: Callable[..., Any] | None
CONSTRUCTOR: Callable[..., Any] | None
BESIDE: Callable[[Callable[..., Any]], Callable[..., Any]] | None
OVERLAID: Callable[[Callable[..., Any]], Callable[..., Any]] | None
HANDS_OVER: bool
try:
    from splice.runtime._hooks import HANDS_OVER
    from splice.runtime._hooks import Beside as BESIDE
    from splice.runtime._hooks import Chosen as CHOSEN
    from splice.runtime._hooks import Constructor as CONSTRUCTOR
    from splice.runtime._hooks import Hooked as HOOKED
    from splice.runtime._hooks import Instantiator as INSTANTIATOR
    from splice.runtime._hooks import Overlaid as OVERLAID
    from splice.runtime._hooks import SlotCall as SLOT_CALL
    from splice.runtime._hooks import held_call as HELD_CALL
except ImportError:  # built without a compiler: hooks run in a Python frame, splice_call
    HOOKED = INSTANTIATOR = CHOSEN = SLOT_CALL = HELD_CALL = CONSTRUCTOR = BESIDE = None
    OVERLAID = None
    HANDS_OVER = False

METHODS: Callable[[dict[Any, Any], Callable[[Any], Any], frozenset[str] | None, Any,
                   dict[type, type] | None], Any] | None
try:
    from splice.runtime._methods import Methods as METHODS
except ImportError:  # built without a compiler: method calls take the Python form
    METHODS = None

RENEWALS: Callable[..., Any] | None
MISSING: Callable[..., Any] | None
INSTANTIATE: Callable[..., Any] | None
try:
    from splice._functions import instantiate as INSTANTIATE
    from splice.runtime._methods import Missing as MISSING
    from splice.runtime._methods import Renewals as RENEWALS
except ImportError:  # built without a compiler: the Python table makes every entry
    RENEWALS = MISSING = INSTANTIATE = None

RUN_CALL: Any
try:
    from splice.runtime._recurse import RunCall as RUN_CALL
except ImportError:  # built without a compiler: Plugin.run is the Python method
    RUN_CALL = None

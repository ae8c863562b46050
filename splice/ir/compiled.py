"""Code that was built, as a function object runs it: a ``CompiledCode`` (a regenerated code
object and the values of its hidden cells) and ``instantiate``, which makes a function of
it for one function object of the original code (its globals, closure cells and
defaults). This is all of the IR package that running built or loaded code needs, so it
imports nothing of the code generator: a process whose code comes from the cache on disk
does not load it (``splice.cache.owners``)."""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from splice.compat import versioned
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["CompiledCode", "Released", "instantiate"]


class Released:
    """What a released hidden local holds where it cannot be deleted (it may be unbound
    there): a class, so a constant of the code, and not ``None``, whose reference count on
    3.11 programs may measure (test_xml_etree's test_bug_xmltoolkit63 does). Defined with
    the code that runs, since built code refers to it (``splice.ir.release``)."""


@dataclass(frozen=True, slots=True)
class CompiledCode:
    """A regenerated code object and the values of the hidden cells (``@name``) it reads.
    It does not depend on one function object: :func:`instantiate` makes functions of it."""

    code: types.CodeType
    hidden: dict[str, object]
    #: how :func:`instantiate` builds a closure for ``code`` from the original function's
    #: cells followed by ``hidden``'s (one cell per hidden name, shared by every function
    #: made of this code: generated code only reads them): ``(cells, order)``, the hidden
    #: cells and the indices into both that make the closure (none: the code reads no free
    #: variable); None when the closure is the original's as it is
    closure_plan: tuple[tuple[types.CellType, ...], tuple[int, ...]] | None = field(
        default=None, compare=False)

    @classmethod
    def of(cls, code: types.CodeType, hidden: dict[str, object],
           original_freevars: tuple[str, ...]) -> CompiledCode:
        """``code`` (whose free variables are ``original_freevars`` plus hidden names) with
        its closure plan."""
        if code.co_freevars == original_freevars:
            return cls(code, hidden)
        cells = tuple(types.CellType(hidden[name]) for name in code.co_freevars
                      if name not in original_freevars)
        names = [*original_freevars,
                 *(name for name in code.co_freevars if name not in original_freevars)]
        order = tuple(names.index(name) for name in code.co_freevars)
        return cls(code, hidden, (cells, order))


def _instantiate(compiled: CompiledCode, original: types.FunctionType, *,
                 share_kwdefaults: bool = False, code: types.CodeType | None = None
                 ) -> types.FunctionType:
    """The Python form of :func:`instantiate` (without the C extension)."""
    if code is None:
        code = original.__code__
    closure = original.__closure__
    plan = compiled.closure_plan
    if plan is not None:
        hidden_cells, order = plan
        every = (*(closure or ()), *hidden_cells)
        # (no index: a pass removed every read of a free variable)
        closure = tuple(every[index] for index in order) if order else None
    # defaults only matter to a code with positional parameters, keyword defaults to one
    # with keyword-only parameters
    defaults = original.__defaults__ if code.co_argcount else None
    function = types.FunctionType(compiled.code, original.__globals__, original.__name__,
                                  defaults, closure)
    if code.co_kwonlyargcount:
        kwdefaults = original.__kwdefaults__
        if kwdefaults is not None:
            function.__kwdefaults__ = kwdefaults if share_kwdefaults else dict(kwdefaults)
    annotations = original.__annotations__
    if annotations:
        function.__annotations__ = dict(annotations)
    function.__qualname__ = original.__qualname__
    function.__doc__ = original.__doc__
    function.__module__ = original.__module__
    attributes = original.__dict__
    if attributes:
        function.__dict__.update(attributes)
    return versioned(function)  # (after the defaults: assigning them clears the version)


def instantiate(compiled: CompiledCode, original: types.FunctionType, *,
                share_kwdefaults: bool = False, code: types.CodeType | None = None
                ) -> types.FunctionType:
    """A function running ``compiled.code`` with ``original``'s globals and closure cells
    (shared, not copied) and copies of its other attributes. ``share_kwdefaults`` makes the
    new function use the original's ``__kwdefaults__`` dict itself (so changes to it show).
    ``code``: ``original.__code__``, if the caller has it.

    This runs for every new function object entered under a context (a closure made in a
    loop): the C form (splice/_functions.c) reads the original's fields without a Python
    frame and raises no audit event; the Python form reads the attributes whose reads raise
    audit events (``__code__``, ``__defaults__``, ``__kwdefaults__``) only where the code
    can use them."""
    if _native_instantiate is None:
        return _instantiate(compiled, original, share_kwdefaults=share_kwdefaults, code=code)
    made: types.FunctionType = _native_instantiate(compiled.code, original,
                                                   compiled.closure_plan, share_kwdefaults)
    return made


_native_instantiate: Callable[..., Any] | None
try:
    from splice._functions import instantiate as _native_instantiate
except ImportError:  # built without a compiler
    _native_instantiate = None

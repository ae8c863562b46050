"""Naming and unwrapping the functions splice is given: small enough for the parts of
splice that run while a program runs (error messages, reports) to use without loading the
source lookup."""

from __future__ import annotations

import types

from splice.errors import UnsupportedError
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["describe", "function_of"]


def describe(fn: object) -> str:
    """A human name for a function-like object, for error messages."""
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    module = getattr(fn, "__module__", None)
    if qualname:
        return f"{module}.{qualname}" if module else str(qualname)
    return repr(fn)


def function_of(fn: object) -> types.FunctionType:
    """The plain Python function behind ``fn`` (bound methods are unwrapped)."""
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if isinstance(fn, (staticmethod, classmethod)):
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        kind = type(fn).__name__
        raise UnsupportedError(
            describe(fn), f"not a Python function (a {kind}); only functions defined in "
            "Python source can be transformed"
        )
    return fn

import types

SETS_VERSION: bool
"""Whether ``versioned`` sets a version (3.13) or returns its argument unchanged."""

def versioned(fn: types.FunctionType, /) -> types.FunctionType:
    """``fn``, with the function version a ``def`` gives it (splice/_functions.c)."""

def instantiate(code: types.CodeType, original: types.FunctionType, closure_plan: object,
                share_kwdefaults: bool, /) -> types.FunctionType:
    """``splice.ir.compiled.instantiate`` without its Python frame (splice/_functions.c)."""

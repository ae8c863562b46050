import types

SETS_VERSION: bool
"""Whether ``versioned`` sets a version (3.13) or returns its argument unchanged."""

def versioned(fn: types.FunctionType, /) -> types.FunctionType:
    """``fn``, with the function version a ``def`` gives it (splice/_functions.c)."""

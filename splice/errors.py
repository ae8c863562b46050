"""Exceptions splice raises to its users."""

from __future__ import annotations

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


class SpliceError(Exception):
    """Base class of every error splice raises on purpose."""


class UnsupportedError(SpliceError):
    """A function splice cannot transform.

    Raised for functions without retrievable source (C functions, builtins, code made by
    ``exec`` without a ``linecache`` entry) and for constructs splice does not handle.
    It names the function, the reason and, where known, the source position.
    """

    def __init__(self, function: str, reason: str, position: str | None = None) -> None:
        self.function = function
        self.reason = reason
        self.position = position
        where = f" at {position}" if position else ""
        super().__init__(f"cannot transform {function}{where}: {reason}")

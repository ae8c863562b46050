"""Exceptions splice raises to its users."""

from __future__ import annotations

import sys

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

    def __init__(self, function: str, reason: str, position: str | None = None, *,
                 transient: bool = False) -> None:
        self.function = function
        self.reason = reason
        self.position = position
        #: the reason may be gone at the next attempt (the recursion limit was too low):
        #: caches return this error but do not keep it
        self.transient = transient
        where = f" at {position}" if position else ""
        super().__init__(f"cannot transform {function}{where}: {reason}")

    @classmethod
    def recursion_limit(cls, function: str) -> UnsupportedError:
        """The error for a function whose compile ran out of the program's recursion limit,
        even on a fresh stack (``splice.cache.headroom``): a program that lowered the limit
        below what splice's own recursion over the function needs. Transient: the function
        may compile once the limit is back up."""
        return cls(function, "splice's compile of it ran out of the recursion limit "
                             f"({sys.getrecursionlimit()})", transient=True)

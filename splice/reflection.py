"""Reflection: look at a function at each stage of the pipeline."""

from __future__ import annotations

from splice.ir import generate, lower
from splice.ir.printer import Listing


def code_lowered(fn: object) -> Listing:
    """The lowered IR of ``fn``; ``str()`` gives the listing, Jupyter renders it."""
    return Listing(lower(fn))


def code_python(fn: object, *, renest: bool = True) -> str:
    """The Python source splice regenerates for ``fn``."""
    return generate(lower(fn), renest=renest)

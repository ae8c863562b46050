"""The compiler's limits, in one place (inference's own are ``splice.infer.InferenceParams``).

A context reads them from its ``params`` field; the defaults are ``CompileParams()``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["CompileParams"]


def _verify_from_environment() -> bool:
    return os.environ.get("SPLICE_VERIFY_STAGES", "") not in ("", "0")


@dataclass(frozen=True)
class CompileParams:
    """Limits and switches of the compiler.

    ``max_specializations``: instances of one function under one owner (and exact-class
    specialisations of one function object in a specializing entry) before calls use the
    generic instance (every argument ``Any``). ``max_variants``: instances of one
    specialization for function objects that differ in what inference read from them
    (cells, defaults) before one that reads no cell is built for all of them.
    ``max_keys``: runtime keys (``Plugin.specialize``) of one function in one specializing
    entry before its calls use the instances without a key (key None).
    ``max_rebuilds``: invalidations of the instances of one code object under one owner
    (a global, class attribute or callee binding they relied on changed) before its calls
    run it without typed stages: a program that rebinds what the code relied on, run
    after run, stops paying a build per run (``splice.explain`` gives the count and the
    last reason).
    ``verify_stages``: check the IR (``splice.ir.verify``) after every stage that changes
    it, naming the stage that broke it (a debug switch: the environment variable
    ``SPLICE_VERIFY_STAGES=1`` turns it on for every context).
    """

    max_specializations: int = 8
    max_variants: int = 4
    max_keys: int = 8
    max_rebuilds: int = 4
    verify_stages: bool = field(default_factory=_verify_from_environment)

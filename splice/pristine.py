"""The builtins as they were when splice was imported.

splice's code runs inside the programs it transforms (a first call compiles, every call
dispatches), and programs replace builtins: ``builtins.len = lru_cache(len)`` in CPython's
test_functools, ``mock.patch("builtins.open")`` in test suites. A replacement must change
what the program's calls do, never what splice's own code does (it could make splice crash
or recurse into the program). So every splice module that runs while a program runs binds
``__builtins__ = BUILTINS`` before defining its functions: a function looks builtins up in
the ``__builtins__`` of the globals it was created with, and this one does not change.
"""

from __future__ import annotations

import builtins
import types

__all__ = ["BUILTINS"]

#: a copy of the ``builtins`` module's namespace, taken once
BUILTINS = types.ModuleType("builtins", builtins.__doc__)
BUILTINS.__dict__.update(builtins.__dict__)

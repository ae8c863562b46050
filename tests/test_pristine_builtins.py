"""Every splice module whose code can run while a program runs looks builtins up in
``splice.pristine.BUILTINS``, never in the program's (possibly replaced) ``builtins``."""

from __future__ import annotations

import importlib
import pkgutil
import types

import splice
from splice.pristine import BUILTINS

#: modules whose code runs before or around a program, never inside one
OUTSIDE = {"splice.__main__", "splice.cli", "splice.compat", "splice.pristine"}
OUTSIDE_PACKAGES = ("splice.tools.",)


def _defines_code(module: types.ModuleType) -> bool:
    return any(getattr(value, "__module__", None) == module.__name__
               and isinstance(value, types.FunctionType | type)
               for value in vars(module).values())


def test_modules_run_with_pristine_builtins() -> None:
    checked, wrong = [], []
    for info in pkgutil.walk_packages(splice.__path__, "splice."):
        name = info.name
        if name in OUTSIDE or name.startswith(OUTSIDE_PACKAGES):
            continue
        module = importlib.import_module(name)
        if not str(module.__file__).endswith(".py") or not _defines_code(module):
            # (C extensions look builtins up in C)
            continue
        checked.append(name)
        if vars(module).get("__builtins__") is not BUILTINS:
            wrong.append(name)
    assert len(checked) > 40, checked
    assert wrong == [], f"bind __builtins__ = BUILTINS (splice/pristine.py) in {wrong}"

"""What a constructor's code (``splice.compiler.constructors``) and its entry
(``splice.runtime.constructors``) share: the sentinels that stand for a parameter the caller
left out, the layout of a constructor's spec, and the flags of code that makes generators.
Small, so that running a constructor loaded from the cache on disk loads no compiler."""

from __future__ import annotations

import types
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["CLASS", "CO_GENERATOR_LIKE", "DEFAULTS", "INIT", "KWDEFAULTS", "META", "Sentinel",
           "sentinel_defaults"]

CO_GENERATOR_LIKE = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine,
# async generator

#: indices into ``spec``
CLASS, DEFAULTS, INIT, META, KWDEFAULTS = range(5)


class Sentinel:
    """The default of one parameter in a constructor: the caller left it out. One per
    parameter name (``Sentinel.of``), shared by every constructor, so the test for it is
    one identity comparison with a constant."""

    __slots__ = ("name",)
    _by_name: dict[str, Sentinel] = {}

    def __init__(self, name: str) -> None:
        self.name = name

    @classmethod
    def of(cls, name: str) -> Sentinel:
        """The sentinel of parameters named ``name``."""
        sentinel = cls._by_name.get(name)
        if sentinel is None:
            sentinel = cls._by_name.setdefault(name, cls(name))
        return sentinel

    def __repr__(self) -> str:
        return f"<default of {self.name}>"

    def __splice_persist__(self) -> tuple[str]:
        """Written to the code cache by name, and made again as the shared sentinel."""
        return (self.name,)

    @classmethod
    def __splice_make__(cls, name: str) -> Sentinel:
        return cls.of(name)


def sentinel_defaults(code: types.CodeType, defaults: tuple[Any, ...] | None,
                      kwdefaults: dict[str, Any] | None
                      ) -> tuple[tuple[Any, ...] | None, dict[str, Any] | None]:
    """A constructor's own defaults: a sentinel wherever the ``__init__`` has a default."""
    names = code.co_varnames[:code.co_argcount]
    # defaults go to the last parameters; a longer tuple's extra items are never used
    padded = [None] * max(0, len(defaults or ()) - len(names)) + \
        [Sentinel.of(name) for name in names]
    own = None if not defaults else tuple(padded[len(padded) - len(defaults):])
    own_kw = None if not kwdefaults else {name: Sentinel.of(name) for name in kwdefaults}
    return own, own_kw

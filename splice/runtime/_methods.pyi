import types
import weakref
from collections.abc import Callable
from typing import Any, overload

class Methods:
    """What to call with the arguments of ``obj.name(...)``, the receiver held in it
    (splice/runtime/_methods.c)."""

    def __init__(self, fast: dict[Any, Any], slow: Callable[[Any], Any],
                 routed: frozenset[str] | None = None,
                 objects: Callable[[Any, Any], Any] | None = None,
                 natives: dict[type, type] | None = None, /) -> None: ...
    @property
    def receiver_first(self) -> Methods:
        """The same lookup, for calls that pass the receiver again, first."""
    @overload
    def __call__(self, callee: object, /) -> Callable[..., Any]: ...
    @overload
    def __call__(self, obj: object, name: str, /) -> Callable[..., Any]: ...

class WeakKey(weakref.ref[Any]):
    """A weak reference a dict takes for its referent (hash and equality of the referent)."""

class Renewals:
    """A dispatch table's entries of new function objects of nested functions' code,
    made in C once ``add`` gave the code (splice/runtime/_methods.c)."""

    sweep_at: int
    renewed: int

    def __init__(self, table: dict[Any, Any], fast: dict[Any, Any],
                 instantiate: Callable[..., Any], /) -> None: ...
    def add(self, code: types.CodeType, compiled: types.CodeType, module: Any,
            closure_plan: Any, keeps: Callable[[Any], bool] | None = None, /) -> None: ...
    def renew(self, fn: Any, /) -> Any: ...
    def drop(self, key: Any, /) -> None: ...
    def clear(self) -> None: ...

class Missing:
    """A dispatch table's ``__missing__``: its renewals first, then ``fallback``."""

    def __init__(self, fallback: Callable[[Any, Any], Any], /) -> None: ...
    def __get__(self, obj: Any, owner: Any = None) -> Any: ...
    def __call__(self, table: Any, callee: Any, /) -> Any: ...

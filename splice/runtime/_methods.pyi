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

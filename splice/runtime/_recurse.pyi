from collections.abc import Callable
from typing import Any

class RecurseCall:
    """``Plugin.recurse_call`` in C (splice/runtime/_recurse.c), a method descriptor."""

    __wrapped__: Callable[..., Any]

    def __init__(self, function: Callable[..., Any], pending: Any, anywhere: list[None],
                 active: dict[Any, Any], /) -> None: ...
    def __call__(self, plugin: Any, fn: Callable[..., Any], /, *args: Any,
                 **kwargs: Any) -> Any: ...
    def __get__(self, obj: object, owner: type | None = None) -> Callable[..., Any]: ...

class RunCall:
    """``Plugin.run`` in C (splice/runtime/_recurse.c): a run adds no frame of splice's."""

    __wrapped__: Callable[..., Any]

    def __init__(self, function: Callable[..., Any], scopes: Any, /) -> None: ...
    def __call__(self, plugin: Any, fn: Callable[..., Any], /, *args: Any,
                 **kwargs: Any) -> Any: ...
    def __get__(self, obj: object, owner: type | None = None) -> Callable[..., Any]: ...

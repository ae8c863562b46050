from collections.abc import Callable
from typing import Any

class Methods:
    """What to call, receiver first, for ``obj.name(...)`` (splice/runtime/_methods.c)."""

    def __init__(self, fast: dict[Any, Any], slow: Callable[[Any], Any], /) -> None: ...
    def __call__(self, obj: object, name: str, /) -> Callable[..., Any]: ...

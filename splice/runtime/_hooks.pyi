from collections.abc import Callable
from typing import Any

class Hooked:
    """Per-call hooks around a callee, no frame of its own (splice/runtime/_hooks.c)."""

    callee: Any
    weak: bool
    target: Any
    continuation: Any
    __name__: str
    __qualname__: str
    __module__: str

    def __init__(self, fn: Any, target: Any, prehooks: tuple[Any, ...],
                 posthooks: tuple[Any, ...], overdub: Any, continuation: Any, pending: Any,
                 anywhere: list[None], failed: Callable[..., BaseException], /,
                 weak: bool = False) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class Instantiator:
    """Calling a class under a context, no frame of its own (splice/runtime/_hooks.c)."""

    cls: type
    __name__: str
    __qualname__: str

    def __init__(self, cls: type, table: Any, general: Callable[..., Any], /) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class Chosen:
    """``choose(*args, **kwargs)(*args[skip:], **kwargs)`` with no frame of its own while
    the chosen callable runs; with ``runners``, a choice made before whose check holds is
    run without asking ``choose``, and with ``generic`` so is a call with keywords
    (splice/runtime/_hooks.c)."""

    choose: Callable[..., Any]
    callee: Any
    weak: bool
    __name__: str
    __qualname__: str
    __module__: str

    def __init__(self, choose: Callable[..., Any], callee: Any, /, skip: int = 0,
                 runners: dict[Any, Any] | None = None,
                 generic: list[Any] | None = None, weak: bool = False) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class Driven:
    """A protocol written as a generator of steps ``(fn, *args)``, each called with no
    frame of the protocol's on the stack (splice/runtime/_hooks.c)."""

    plan: Callable[..., Any]

    def __init__(self, plan: Callable[..., Any], /) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


HANDS_OVER: bool
"""Whether the entries hand the caller's arguments over to the callee's frame."""


class Beside:
    """``fn(*args, **kwargs)`` with units of the recursion limit of its own: a function of
    splice's called by the program's code (splice/runtime/_hooks.c)."""

    fn: Callable[..., Any]

    def __init__(self, fn: Callable[..., Any], /) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class Overlaid:
    """An overlay of a native function that calls back into Python code:
    ``prepare(*args, **kwargs)`` gives ``(native, args, kwargs)``, and ``native`` is called
    with no frame of splice's on the stack (splice/runtime/_hooks.c)."""

    prepare: Callable[..., tuple[Any, tuple[Any, ...], dict[str, Any] | None]]

    def __init__(self, prepare: Callable[..., tuple[Any, tuple[Any, ...],
                                                     dict[str, Any] | None]], /) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SlotCall:
    """``fn(first, *args, **kwargs)`` as CPython calls a type's call slot: the recursion
    unit ``type.__call__`` spends, the caller's arguments kept on its stack
    (splice/runtime/_hooks.c)."""

    func: Callable[..., Any]
    args: tuple[Any]

    def __init__(self, fn: Callable[..., Any], first: Any, /) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


def watch_compiles(record: Callable[[Any, str | bytes], object], /) -> None:
    """Call ``record(code, source)`` for each code object run by exec/eval right after its
    text was compiled (an audit hook, installed once; splice/runtime/_hooks.c)."""


def held_call(entry: Callable[..., Any], callee: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``entry(*args, **kwargs)``, with ``callee`` held on the caller's stack until the
    call returns (splice/runtime/_hooks.c)."""


class Constructor:
    """A class's entry: ``type.__call__``'s steps with ``entry`` in place of ``init``,
    after checking in C that the class still instantiates that way; else ``changed()``
    gives what to call instead (splice/runtime/_hooks.c)."""

    cls: type
    init: Any
    entry: Any
    __name__: str
    __qualname__: str

    def __init__(self, cls: type, init: Any, entry: Any, changed: Callable[[], Any], /
                 ) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

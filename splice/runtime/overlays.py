"""Overlays: replacement definitions of native functions that call back into Python code.

A builtin such as ``sorted(xs, key=f)`` calls ``f`` from C, outside any call site splice can
route. Under a context, a call of one of the functions below runs its overlay instead: the
same builtin, with each callable argument first passed through the context's dispatch
(``enter(f)`` gives the callable to use under the context). The table is keyed by the native
object; extend it by adding an entry.

Out of reach (they run natively, with the Python code they call): implicit calls made from
C that take no callable argument, such as ``__hash__``/``__eq__`` during dict and set lookups,
``__del__``, ``__index__`` inside builtins, ``copy``/``pickle`` protocol methods, and the
callbacks of C functions not listed here (``re.sub`` with a function, ``atexit``, ...).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

Enter = Callable[[Any], Any]
Overlay = Callable[..., Any]


def _key_overlay(native: Callable[..., Any]) -> Callable[[Enter], Overlay]:
    """``native(*args, key=f, ...)`` with ``key`` entered."""
    def make(enter: Enter) -> Overlay:
        @functools.wraps(native)
        def overlay(*args: Any, **kwargs: Any) -> Any:
            key = kwargs.get("key")
            if key is not None:
                kwargs["key"] = enter(key)
            return native(*args, **kwargs)
        return overlay
    return make


def _first_arg_overlay(native: Callable[..., Any]) -> Callable[[Enter], Overlay]:
    """``native(f, *rest)`` with ``f`` entered (map, filter, reduce, ...)."""
    def make(enter: Enter) -> Overlay:
        @functools.wraps(native)
        def overlay(*args: Any, **kwargs: Any) -> Any:
            if args and args[0] is not None and callable(args[0]):
                args = (enter(args[0]), *args[1:])
            return native(*args, **kwargs)
        return overlay
    return make


def _second_arg_overlay(native: Callable[..., Any]) -> Callable[[Enter], Overlay]:
    """``native(iterable, f, ...)`` with ``f`` entered (``accumulate``, ``groupby``)."""
    def make(enter: Enter) -> Overlay:
        @functools.wraps(native)
        def overlay(*args: Any, **kwargs: Any) -> Any:
            if len(args) > 1 and callable(args[1]):
                args = (args[0], enter(args[1]), *args[2:])
            for name in ("func", "key"):
                if kwargs.get(name) is not None:
                    kwargs[name] = enter(kwargs[name])
            return native(*args, **kwargs)
        return overlay
    return make


def _cmp_to_key(enter: Enter) -> Overlay:
    @functools.wraps(functools.cmp_to_key)
    def overlay(mycmp: Any) -> Any:
        return functools.cmp_to_key(enter(mycmp))
    return overlay


def _list_sort(enter: Enter) -> Overlay:
    def sort(self: list[Any], /, *, key: Any = None, reverse: bool = False) -> None:
        return self.sort(key=None if key is None else enter(key), reverse=reverse)
    return sort


#: native function -> factory of its overlay (given the context's ``enter``)
FUNCTIONS: dict[Any, Callable[[Enter], Overlay]] = {
    sorted: _key_overlay(sorted),
    min: _key_overlay(min),
    max: _key_overlay(max),
    map: _first_arg_overlay(map),
    filter: _first_arg_overlay(filter),
    functools.reduce: _first_arg_overlay(functools.reduce),
    functools.cmp_to_key: _cmp_to_key,
    itertools.filterfalse: _first_arg_overlay(itertools.filterfalse),
    itertools.starmap: _first_arg_overlay(itertools.starmap),
    itertools.takewhile: _first_arg_overlay(itertools.takewhile),
    itertools.dropwhile: _first_arg_overlay(itertools.dropwhile),
    itertools.accumulate: _second_arg_overlay(itertools.accumulate),
    itertools.groupby: _second_arg_overlay(itertools.groupby),
}

#: (type, method name) of builtin methods -> factory of an overlay taking ``self`` first
METHODS: dict[tuple[type, str], Callable[[Enter], Overlay]] = {
    (list, "sort"): _list_sort,
}

#: names of the functions and methods overlays take: a method-call site with another name
#: (``obj.name(...)``) calls a builtin function or method as it is
NAMES = frozenset({name for _, name in METHODS}
                  | {getattr(f, "__name__", "") for f in FUNCTIONS}
                  | {"str", "repr", "format", "iter", "__call__"})

"""Overlays: replacement definitions of native functions that call back into Python code.

A builtin such as ``sorted(xs, key=f)`` calls ``f`` from C, outside any call site splice can
route. Under a context, a call of one of the functions below runs its overlay instead: the
same builtin, with each callable argument first passed through the context's dispatch
(``enter(f)`` gives the callable to use under the context). The table is keyed by the native
object; extend it by adding an entry.

Objects that keep the callable they call (``map``, ``filter``, and ``filterfalse``,
``starmap``, ``takewhile``, ``dropwhile``, ``accumulate``, ``groupby`` of itertools) would
show the entered callable where the program gave another (a Python function is entered as its
transformed copy; with per-call hooks every callable is entered as a hooks wrapper):
``__reduce__``, so ``pickle`` (the copy or wrapper cannot be pickled) and ``copy``. A native
object cannot both call one callable and show another, so in that case the overlay returns an
object of a subclass of the native class (``FAITHFUL``), named like it (same ``repr``), whose
``__reduce__`` gives the native class and the callable given, exactly what the native object
gives. What still shows: ``type(obj) is map`` is false (``isinstance`` holds), ``dir(obj)``
lists the slot ``_splice_given``, the class itself cannot be pickled (``builtins.map`` is
another object); a copy or an unpickled object is native, so its calls run natively. When the
entered callable is the given one (a builtin, no hooks), the object is native.
``functools.cmp_to_key`` needs nothing: its C ``KeyWrapper`` shows its function nowhere and
cannot be pickled or copied natively either; the other overlays return no such object.

Threads: a thread started under a context (``threading.Thread.start``, so also the workers
of ``concurrent.futures.ThreadPoolExecutor`` and ``loop.run_in_executor``) runs its Python
function under the same context, through the overlay of ``_thread.start_new_thread``
(``start_joinable_thread`` from 3.13), unless a plugin of the context opts out
(``follow_threads = False``).

Out of reach (they run natively, with the Python code they call): implicit calls made from
C that take no callable argument, such as ``__hash__``/``__eq__`` during dict and set lookups,
``__del__``, ``__index__`` inside builtins, ``copy``/``pickle`` protocol methods, and the
callbacks of C functions not listed here (``re.sub`` with a function, ``atexit``, ...).
"""

from __future__ import annotations

import _thread
import functools
import itertools
from collections.abc import Callable
from typing import Any

from splice.pristine import BUILTINS
from splice.runtime.native import OVERLAID

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

Enter = Callable[[Any], Any]
Overlay = Callable[..., Any]
#: what an overlay calls: (callable, positional arguments, keyword arguments or None)
Prepared = tuple[Any, tuple[Any, ...], dict[str, Any] | None]
Prepare = Callable[..., Prepared]


def _overlay(native: Callable[..., Any], prepare: Prepare) -> Overlay:
    """The overlay that calls what ``prepare(*args, **kwargs)`` gives, ``(callable, args,
    kwargs)``: in C (``OVERLAID``), ``prepare`` runs beside the program and the native
    function is called with no frame of splice's on the stack, so the callbacks it calls
    see the program's frames as their callers (``sys._getframe``, tracebacks, recursion
    depth), as natively. Without the C extensions the overlay is a Python frame."""
    if OVERLAID is not None:
        return OVERLAID(prepare)

    @functools.wraps(native)
    def overlay(*args: Any, **kwargs: Any) -> Any:
        target, args, given = prepare(*args, **kwargs)
        return target(*args, **(given or {}))
    return overlay


def _key_overlay(native: Callable[..., Any]) -> Callable[[Enter], Overlay]:
    """``native(*args, key=f, ...)`` with ``key`` entered."""
    def make(enter: Enter) -> Overlay:
        def prepare(*args: Any, **kwargs: Any) -> Prepared:
            key = kwargs.get("key")
            if key is not None:
                kwargs["key"] = enter(key)
            return native, args, kwargs
        return _overlay(native, prepare)
    return make


def _first_arg_overlay(native: Callable[..., Any]) -> Callable[[Enter], Overlay]:
    """``native(f, *rest)`` with ``f`` entered (map, filter, reduce, ...)."""
    keeps_callable = native in FAITHFUL

    def make(enter: Enter) -> Overlay:
        def prepare(*args: Any, **kwargs: Any) -> Prepared:
            if args and args[0] is not None and callable(args[0]):
                entered = enter(args[0])
                if entered is not args[0] and keeps_callable:
                    return _faithful, (native, args[0], (entered, *args[1:]), kwargs), None
                args = (entered, *args[1:])
            return native, args, kwargs
        return _overlay(native, prepare)
    return make


def _second_arg_overlay(native: Callable[..., Any]) -> Callable[[Enter], Overlay]:
    """``native(iterable, f, ...)`` with ``f`` (positional, or the keyword ``func`` or
    ``key``) entered (``accumulate``, ``groupby``)."""
    def make(enter: Enter) -> Overlay:
        def prepare(*args: Any, **kwargs: Any) -> Prepared:
            given = entered = None
            if len(args) > 1 and callable(args[1]):
                given, entered = args[1], enter(args[1])
                args = (args[0], entered, *args[2:])
            for name in ("func", "key"):
                if kwargs.get(name) is not None:
                    given, entered = kwargs[name], enter(kwargs[name])
                    kwargs[name] = entered
            if entered is not given:
                return _faithful, (native, given, args, kwargs), None
            return native, args, kwargs
        return _overlay(native, prepare)
    return make


# ------------------------------------------------------------ objects that keep a callable

_GIVEN = "_splice_given"


def _faithful_class(native: Any, position: int) -> type:
    """A subclass of ``native`` (an iterator class that holds a callable) whose objects
    call the entered callable and show the one they were given, as the native object would:
    ``__reduce__`` (so ``pickle`` and ``copy``) gives ``native`` and that callable, at
    ``position`` of its arguments. Named like ``native``, so ``repr`` reads the same."""

    def given(obj: Any) -> Any:
        return getattr(obj, _GIVEN, _UNSET)

    def native_twin(obj: Any, callable_: Any) -> Any:
        """A native object in ``obj``'s state, calling ``callable_``."""
        _, args, *state = native.__reduce__(obj)
        twin = native(*_replaced(args, position, callable_))
        if state and state[0] is not None:
            twin.__setstate__(state[0])
        return twin

    def __reduce__(self: Any) -> tuple[Any, ...]:
        cls, args, *state = native.__reduce__(self)
        callable_ = given(self)
        if cls is type(self):
            return (native, _replaced(args, position, callable_), *state)
        # ``accumulate`` whose running total is None reduces to
        # ``islice(accumulate(chain((None,), it), func), 1, None)``, the inner object made
        # with ``type(self)`` and the entered callable: made again natively
        return (cls, tuple(native_twin(a, callable_) if type(a) is type(self) else a
                           for a in args), *state)

    namespace = {"__slots__": (_GIVEN,), "__reduce__": __reduce__,
                 "__module__": native.__module__, "__qualname__": native.__qualname__,
                 "__doc__": native.__doc__}
    return type(native.__name__, (native,), namespace)


class _Unset:
    pass


_UNSET = _Unset()


def _replaced(args: tuple[Any, ...], position: int, callable_: Any) -> tuple[Any, ...]:
    if callable_ is _UNSET:  # an object the program made by calling the class itself
        return args
    return (*args[:position], callable_, *args[position + 1:])


def _faithful(native: Any, given: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``native(*args, **kwargs)``, where ``args``/``kwargs`` hold the entered callable,
    as an object that shows ``given`` instead (see ``_faithful_class``)."""
    obj = FAITHFUL[native](*args, **kwargs)
    setattr(obj, _GIVEN, given)
    return obj


#: native iterator classes that keep the callable they call -> their faithful subclass (the
#: position of the callable in the arguments of their ``__reduce__``)
FAITHFUL: dict[Any, type] = {
    native: _faithful_class(native, position) for native, position in [
        (map, 0), (filter, 0), (itertools.filterfalse, 0), (itertools.starmap, 0),
        (itertools.takewhile, 0), (itertools.dropwhile, 0), (itertools.accumulate, 1),
        (itertools.groupby, 1)]}


def _cmp_to_key(enter: Enter) -> Overlay:
    def prepare(*args: Any, **kwargs: Any) -> Prepared:
        if len(args) == 1 and not kwargs:
            args = (enter(args[0]),)
        elif not args and set(kwargs) == {"mycmp"}:
            kwargs["mycmp"] = enter(kwargs["mycmp"])
        return functools.cmp_to_key, args, kwargs  # any other call: cmp_to_key's own error
    return _overlay(functools.cmp_to_key, prepare)


def _list_sort(enter: Enter) -> Overlay:
    """``xs.sort(key=f, ...)``, taking ``xs`` first, with ``key`` entered."""
    def prepare(self: list[Any], /, *args: Any, **kwargs: Any) -> Prepared:
        key = kwargs.get("key")
        if key is not None:
            kwargs["key"] = enter(key)
        return self.sort, args, kwargs
    return _overlay(list.sort, prepare)


def _thread_overlay(native: Callable[..., Any]) -> Callable[[Enter], Overlay]:
    """``_thread.start_new_thread(function, args, kwargs)`` (and 3.13's
    ``start_joinable_thread(function, ...)``) with ``function`` entered: the new thread runs
    it under the context, as ``contextvars`` are carried into a thread by hand. Reached
    through ``threading.Thread.start`` (transformed code calling its module's
    ``_start_new_thread``), so a ``Thread``, a ``ThreadPoolExecutor``'s workers and
    ``loop.run_in_executor`` run their targets under the plugin."""
    def make(enter: Enter) -> Overlay:
        def prepare(*args: Any, **kwargs: Any) -> Prepared:
            if args:
                args = (enter(args[0]), *args[1:])
            elif kwargs.get("function") is not None:
                kwargs["function"] = enter(kwargs["function"])
            return native, args, kwargs
        return _overlay(native, prepare)
    return make


#: the functions that start a thread running a Python callable (the overlays a context
#: whose plugins opt out of following threads leaves out: ``Plugin.follow_threads``)
THREAD_STARTERS: tuple[Any, ...] = tuple(
    getattr(_thread, name) for name in ("start_new_thread", "start_joinable_thread")
    if hasattr(_thread, name))

#: native function -> factory of its overlay (given the context's ``enter``)
FUNCTIONS: dict[Any, Callable[[Enter], Overlay]] = {
    **{starter: _thread_overlay(starter) for starter in THREAD_STARTERS},
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

#: method overlays whose only callable comes through a keyword-only parameter (name ->
#: that keyword): a call that passes neither the keyword nor ``**`` gives the overlay
#: nothing to enter, so it may call the builtin method as it is
CALLBACK_KEYWORDS: dict[str, str] = {"sort": "key"}

#: names of the functions and methods overlays take: a method-call site with another name
#: (``obj.name(...)``) calls a builtin function or method as it is
NAMES = frozenset({name for _, name in METHODS}
                  | {getattr(f, "__name__", "") for f in FUNCTIONS}
                  | {"str", "repr", "format", "iter", "__call__"})

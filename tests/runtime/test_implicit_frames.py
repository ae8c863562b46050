"""Implicit calls (operators, truth, subscripts, iteration, formatting, attribute access)
under plugins that route them (per-call hooks, ``Tracer(implicit_calls=True)``) add no
frame between a Python dunder and the program's line: what the dunder sees of its caller
(``sys._getframe(1)``, ``traceback.extract_stack``, ``warnings.warn(stacklevel=2)``) and
the tracebacks of what it raises are the native ones (splice/runtime/_hooks.c, ``Driven``).
Each program runs natively and under each plugin; the observations must be equal."""

from __future__ import annotations

import sys
import traceback
import types
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import splice
from splice.plugins.tracer import Tracer


def _caller() -> str:
    """The function two frames up (the caller of the dunder calling this)."""
    return sys._getframe(2).f_code.co_name


class Seen:
    """Every dunder records the name of the frame that called it."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []

    def _saw(self, what: str) -> None:
        self.log.append((what, sys._getframe(2).f_code.co_name))

    def __add__(self, other: Any) -> Any:
        self._saw("add")
        return NotImplemented if isinstance(other, Seen) else 2

    def __radd__(self, other: Any) -> Any:
        self._saw("radd")
        return 1

    def __iadd__(self, other: Any) -> Any:
        self._saw("iadd")
        return self

    def __neg__(self) -> Any:
        self._saw("neg")
        return 0

    def __lt__(self, other: Any) -> Any:
        self._saw("lt")
        return True

    def __eq__(self, other: object) -> bool:
        self._saw("eq")
        return NotImplemented  # type: ignore[no-any-return]

    __hash__ = None  # type: ignore[assignment]

    def __contains__(self, item: Any) -> bool:
        self._saw("contains")
        return True

    def __bool__(self) -> bool:
        self._saw("bool")
        return True

    def __len__(self) -> int:
        self._saw("len")
        return 1

    def __getitem__(self, index: Any) -> Any:
        self._saw("getitem")
        if index == 3:
            raise IndexError(index)
        return index

    def __setitem__(self, index: Any, value: Any) -> None:
        self._saw("setitem")

    def __delitem__(self, index: Any) -> None:
        self._saw("delitem")

    def __iter__(self) -> Any:
        self._saw("iter")
        return iter([1, 2])

    def __format__(self, spec: str) -> str:
        self._saw("format")
        return "f"

    def __repr__(self) -> str:
        self._saw("repr")
        return "r"

    @property
    def prop(self) -> int:
        self._saw("property")
        return 1

    @prop.setter
    def prop(self, value: int) -> None:
        self._saw("property set")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._saw("getattr")
        return name


def dunders_see_their_caller() -> list[tuple[str, str]]:
    s = Seen()
    other = Seen()
    _ = s + 1, 1 + s, -s, s < other, s == other, 1 in s, s[0], f"{s}{s!r}", s.prop
    s += 1
    s[1] = 2
    del s[1]
    s.prop = 3
    _ = s.missing, getattr(s, "absent", None), hasattr(s, "other")
    if s:
        pass
    _ = not s, list(s), [x for x in s]
    a, *b = s
    return s.log + other.log


class Warns:
    def __or__(self, other: Any) -> Any:
        warnings.warn("or", stacklevel=2)
        return traceback.extract_stack(limit=2)[-2].name

    @property
    def value(self) -> str:
        warnings.warn("value", stacklevel=2)
        return traceback.extract_stack(limit=2)[-2].name


def stack_levels() -> tuple[Any, ...]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = Warns()
        names = (w | 1, w.value)
    return names, [(item.filename, item.lineno) for item in caught]


class Fails:
    def __add__(self, other: Any) -> Any:
        raise ValueError("add")

    @property
    def prop(self) -> Any:
        raise KeyError("prop")

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"no {name}")


def _frames(fn: Callable[[], Any]) -> list[tuple[str, str]]:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the traceback is what is compared
        return [(type(exc).__name__, str(exc))] + [
            (frame.name, frame.line or "") for frame in traceback.extract_tb(exc.__traceback__)]
    return []


def tracebacks_through_dunders() -> list[list[tuple[str, str]]]:
    f = Fails()
    return [_frames(lambda: f + 1), _frames(lambda: f.prop), _frames(lambda: f.missing),
            _frames(lambda: object() + f), _frames(lambda: f < 1), _frames(lambda: -f)]


module = types.ModuleType("lazy_module")
exec("def __getattr__(name):\n"
     "    import sys\n"
     "    return sys._getframe(1).f_code.co_name\n", module.__dict__)


def module_getattr_sees_its_caller() -> str:
    return module.anything  # type: ignore[no-any-return]


class MadeByNew:
    def __new__(cls, value: int) -> MadeByNew:
        self = super().__new__(cls)
        self.new_caller = sys._getframe(1).f_code.co_name
        return self

    def __init__(self, value: int) -> None:
        self.init_caller = sys._getframe(1).f_code.co_name


class Meta(type):
    def __call__(cls, *args: Any) -> Any:
        return super().__call__(*args)


class MadeByMeta(metaclass=Meta):
    def __init__(self, value: int) -> None:
        self.caller = sys._getframe(1).f_code.co_name


class FailsInInit:
    def __new__(cls) -> FailsInInit:
        return super().__new__(cls)

    def __init__(self) -> None:
        raise ValueError("init")


def instantiation_sees_its_caller() -> list[Any]:
    made, meta = MadeByNew(1), MadeByMeta(2)
    return [made.new_caller, made.init_caller, meta.caller, _frames(FailsInInit)]


class Hooked(splice.Plugin):
    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pass


PLUGINS: dict[str, Callable[[], Any]] = {
    "identity": splice.Plugin,
    "hooked": Hooked,
    "tracer-implicit": lambda: Tracer(implicit_calls=True),
}
PROGRAMS = [dunders_see_their_caller, stack_levels, tracebacks_through_dunders,
            module_getattr_sees_its_caller, instantiation_sees_its_caller]


@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_dunders_see_the_native_stack(plugin: str, program: Callable[[], Any]) -> None:
    native = program()
    assert native  # the program observed something
    assert PLUGINS[plugin]().run(program) == native

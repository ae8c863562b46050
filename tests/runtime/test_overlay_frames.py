"""Overlays of native functions that call back into the program (``sorted(xs, key=f)``,
``max``, ``min``, ``list.sort``, ``functools.reduce``) add no frame of splice's while the
native function runs (splice/runtime/overlays.py, ``Overlaid`` in _hooks.c): the callback's
caller, a traceback through the call and the depth at which recursion through the callback
fails are the native ones, under an identity plugin and under per-call hooks. Calls the
native function refuses fail with its own error."""

from __future__ import annotations

import functools
import sys
import traceback
from collections.abc import Callable
from typing import Any

import pytest

import splice
from splice.runtime import native
from tests.runtime.test_hooks import _first_failing_depth

PYTHON_OVERLAYS = native.OVERLAID is None
_PYTHON_FORM = pytest.mark.xfail(
    PYTHON_OVERLAYS, strict=True,
    reason="without the C extensions an overlay is a Python frame (splice/runtime/overlays.py)")


class Identity(splice.Plugin):
    pass


class Hooked(splice.Plugin):
    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pass


PLUGINS = {"identity": Identity, "hooked": Hooked}


def through_sorted(f: Callable[[Any], Any]) -> Any:
    return sorted([1], key=f)


def through_max(f: Callable[[Any], Any]) -> Any:
    return max([1], key=f)


def through_min(f: Callable[[Any], Any]) -> Any:
    return min(1, 2, key=f)


def through_list_sort(f: Callable[[Any], Any]) -> Any:
    xs = [1, 2]
    xs.sort(key=f)
    return xs


def through_reduce(f: Callable[[Any], Any]) -> Any:
    return functools.reduce(lambda a, b: f(b), [0, 1])


SHAPES = [through_sorted, through_max, through_min, through_list_sort, through_reduce]


def callers(through: Callable[..., Any]) -> list[str]:
    seen: list[str] = []

    def callback(x: Any) -> Any:
        seen.append(sys._getframe(1).f_code.co_name)
        return x
    through(callback)
    return seen


def traceback_names(through: Callable[..., Any]) -> list[str]:
    def callback(x: Any) -> Any:
        raise ValueError(x)
    try:
        through(callback)
    except ValueError as e:
        return [frame.name for frame in traceback.extract_tb(e.__traceback__)]
    raise AssertionError("no ValueError")


@_PYTHON_FORM
@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("through", SHAPES, ids=lambda fn: fn.__name__)
def test_the_callback_is_called_from_the_programs_frame(through: Any, plugin: str) -> None:
    assert PLUGINS[plugin]().run(callers, through) == callers(through)


@_PYTHON_FORM
@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("through", SHAPES, ids=lambda fn: fn.__name__)
def test_a_traceback_through_the_call_is_native(through: Any, plugin: str) -> None:
    # the whole traceback: a frame of splice's would show here
    assert PLUGINS[plugin]().run(traceback_names, through) == traceback_names(through)


def recurse_through_max(depth: int, text: str) -> Any:
    if depth == 0:
        return text
    return max([depth], key=lambda _: recurse_through_max(depth - 1, text))


def recurse_through_sorted(depth: int, text: str) -> Any:
    if depth == 0:
        return text
    return sorted([depth], key=lambda _: recurse_through_sorted(depth - 1, text))


@_PYTHON_FORM
@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("recurse", [recurse_through_max, recurse_through_sorted],
                         ids=lambda fn: fn.__name__)
def test_recursion_through_a_key_function_fails_at_the_native_depth(
        recurse: Any, plugin: str) -> None:
    under_plugin = PLUGINS[plugin]()
    under_plugin.run(recurse, 2, "x")  # compiled before the limit is lowered
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(150)
    try:
        native_depth = _first_failing_depth(None, recurse)
        under = _first_failing_depth(under_plugin.run, recurse)
    finally:
        sys.setrecursionlimit(limit)
    assert under == native_depth


def refused(call: Callable[[], Any]) -> tuple[str, str]:
    try:
        call()
    except TypeError as e:
        return type(e).__name__, str(e)
    raise AssertionError("no TypeError")


def wrong_calls() -> list[tuple[str, str]]:
    return [refused(lambda: sorted()), refused(lambda: max()),
            refused(lambda: min(key=abs)), refused(lambda: functools.cmp_to_key()),
            refused(lambda: functools.reduce(abs)), refused(lambda: [2, 1].sort(abs)),
            refused(lambda: map()), refused(lambda: sorted([1], key=abs, x=1))]


@pytest.mark.parametrize("plugin", PLUGINS)
def test_a_call_the_native_function_refuses_gets_its_own_error(plugin: str) -> None:
    assert PLUGINS[plugin]().run(wrong_calls) == wrong_calls()

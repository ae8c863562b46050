"""A program that replaces builtins changes its own calls, never splice's: splice's modules
run with the builtins they were imported with (splice/pristine.py). The case is CPython's
test_functools.test_lru_reentrancy_with_len: ``builtins.len = lru_cache(len)``, whose
wrapper hashes its argument (splice's dispatch table, a dict, is unhashable)."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

import splice


class Hooked(splice.Plugin):
    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pass


class Box:
    def __init__(self, x: int) -> None:
        self.x = x


def work() -> list[int]:
    out = []
    for i in range(5):
        fresh = lambda i=i: i  # noqa: E731 - a new function object each time: a table miss
        out.append(len("abcdef"[:i]) + Box(i).x + fresh())
    return out


@pytest.mark.parametrize("plugin_class", [splice.Plugin, Hooked], ids=["identity", "hooked"])
def test_replaced_len_is_not_called_by_splice(plugin_class: type[splice.Plugin]) -> None:
    plugin = plugin_class()
    assert plugin.run(work) == work()  # compiled before the replacement
    calls: list[str] = []
    original = builtins.len
    cache: dict[Any, int] = {}

    def cached_len(obj: Any) -> int:
        """Like ``lru_cache(len)``: hashes its argument (and records every call)."""
        calls.append(type(obj).__name__)
        if obj not in cache:
            cache[obj] = original(obj)
        return cache[obj]

    # compiled before it replaces len: compiling runs standard-library code (linecache),
    # which the replacement would break as it breaks any program's use of len on a list
    assert plugin.run(cached_len, "abc") == 3
    calls.clear()
    builtins.len = cached_len  # type: ignore[assignment]
    try:
        native = work()
        native_calls = list(calls)
        calls.clear()
        assert plugin.run(work) == native
    finally:
        builtins.len = original
    assert calls == native_calls  # the program's own calls, and no call of splice's


def not_in(member: Any, container: Any) -> str:
    if member in container:
        raise AssertionError(f"{member!r} found in {container!r}")
    return "ok"


def with_import_replaced() -> str:
    # test_ast.test_sys_modules: an __import__ that returns a dummy; the callee's first
    # call, and so its compile, happens while it is in place
    saved = builtins.__import__
    builtins.__import__ = lambda name, *args, **kwargs: object()
    try:
        return not_in("_ast", {})
    finally:
        builtins.__import__ = saved


@pytest.mark.parametrize("plugin_class", [splice.Plugin, Hooked], ids=["identity", "hooked"])
def test_a_replaced_import_is_not_used_by_splices_compile(
        plugin_class: type[splice.Plugin]) -> None:
    assert plugin_class().run(with_import_replaced) == with_import_replaced() == "ok"

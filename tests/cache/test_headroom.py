"""splice's first-call compile does not depend on how deep the program is
(``splice.cache.headroom``), and changes nothing the program sees: its recursion limit, where
a RecursionError it provokes is raised, its threads. The minimal repro is r12 in
tests/tools/test_context_findings.py."""

from __future__ import annotations

import linecache
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import splice
from splice.cache import headroom
from splice.ir.nodes import FunctionIR


class Identity(splice.Plugin):
    pass


class Watching(splice.Plugin):
    """Records, from its ``lowered`` hook (which runs inside the compile), the thread and
    the recursion limit the compile work sees."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[int, int]] = {}

    def lowered(self, ir: FunctionIR) -> None:
        self.seen[ir.qualname] = (threading.get_ident(), sys.getrecursionlimit())


def _depth() -> int:
    frame: Any = sys._getframe(1)
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


def at_depth(target: int, then: Callable[[], Any]) -> Any:
    """``then()`` called with ``target`` frames on the stack (or more)."""
    if _depth() >= target:
        return then()
    return at_depth(target, then)


_counter = [0]


def fresh_function(body: str, name: str = "f") -> Any:
    """A function with its own code object, compiled from ``body`` (its source in
    linecache, so splice can lower it)."""
    _counter[0] += 1
    filename = f"<splice-headroom-{_counter[0]}>"
    source = f"def {name}(x):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


NESTED = """\
total = 0
for i in range(x):
    with open(__file__ if False else "/dev/null") as f:
        if i % 2:
            try:
                total += len([c for c in f.read(1)]) + i
            finally:
                total += 1
return total"""


def _nested_ifs(levels: int) -> str:
    lines = [f"{'    ' * k}if x > {k}:" for k in range(levels)]
    return "\n".join([*lines, f"{'    ' * levels}return x", "return -x"])


@contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def entered(plugin: splice.Plugin, fn: Any) -> list[tuple[bool, str]]:
    return [(r.entered, r.reason) for r in splice.explain(plugin, fn)]


def test_a_first_call_a_few_frames_below_the_limit_is_compiled_on_a_fresh_stack() -> None:
    fn = fresh_function(NESTED)
    plugin = Watching()
    limit = sys.getrecursionlimit()

    def deep() -> Any:
        # 30: the resolution of a first call (the dispatch table's __missing__ down to
        # the code cache) still runs on the caller's stack, a few frames
        return at_depth(limit - 30, lambda: fn(5))

    assert plugin.run(deep) == deep() == fn(5)
    assert entered(plugin, fn) == [(True, "transformed")]
    # the compile ran on another thread, and saw the program's own limit
    thread, seen_limit = plugin.seen[fn.__qualname__]
    assert thread != threading.get_ident()
    assert seen_limit == limit == sys.getrecursionlimit()


def test_a_first_call_with_room_is_compiled_on_the_calling_thread() -> None:
    fn = fresh_function(NESTED)
    plugin = Watching()
    assert plugin.run(fn, 3) == fn(3)
    assert plugin.seen[fn.__qualname__][0] == threading.get_ident()


def test_the_program_recursion_error_is_raised_at_the_same_depth() -> None:
    """A recursion the program makes itself, whose first call happens close to a limit the
    program lowered (like r12): the RecursionError comes at the same depth (counted from
    where the limit was set)."""
    down = fresh_function("try:\n    return down(x + 1)\nexcept RecursionError:\n"
                          "    return x", name="down")
    down.__globals__.update(down=down)

    def close_to_the_limit() -> int:
        with recursion_limit(_depth() + 60):
            return int(down(0))

    native = close_to_the_limit()
    assert Identity().run(close_to_the_limit) == native


def test_a_limit_too_low_for_splice_runs_the_function_natively() -> None:
    """Where the program's limit is below what splice's own recursion needs even on a fresh
    stack, the function runs natively, with the reason recorded; the failure is not kept,
    so the function is transformed once the limit is back up."""
    fn = fresh_function(_nested_ifs(60))
    plugin = Identity()

    def low() -> Any:
        with recursion_limit(_depth() + 40):
            return fn(100)

    assert plugin.run(low) == low() == 100
    [(was_entered, reason)] = entered(plugin, fn)
    assert not was_entered and "recursion limit" in reason
    again = Identity()
    assert again.run(fn, 100) == 100
    assert entered(again, fn) == [(True, "transformed")]


def test_a_limit_too_low_for_the_typed_stages_runs_the_function_natively() -> None:
    fn = fresh_function(_nested_ifs(60))

    class Typed(splice.Plugin):
        def typed(self, ir: FunctionIR) -> None:
            pass

    def low(callee: Any) -> Any:  # an argument: no direct call compiled with low
        with recursion_limit(_depth() + 40):
            return callee(100)

    Identity().run(fn, 100)  # lowered at the full limit: the typed stages run out of it
    plugin = Typed()
    assert plugin.run(low, fn) == low(fn) == 100
    [(was_entered, reason)] = entered(plugin, fn)
    assert not was_entered and "recursion limit" in reason


def test_a_new_argument_class_under_a_low_limit_runs_the_function_untyped() -> None:
    """The entry of a typed function exists already (built at the full limit for another
    class); a call with a new argument class under a limit too low for the typed stages
    runs the function without them (markdown's test_nesting_limit: the program got
    splice's UnsupportedError), and the instance is built once the limit is back up."""
    levels = 60
    fn = fresh_function("\n".join([*(f"{'    ' * k}if x.n > {k}:" for k in range(levels)),
                                   f"{'    ' * levels}return x.n", "return -x.n"]))
    built: list[str] = []

    class Typed(splice.Plugin):
        def typed(self, ir: FunctionIR) -> None:
            built.append(ir.name)

    class Holder:
        n = 100
        method = fn

    class Other(Holder):
        n = 7

    def call(holder: Any) -> Any:
        return holder.method()

    def low(holder: Any) -> Any:
        with recursion_limit(_depth() + 40):
            return call(holder)

    plugin = Typed()
    assert plugin.run(call, Holder()) == 100
    assert plugin.run(low, Other()) == low(Other()) == -7
    [(was_entered, reason)] = entered(plugin, fn)
    assert not was_entered and "recursion limit" in reason
    built.clear()
    assert plugin.run(call, Other()) == -7
    assert built == [fn.__name__]


def test_strict_plugins_raise_the_recursion_limit_as_unsupported() -> None:
    fn = fresh_function(_nested_ifs(60))

    class Strict(splice.Plugin):
        strict = True

    def low() -> Any:
        with recursion_limit(_depth() + 40):
            return fn(100)

    with pytest.raises(splice.UnsupportedError, match="recursion limit"):
        Strict().run(low)


def test_work_already_under_way_stays_on_its_thread() -> None:
    threads: list[int] = []

    def inner() -> int:
        threads.append(threading.get_ident())
        return 2

    def outer() -> int:
        threads.append(threading.get_ident())
        # nested work, even with no room left, runs where the outer work runs
        return at_depth(sys.getrecursionlimit() - 5,
                        lambda: headroom.with_headroom(inner)) + 1

    assert at_depth(sys.getrecursionlimit() - 20, lambda: headroom.with_headroom(outer)) == 3
    assert len(set(threads)) == 1 and threads[0] != threading.get_ident()


def test_exceptions_of_the_work_are_raised_on_the_calling_thread() -> None:
    def fails() -> None:
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        at_depth(sys.getrecursionlimit() - 20, lambda: headroom.with_headroom(fails))
    assert not getattr(headroom._state, "busy", False)


def test_the_work_sees_the_callers_context_variables() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    token = var.set("caller's")
    try:
        assert at_depth(sys.getrecursionlimit() - 20,
                        lambda: headroom.with_headroom(var.get)) == "caller's"
    finally:
        var.reset(token)


def test_no_thread_shows_in_threading() -> None:
    seen: list[Any] = []

    def work() -> None:
        seen.append((threading.active_count(), threading.enumerate()))

    before = (threading.active_count(), threading.enumerate())
    at_depth(sys.getrecursionlimit() - 20, lambda: headroom.with_headroom(work))
    assert seen == [before]

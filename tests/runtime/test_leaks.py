"""No leaks (docs/runtime.md, "Guarantees"): what is created under a plugin behaves natively
when it is called outside it, except generators, coroutines and async generators, which keep
the plugin when they resume (wherever and whenever that is)."""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
import types
from typing import Any

import splice


class Counting(splice.Plugin):
    """Records the qualified name of every call it sees."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.calls.append(getattr(fn, "__qualname__", type(fn).__name__))


def leaf(x):
    return x + 1


def tagged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args) * 10
    return wrapper


def factory():
    def closure(y):
        return leaf(y)

    lam = lambda y: leaf(y) * 2  # noqa: E731

    @tagged
    def decorated(y):
        return leaf(y)

    class Local:
        def method(self, y):
            return leaf(y) + 3

        @classmethod
        def klass(cls, y):
            return leaf(y) + 4

        @staticmethod
        def static(y):
            return leaf(y) + 5

        def __add__(self, other):
            return leaf(other)

        def __call__(self, y):
            return leaf(y) + 6

    obj = Local()
    return {
        "closure": closure, "lambda": lam, "decorated": decorated, "class": Local,
        "bound": obj.method, "classmethod": Local.klass, "staticmethod": Local.static,
        "instance": obj, "partial": functools.partial(closure, 1),
    }


def exercise(made):
    """Calls everything ``factory`` made (the same calls natively and under a plugin)."""
    obj = made["class"]()
    return [made["closure"](1), made["lambda"](1), made["decorated"](1), obj.method(1),
            made["bound"](1), made["classmethod"](1), made["staticmethod"](1),
            made["instance"] + 1, made["instance"](1), made["partial"](),
            obj.klass(2), sorted([3, 1, 2], key=made["closure"])]


EXPECTED = [2, 4, 20, 5, 5, 6, 7, 2, 8, 2, 7, [1, 2, 3]]


def test_functions_and_classes_created_under_a_plugin_run_natively_outside() -> None:
    plugin = Counting()
    made = plugin.run(factory)
    assert plugin.calls[0] == "factory"
    plugin.calls.clear()
    assert exercise(made) == exercise(factory()) == EXPECTED
    assert plugin.calls == []  # nothing made under the plugin came back to it


def test_nested_code_objects_are_the_originals() -> None:
    made = Counting().run(factory)
    native = factory()
    for name in ("closure", "lambda", "staticmethod"):
        assert made[name].__code__ is native[name].__code__, name
    assert made["decorated"].__wrapped__.__code__ is native["decorated"].__wrapped__.__code__
    assert made["bound"].__func__.__code__ is native["bound"].__func__.__code__
    for attr in ("method", "__add__", "__call__"):
        made_fn = getattr(made["class"], attr)
        assert made_fn.__code__ is getattr(native["class"], attr).__code__, attr
    assert made["class"] is not native["class"]


def test_made_under_one_plugin_seen_by_another() -> None:
    first, second = Counting(), Counting()
    made = first.run(factory)
    first.calls.clear()
    assert second.run(exercise, made) == EXPECTED
    assert first.calls == []
    assert "leaf" in second.calls and "factory.<locals>.closure" in second.calls


def test_no_names_added_to_module_globals() -> None:
    before = set(globals())
    Counting().run(exercise, Counting().run(factory))
    splice.Plugin().run(exercise, factory())
    assert set(globals()) == before


def test_profiler_and_tracer_untouched() -> None:
    def tracer(*args: Any) -> None:
        return None

    old_trace = sys.gettrace()
    sys.setprofile(tracer)
    try:
        Counting().run(exercise, factory())
        assert sys.getprofile() is tracer
        assert sys.gettrace() is old_trace
    finally:
        sys.setprofile(None)


def test_wrap_runs_each_call_under_the_plugin_and_returns_native_functions() -> None:
    plugin = Counting()
    wrapped = plugin.wrap(factory)
    assert wrapped.__name__ == "factory" and wrapped.__wrapped__ is factory
    made = wrapped()
    made2 = wrapped()
    assert plugin.calls.count("factory") == 2
    plugin.calls.clear()
    assert exercise(made) == exercise(made2) == EXPECTED
    assert plugin.calls == []


# ------------------------------------------------------ generators and coroutines keep it

def counter_gen(n):
    total = 0
    for i in range(n):
        received = yield leaf(i)
        if received is not None:
            total += leaf(received)
    return total


def make_generators():
    return counter_gen(3), (leaf(i) for i in range(2))


async def coro(n):
    await asyncio.sleep(0)
    return leaf(n)


async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield leaf(i)


def make_async():
    return coro(5), agen(2)


def test_generators_keep_the_plugin_when_resumed_outside() -> None:
    plugin = Counting()
    gen, genexpr = plugin.run(make_generators)
    plugin.calls.clear()
    assert next(gen) == 1
    assert plugin.calls.count("leaf") == 1
    assert gen.send(10) == 2  # leaf(10) and leaf(1)
    assert plugin.calls.count("leaf") == 3
    try:
        gen.send(None)
        gen.send(None)
    except StopIteration as stop:
        assert stop.value == 11
    assert plugin.calls.count("leaf") == 4
    assert list(genexpr) == [1, 2]
    assert plugin.calls.count("leaf") == 6


def test_generator_resumed_in_another_thread_keeps_the_plugin() -> None:
    plugin = Counting()
    gen, _ = plugin.run(make_generators)
    plugin.calls.clear()
    out: list[int] = []
    thread = threading.Thread(target=lambda: out.extend(gen))
    thread.start()
    thread.join()
    assert out == [1, 2, 3]
    assert plugin.calls.count("leaf") == 3


def test_generator_close_and_throw_outside() -> None:
    plugin = Counting()
    gen, _ = plugin.run(make_generators)
    native, _ = make_generators()
    assert next(gen) == next(native)
    for g in (gen, native):
        try:
            g.throw(KeyError("k"))
        except KeyError as exc:
            assert exc.args == ("k",)
        else:
            raise AssertionError("throw did not propagate")
        assert g.gi_frame is None
    gen2, _ = plugin.run(make_generators)
    next(gen2)
    gen2.close()
    assert gen2.gi_frame is None


def test_coroutines_and_async_generators_keep_the_plugin() -> None:
    plugin = Counting()
    co, ag = plugin.run(make_async)
    assert isinstance(co, types.CoroutineType) and isinstance(ag, types.AsyncGeneratorType)
    plugin.calls.clear()

    async def drive():
        return await co, [x async for x in ag]

    assert asyncio.run(drive()) == (6, [1, 2])
    assert plugin.calls.count("leaf") == 3
    assert "sleep" in plugin.calls  # asyncio.sleep, called from the coroutine, under it


def test_coroutine_driven_by_hand_keeps_the_plugin() -> None:
    plugin = Counting()

    def make():
        async def inner():
            return leaf(1)

        async def outer():
            return await inner() + leaf(2)
        return outer()

    co = plugin.run(make)
    plugin.calls.clear()
    try:
        co.send(None)
    except StopIteration as stop:
        assert stop.value == 5
    else:
        raise AssertionError("the coroutine did not finish")
    assert [name.rpartition("make.<locals>.")[2] for name in plugin.calls] == [
        "inner", "leaf", "leaf"]

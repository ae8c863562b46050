"""``Plugin.recurse_call`` in C (splice/runtime/_recurse.c) and in Python (splice/plugin.py,
used when the extension is not built): each way a call goes on behaves the same in both."""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

import splice

try:
    from splice.runtime._recurse import RecurseCall
except ImportError:  # built without a compiler: the C tests fail, saying so
    RecurseCall = None

BUILT_METHOD = splice.Plugin.__dict__["recurse_call"]
PYTHON_METHOD = getattr(BUILT_METHOD, "__wrapped__", BUILT_METHOD)


@pytest.fixture(params=["c", "python"])
def implementation(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with ``Plugin.recurse_call`` as built, then with the Python method."""
    if request.param == "python":
        splice.Plugin.recurse_call = PYTHON_METHOD  # type: ignore[method-assign]
        try:
            yield request.param
        finally:
            splice.Plugin.recurse_call = BUILT_METHOD  # type: ignore[method-assign]
    else:
        yield request.param


def leaf(x: int, y: int = 2, *, k: int = 1) -> tuple[int, int, int]:
    return (x, y, k)


def calls_leaf(x: int) -> tuple[int, int, int]:
    return leaf(x, y=5, k=x)


def failing(x: int) -> None:
    raise ValueError(f"bad {x}")


def calls_failing(x: int) -> None:
    failing(x)


class Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return self is other

    def __call__(self, x: int) -> int:
        return x * 10


def test_the_built_method_is_installed() -> None:
    assert RecurseCall is not None, "splice/runtime/_recurse.c is not built (pip install " \
        "needs a C compiler and the Python headers); splice runs the Python recurse_call"
    assert type(BUILT_METHOD) is RecurseCall


def test_introspection_reads_the_python_method() -> None:
    method = BUILT_METHOD
    assert method.__doc__ == PYTHON_METHOD.__doc__
    assert method.__name__ == "recurse_call"
    assert inspect.signature(method) == inspect.signature(PYTHON_METHOD)
    plugin = splice.Plugin()
    assert plugin.recurse_call(leaf, 1) == (1, 2, 1)  # bound, outside any context


def test_overdub_goes_on_with_arguments_and_keywords(implementation: str) -> None:
    class Doubling(splice.Plugin):
        def overdub(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if fn is leaf:
                return self.recurse_call(fn, args[0] * 2, *args[1:], **kwargs)
            return self.recurse_call(fn, *args, **kwargs)

    assert Doubling().run(calls_leaf, 3) == (6, 5, 3)


@pytest.mark.parametrize("dynamic", [False, True])
def test_intercept_runs_the_original(implementation: str, dynamic: bool) -> None:
    class Intercepting(splice.Plugin):
        dynamic_scope = dynamic
        seen: list[Any] = []

        @splice.intercept(leaf)
        def leaf(self, *args: Any, **kwargs: Any) -> Any:
            self.seen.append((args, kwargs))
            return self.recurse_call(leaf, *args, **kwargs)

    plugin = Intercepting()
    assert plugin.run(calls_leaf, 4) == calls_leaf(4)
    assert plugin.seen and plugin.seen[0][0][0] == 4


def test_another_callee_runs_under_the_plugin(implementation: str) -> None:
    results: list[Any] = []

    class Redirect(splice.Plugin):
        @splice.intercept(failing)
        def failing(self, x: int) -> Any:
            results.append(self.recurse_call(calls_leaf, x))  # another callee: under it

        @splice.intercept(leaf)
        def leaf(self, x: int, y: int = 2, *, k: int = 1) -> Any:
            return ("intercepted", x, y, k)

    assert Redirect().run(calls_failing, 7) is None
    assert results == [("intercepted", 7, 5, 7)]
    assert Redirect().run(lambda: Redirect().recurse_call(calls_leaf, 2)) == \
        ("intercepted", 2, 5, 2)


def test_an_unhashable_callee_is_called(implementation: str) -> None:
    callee = Unhashable()

    class Swap(splice.Plugin):
        dynamic_scope = True

        @splice.intercept(failing)
        def failing(self, x: int) -> Any:
            return self.recurse_call(callee, x)

    assert Swap().run(calls_failing, 3) is None
    assert Swap().run(lambda: Swap().recurse_call(callee, 3)) == 30


@pytest.mark.parametrize("dynamic", [False, True])
def test_exceptions_keep_the_users_frames(implementation: str, dynamic: bool) -> None:
    class Passing(splice.Plugin):
        dynamic_scope = dynamic

        @splice.intercept(failing)
        def failing(self, x: int) -> Any:
            return self.recurse_call(failing, x)

    with pytest.raises(ValueError, match="bad 9") as caught:
        Passing().run(calls_failing, 9)
    names = [frame.name for frame in traceback.extract_tb(caught.value.__traceback__)]
    assert names[-1] == "failing" and "calls_failing" in names


def test_recurse_call_needs_a_callee() -> None:
    with pytest.raises(TypeError):
        BUILT_METHOD(splice.Plugin())


def test_no_entry_outlives_its_call(implementation: str) -> None:
    """``PENDING_ANYWHERE`` lets ``recurse_call`` skip the per-thread read only while no
    thread has an entry: every push is popped, when the call raises too."""
    from splice.runtime.pending import PENDING, PENDING_ANYWHERE

    class Overdubbing(splice.Plugin):
        depths: list[int] = []

        def overdub(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            self.depths.append(len(PENDING_ANYWHERE))
            return self.recurse_call(fn, *args, **kwargs)

    plugin = Overdubbing()
    with pytest.raises(ValueError):
        plugin.run(calls_failing, 1)
    assert plugin.run(calls_leaf, 2) == calls_leaf(2)
    assert plugin.depths and min(plugin.depths) >= 1
    assert PENDING_ANYWHERE == [] and PENDING.stack == []


def test_other_threads_entries_do_not_redirect_this_threads_calls(implementation: str) -> None:
    """While one thread's overdub has entries pending (``PENDING_ANYWHERE`` is not empty),
    another thread's ``recurse_call`` reads its own, empty, stack and goes on correctly."""
    import threading

    stop = threading.Event()
    inside = threading.Event()

    class Slow(splice.Plugin):
        def overdub(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if fn is leaf:
                inside.set()
                stop.wait(10)
            return self.recurse_call(fn, *args, **kwargs)

    class Intercepting(splice.Plugin):
        dynamic_scope = True

        @splice.intercept(leaf)
        def leaf(self, x: int, y: int = 2, *, k: int = 1) -> Any:
            return self.recurse_call(leaf, x + 100, y, k=k)

    worker = threading.Thread(target=lambda: Slow().run(calls_leaf, 1))
    worker.start()
    try:
        assert inside.wait(10)
        from splice.runtime.pending import PENDING_ANYWHERE
        assert PENDING_ANYWHERE  # the other thread's entry
        results = [Intercepting().run(calls_leaf, i) for i in range(50)]
    finally:
        stop.set()
        worker.join()
    assert results == [(i + 100, 5, i) for i in range(50)]

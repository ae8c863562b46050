"""Dynamically scoped plugins (``Plugin.dynamic_scope``, splice/runtime/dynamic.py): the
targets' calls made in the scope go to the plugin, everything else runs natively, and the
targets are left as they were."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import traceback
from typing import Any

import pytest

import splice
from splice.errors import SpliceError


def leaf(x, y=2, *rest, k=1, **extra):
    return (x, y, rest, k, extra)


def countdown(n):
    if n == 0:
        raise ValueError("bottom")
    return countdown(n - 1)


def total(n):
    return sum(leaf(i)[0] for i in range(n))


class Counting(splice.Plugin):
    dynamic_scope = True

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    @splice.intercept(leaf)
    def leaf(self, *args: Any, **kwargs: Any) -> Any:
        self.seen.append((args, kwargs))
        return self.recurse_call(leaf, *args, **kwargs)


class CountingCountdown(splice.Plugin):
    dynamic_scope = True
    calls = 0

    @splice.intercept(countdown)
    def intercepted(self, n: int) -> Any:
        self.calls += 1
        return self.recurse_call(countdown, n)


def frames(exc: BaseException) -> list[tuple[str, int | None, str]]:
    return [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(exc.__traceback__)]


def test_calls_in_scope_are_intercepted_with_parameters_as_bound() -> None:
    plugin = Counting()
    original = leaf.__code__
    assert plugin.run(total, 4) == total(4)
    assert plugin.seen == [((i, 2), {"k": 1}) for i in range(4)]
    assert plugin.run(leaf, 1, 5, 6, 7, k=3, z=4) == leaf(1, 5, 6, 7, k=3, z=4)
    assert plugin.seen[-1] == ((1, 5, 6, 7), {"k": 3, "z": 4})
    assert leaf.__code__ is original  # restored when the run ended


def test_outside_the_scope_the_target_runs_its_body() -> None:
    plugin = Counting()

    def inside() -> Any:
        # another context (empty) while the target is patched: not in the scope
        return contextvars.Context().run(total, 3)
    assert plugin.run(inside) == total(3)
    assert plugin.seen == []


def test_recursion_is_intercepted_at_every_level_and_tracebacks_keep_user_lines() -> None:
    plugin = CountingCountdown()
    with pytest.raises(ValueError) as native:
        countdown(3)
    with pytest.raises(ValueError) as scoped:
        plugin.run(countdown, 3)
    assert plugin.calls == 4
    # the raising line and the recursive calls' lines are native's; each intercepted call
    # adds the target's frame at its ``def`` line, the plugin's method and recurse_call
    assert frames(scoped.value)[-1] == frames(native.value)[-1]
    lines = {line for _, line, name in frames(scoped.value) if name == "countdown"}
    native_lines = {line for _, line, name in frames(native.value) if name == "countdown"}
    assert lines - native_lines == {countdown.__code__.co_firstlineno}
    assert native_lines <= lines


def test_patched_code_outside_the_scope_raises_as_natively() -> None:
    plugin = CountingCountdown()
    with pytest.raises(ValueError) as native:
        countdown(2)
    caught: list[BaseException] = []

    def elsewhere() -> None:
        try:
            contextvars.Context().run(countdown, 2)
        except ValueError as exc:
            caught.append(exc)
    plugin.run(elsewhere)
    assert plugin.calls == 0
    assert frames(caught[0])[1:] == frames(native.value)[1:]


def test_other_threads_are_not_in_the_scope() -> None:
    plugin = Counting()
    results: list[Any] = []
    started, release = threading.Event(), threading.Event()

    def other() -> None:
        started.wait()
        results.append(total(5))
        release.set()

    def scoped() -> Any:
        started.set()
        release.wait(10)
        return total(2)
    thread = threading.Thread(target=other)
    thread.start()
    assert plugin.run(scoped) == total(2)
    thread.join()
    assert results == [total(5)]
    assert len(plugin.seen) == 2  # only the scoped thread's calls


def test_asyncio_tasks_created_in_the_scope_keep_it() -> None:
    plugin = Counting()

    async def work(n: int) -> int:
        await asyncio.sleep(0)
        return total(n)

    async def main() -> list[int]:
        return list(await asyncio.gather(work(2), work(3)))
    assert plugin.run(asyncio.run, main()) == [total(2), total(3)]
    assert len(plugin.seen) == 5


def test_generators_resumed_after_the_run_do_not_keep_the_scope() -> None:
    # the documented difference from a transformed context (contextvars semantics)
    plugin = Counting()

    def gen() -> Any:
        yield leaf(1)
        yield leaf(2)
    made = plugin.run(lambda: (g := gen(), next(g))[0])
    assert len(plugin.seen) == 1
    assert next(made) == leaf(2)
    assert len(plugin.seen) == 1


def test_calls_from_native_code_are_reached() -> None:
    # a transformed context cannot reach ``__eq__`` called by a dict lookup; a dynamic
    # scope intercepts every call of the target made in it
    class Key:
        def __hash__(self) -> int:
            return 1

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Key)

    class Eq(splice.Plugin):
        dynamic_scope = True
        calls = 0

        @splice.intercept(Key.__eq__)
        def eq(self, a: Any, b: Any) -> Any:
            self.calls += 1
            return self.recurse_call(Key.__eq__, a, b)
    plugin = Eq()
    table = {Key(): "found"}
    assert plugin.run(table.__getitem__, Key()) == "found"
    assert plugin.calls == 1


def test_nested_scopes_the_outer_intercept_wins() -> None:
    outer, inner = Counting(), Counting()
    assert outer.run(inner.run, total, 3) == total(3)
    assert len(outer.seen) == 3 and inner.seen == []


def test_a_transformed_context_started_in_the_scope_composes_with_it() -> None:
    class Identity(splice.Plugin):
        pass
    plugin = Counting()
    assert plugin.run(Identity().run, total, 3) == total(3)
    assert len(plugin.seen) == 3


def test_the_code_is_restored_after_an_error_and_a_replacement_is_kept() -> None:
    plugin = CountingCountdown()
    original = countdown.__code__
    with pytest.raises(ValueError):
        plugin.run(countdown, 1)
    assert countdown.__code__ is original

    def replaced(n):
        return n
    try:
        plugin.run(lambda: setattr(countdown, "__code__", replaced.__code__))
        assert countdown.__code__ is replaced.__code__  # the program's change is kept
    finally:
        countdown.__code__ = original


@pytest.mark.parametrize("body, message", [
    ("def prehook(self, fn, args, kwargs): pass", "defines prehook()"),
    ("@splice.intercept(len)\ndef f(self, *a): pass", "not a Python function"),
    ("@splice.intercept(gen)\ndef f(self, *a): pass", "generator or coroutine"),
])
def test_what_a_dynamic_scope_cannot_do_is_a_clear_error(body: str, message: str) -> None:
    def gen() -> Any:
        yield 1
    namespace: dict[str, Any] = {"splice": splice, "gen": gen, "leaf": leaf}
    source = "class Bad(splice.Plugin):\n    dynamic_scope = True\n" + "".join(
        f"    {line}\n" for line in body.splitlines())
    exec(source, namespace)
    original = leaf.__code__
    with pytest.raises(SpliceError, match=message) as error:
        namespace["Bad"]().run(total, 2)
    assert "dynamic_scope = False" in str(error.value)
    assert leaf.__code__ is original


def test_standard_library_targets_behave_as_natively() -> None:
    # real code nobody here wrote: the patched copies run in and out of the scope
    import fnmatch
    import shlex
    import textwrap

    class Library(splice.Plugin):
        dynamic_scope = True
        calls = 0

        @splice.intercept(textwrap.TextWrapper._wrap_chunks)
        def wrap_chunks(self, *args: Any) -> Any:
            self.calls += 1
            return self.recurse_call(textwrap.TextWrapper._wrap_chunks, *args)

        @splice.intercept(shlex.shlex.read_token)
        def read_token(self, *args: Any) -> Any:
            self.calls += 1
            return self.recurse_call(shlex.shlex.read_token, *args)

        @splice.intercept(fnmatch.translate)
        def translate(self, *args: Any) -> Any:
            self.calls += 1
            return self.recurse_call(fnmatch.translate, *args)

    def program() -> Any:
        text = "The quick brown fox jumps over the lazy dog. " * 20
        return (textwrap.wrap(text, 30), textwrap.fill(text, 17, max_lines=3),
                shlex.split("a 'b c' \"d e\" f\\ g # not a comment", comments=False),
                [fnmatch.translate(p) for p in ("*.py", "[!a-c]?x", "**/*.[ch]")],
                fnmatch.filter(["a.py", "b.c", "z.txt"], "*.[pc]*"))
    plugin = Library()
    fnmatch._compile_pattern.cache_clear()  # translate runs again, as in the native run
    native = program()
    fnmatch._compile_pattern.cache_clear()
    assert plugin.run(program) == native
    assert plugin.calls > 10
    fnmatch._compile_pattern.cache_clear()
    assert plugin.run(lambda: contextvars.Context().run(program)) == native
    assert program() == native

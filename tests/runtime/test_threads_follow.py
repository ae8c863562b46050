"""Threads started under a plugin run their targets under it (issue 14, point 5).

A whole-call-graph tool covers the work a call graph starts: ``threading.Thread``,
``concurrent.futures.ThreadPoolExecutor`` and ``loop.run_in_executor`` run their targets
under the plugin that started them, hooks, intercepts, typed stages and ``Patch`` included,
unless the plugin opts out (``follow_threads = False``); results are the native ones.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

import pytest

import splice
from splice.plugins import Patch

SEEN: list[str] = []


def work(n: int) -> int:
    return helper(n) * 2


def helper(n: int) -> int:
    return n + 1


def with_thread() -> list[int]:
    out: list[int] = []
    thread = threading.Thread(target=lambda: out.append(work(1)))
    thread.start()
    thread.join()
    return out


def with_pool() -> list[int]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(work, [1, 2, 3]))


def with_executor() -> int:
    async def main() -> int:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, work, 4)
    return asyncio.run(main())


PROGRAMS = {"thread": with_thread, "pool": with_pool, "run_in_executor": with_executor}


class Seeing(splice.Plugin):
    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if getattr(fn, "__name__", None) == "helper" and \
                threading.current_thread() is not threading.main_thread():
            SEEN.append("helper")


class NotFollowing(Seeing):
    follow_threads = False


class Typed(splice.Plugin):
    """A typed stage that changes nothing: what runs under it runs as code instances."""

    def typed(self, ir: Any) -> None:
        return None


class TypedNotFollowing(Typed):
    follow_threads = False


#: what each program's thread calls first (``splice.explain`` names it once it was reached
#: under the plugin; under typed stages the callees a code instance calls directly are not
#: named)
THREAD_TARGETS = {"thread": "tests.runtime.test_threads_follow.with_thread.<locals>.<lambda>",
                  "pool": "tests.runtime.test_threads_follow.work",
                  "run_in_executor": "tests.runtime.test_threads_follow.work"}


class Intercepting(splice.Plugin):
    @splice.intercept(helper)
    def helper(self, n: int) -> int:
        return 100 * n


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_hooks_see_the_calls_of_threads(program: str) -> None:
    SEEN.clear()
    fn = PROGRAMS[program]
    assert Seeing().run(fn) == fn()
    assert SEEN, "the thread's calls ran natively"


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_a_plugin_can_opt_out(program: str) -> None:
    SEEN.clear()
    fn = PROGRAMS[program]
    assert NotFollowing().run(fn) == fn()
    assert SEEN == []


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_typed_stages_follow_threads(program: str) -> None:
    fn = PROGRAMS[program]
    plugin = Typed()
    assert plugin.run(fn) == fn()
    entered = {r.name: r.entered for r in splice.explain(plugin)}
    assert entered.get(THREAD_TARGETS[program]) is True, "the thread's calls ran natively"
    opted_out = TypedNotFollowing()
    assert opted_out.run(fn) == fn()
    assert THREAD_TARGETS[program] not in {r.name for r in splice.explain(opted_out)}


def test_intercepts_apply_in_threads() -> None:
    assert with_thread() == [4]
    assert Intercepting().run(with_thread) == [200]
    assert Intercepting().run(with_pool) == [200, 400, 600]
    assert Intercepting().run(with_executor) == 800


def test_identity_plugin_in_threads() -> None:
    for fn in PROGRAMS.values():
        assert splice.Plugin().run(fn) == fn()


def test_patch_applies_in_threads() -> None:
    patch = Patch().replace(helper, lambda n: -n)
    assert patch.run(with_thread) == [-2]
    assert patch.run(with_pool) == [-2, -4, -6]

"""A program that starts work in other processes every way the standard library offers
(``tests/runtime/test_processes.py`` runs it natively and under plugins). Importable by
name: spawned workers import it to find its functions."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import threading
from typing import Any

import splice


def helper(x: int) -> int:
    return x


def other(x: int) -> int:
    return -x


def square(x: int) -> int:
    return helper(x) * x


def add(x: int, y: int) -> int:
    return helper(x) + y


def inner(x: int) -> int:
    raise ValueError(f"bad {x}")


def boom(x: int) -> int:
    return inner(x)


def remote_traceback(method: str) -> tuple[str, tuple[Any, ...], str]:
    """The exception a task raised, as the pool gives it back (with the remote traceback,
    the text the worker formatted, as its cause)."""
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context(
            method)) as executor:
        try:
            executor.submit(boom, 3).result()
        except ValueError as exc:
            return type(exc).__name__, exc.args, str(exc.__cause__)
    raise AssertionError("boom did not raise")


def main(method: str) -> dict[str, Any]:
    """Every way of running a function in another process, with what each gave."""
    context = multiprocessing.get_context(method)
    out: dict[str, Any] = {}
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as executor:
        out["executor.map"] = list(executor.map(square, range(5)))
        out["executor.submit"] = executor.submit(add, 2, y=5).result()
        failed = executor.submit(boom, 1)
        out["executor.error"] = repr(failed.exception())
    with context.Pool(2) as pool:
        out["pool.map"] = pool.map(square, range(4))
        out["pool.apply"] = pool.apply(add, (3, 4))
        out["pool.starmap"] = pool.starmap(add, [(1, 2), (3, 4)])
        out["pool.imap_unordered"] = sorted(pool.imap_unordered(square, range(3)))
        result = pool.apply_async(boom, (2,))
        try:
            result.get(timeout=60)
        except ValueError as exc:
            out["pool.error"] = repr(exc)
        pool.close()  # the workers end (and report) before __exit__ terminates the pool
        pool.join()
    process = context.Process(target=square, args=(2,))
    process.start()
    process.join()
    out["process.exitcode"] = process.exitcode
    return out


#: calls of ``square`` that ``main`` makes in other processes (5 + 4 + 3 + 1)
SQUARE_CALLS = 13


class Hooked(splice.Plugin):
    """Per-call hooks that count calls (in the process they run in)."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"calls": 0}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if fn is square:
            with self.lock:
                self.calls += 1

    def worker_report(self) -> int | None:
        return self.calls or None

    def merge_worker_report(self, report: Any, pid: int) -> None:
        self.calls += report


class Locked(splice.Plugin):
    """A plugin that cannot be pickled (it holds a lock and says nothing about it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def lowered(self, ir: Any) -> Any:
        return ir


def fork_pool_squares() -> list[int]:
    """``square`` over a fork pool, giving up after 30 s (a worker that hangs fails)."""
    with multiprocessing.get_context("fork").Pool(1) as pool:
        return pool.map_async(square, range(4)).get(timeout=30)  # type: ignore[no-any-return]

"""Functions the Tracer tests run (a module of their own, so module filters can name it)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from tests.plugins import tracee_lib


def fib(n: int) -> int:
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Counter:
    def __init__(self, start: int) -> None:
        self.value = start

    def bump(self, by: int) -> int:
        self.value = add(self.value, by)
        return self.value


def add(a: int, b: int) -> int:
    return a + b


def main(n: int) -> tuple[int, int]:
    counter = Counter(0)
    for i in range(n):
        counter.bump(i)
    return fib(n), counter.value


def fail(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative: {x}")
    return x


def catches(values: list[int]) -> list[int | None]:
    out: list[int | None] = []
    for value in values:
        try:
            out.append(fail(value))
        except ValueError:
            out.append(None)
        add(1, 1)  # a sibling after a failed call must not nest under it
    return out


def propagates(x: int) -> int:
    return fail(x) + 1


def squares(n: int) -> Iterator[int]:
    for i in range(n):
        yield add(i * i, 0)


def consume(n: int) -> list[int]:
    return list(squares(n))


def through_library(values: list[int]) -> list[int]:
    return tracee_lib.apply(add_one, values)


def add_one(x: int) -> int:
    return x + 1


def sorted_by_key(values: list[int]) -> list[int]:
    return sorted(values, key=negate)


def negate(x: int) -> int:
    return -x


def in_threads(count: int, n: int) -> list[int]:
    results = [0] * count

    def work(slot: int) -> None:
        results[slot] = fib(n)

    threads = [threading.Thread(target=work, args=(i,), name=f"worker-{i}")
               for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def identity(x: Any) -> Any:
    return x


def call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)

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


def innermost(n: int) -> Iterator[int]:
    for i in range(n):
        try:
            yield add(i, 0)
        except ValueError:
            yield -1


def middle(n: int) -> Iterator[int]:
    yield from innermost(n)
    yield from [10, 20]  # an iterator the Tracer does not record
    for x in innermost(2):  # noqa: UP028 (a plain loop, in a generator that delegates)
        yield x


def outermost(n: int) -> Iterator[int]:
    yield 0
    got = yield from middle(n)
    yield add(0, 0) if got is None else 1


def flatten(nested: list[Any]) -> Iterator[Any]:
    for item in nested:
        if isinstance(item, list):
            yield from flatten(item)
        else:
            yield item


def drive_delegation(n: int) -> list[int]:
    """Resumes delegating generators every way: next(), send(), throw() (handled by the
    subgenerator), close() in the middle of a delegation, sum() from C."""
    out = list(outermost(n))
    gen = outermost(n)
    out.append(next(gen))
    out.append(next(gen))
    out.append(gen.send(None))
    out.append(gen.throw(ValueError("v")))
    gen.close()
    out.append(sum(flatten([1, [2, [3, [4]], 5], [[6]]])))
    return out


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


class Secret:
    __hidden = 5
    read = staticmethod(lambda obj: obj._Secret__hidden)
    mangled = lambda self: self.__hidden  # noqa: E731 (a lambda in a class body, mangled)


def lambdas() -> list[Any]:
    """Lambdas of every shape the Tracer records, with what natively shows of them."""
    import sys
    import traceback

    out: list[Any] = []
    add = lambda a, b=2, *rest, c=3, **kw: (a + b + c + sum(rest), sorted(kw))  # noqa: E731
    out.append(add(1))
    out.append(add(1, 2, 3, 4, c=5, z=1))
    out.append(sorted([3, 1, 2], key=lambda x: -x))
    gen = lambda: (yield 1)  # noqa: E731 (a generator lambda)
    made = gen()
    out.append(next(made))
    try:
        made.send(7)
    except StopIteration as stop:
        out.append(("stop", stop.value))
    nested = lambda x: (lambda y: x + y)  # noqa: E731
    out.append(nested(1)(2))
    out.append((Secret().mangled(), Secret.read(Secret())))
    out.append((lambda: sys._getframe().f_code.co_name)())
    out.append((lambda: sys._getframe(1).f_code.co_name)())
    fail = lambda n: 1 // n  # noqa: E731
    try:
        fail(0)
    except ZeroDivisionError as exc:
        out.append([(f.name, f.lineno, f.colno, f.end_colno, f.line)
                    for f in traceback.extract_tb(exc.__traceback__)])
    out.append((fail.__name__, fail.__qualname__, fail.__code__.co_name, fail.__doc__))
    out.append(list(map(lambda v: v * 2, range(3))))
    out.append((lambda: [i * i for i in range(3)])())
    return out


def consume_delegation(n: int) -> int:
    return sum(outermost(n))

"""Callers and callees for the guarded direct calls (loaded fresh per test)."""

import math


def inner(x):
    return math.sin(x) * 2.0


def outer(x):
    return inner(x) + 1.0


def replaced_inner(x):
    return -x


def rebinds_midway(x):
    global inner
    first = inner(x)
    inner = replaced_inner
    second = inner(x)
    return first, second


def swaps_code_midway(x):
    first = inner(x)
    inner.__code__ = replaced_inner.__code__
    second = inner(x)
    return first, second


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def sums(n):
    return fib(n) + fib(n + 1)


def with_default(x, scale=2.0):
    return x * scale


def calls_with_default(x):
    return with_default(x)


def countdown(n):
    # rebinds its own name half-way down: the calls after run the new function
    if n == 3:
        globals()["countdown"] = replaced_countdown
    if n <= 0:
        return [n]
    return [n, *countdown(n - 1)]


def replaced_countdown(n):
    return ["replaced", n]


def mixed(n):
    # calls itself with a float once: another instance, an ordinary call
    if n <= 0:
        return 0.0
    if isinstance(n, int):
        return mixed(float(n) - 1.0) + 1
    return mixed(n - 1.0) + 0.5


def walk(n):
    # a generator calling itself: calling it only makes the generator (an ordinary call)
    if n > 0:
        yield n
        yield from walk(n - 1)

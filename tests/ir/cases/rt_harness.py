"""Cases for the harness's own test (tests/ir/test_roundtrip_harness.py), and the damaged
"round trips" it substitutes to check that each difference is caught."""

import itertools

from tests.differential import (
    case,
    drive_async_generator,
    drive_coroutine,
    drive_generator,
    log,
    Pause,
)


@case(1, 2)
def adds(a, b):
    return a + b


def adds_differently(a, b):
    return a + b + 1


def adds_as_float(a, b):
    return float(a + b)


@case()
def records():
    log("a")
    log("b")


def records_reordered():
    log("b")
    log("a")


def records_extra():
    log("a")
    log("b")
    log("c")


@case()
def raises():
    raise ValueError("x")


def raises_other_args():
    raise ValueError("y")


@case()
def raises_chained():
    try:
        raise KeyError(1)
    except KeyError:
        raise ValueError(2)


def raises_unchained():
    try:
        raise KeyError(1)
    except KeyError:
        pass
    raise ValueError(2)


@case(drive=drive_generator())
def gen():
    try:
        yield 1
    except ValueError:
        yield "caught"
    yield 2
    return "end"


def gen_ignores_throw():
    try:
        yield 1
    except ValueError:
        pass
    yield 2
    return "end"


def gen_other_return():
    try:
        yield 1
    except ValueError:
        yield "caught"
    yield 2
    return "other"


@case(drive=drive_coroutine())
async def coro():
    got = await Pause("p")
    return got


async def coro_other():
    got = await Pause("p")
    await Pause("q")
    return got


@case(drive=drive_async_generator())
async def agen():
    yield 1
    await Pause("p")
    yield 2


async def agen_other():
    yield 1
    await Pause("p")
    yield 2
    yield 3


@case(1, locals_result=True)
def returns_locals(a):
    b = a
    return locals()


def returns_more_locals(a):
    b = a
    c = b
    return locals()


def returns_hidden_local(a):
    b = a
    result = locals()
    result["%1"] = b
    return result


@case()
def returns_function():
    def inner(x, y=1):
        return x
    return inner


def returns_other_function():
    def inner(x, y=2):
        return x
    return inner


COUNTER = itertools.count()


@case()
def nondeterministic():
    return next(COUNTER)


class Klass:
    def method(self):
        return 1

    @staticmethod
    def static():
        return 2

    @classmethod
    def klass(cls):
        return 3

    @property
    def prop(self):
        return 4

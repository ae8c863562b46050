"""Regression cases from the generated-program fuzzer (``splice.tools.genprog``).

Each case is a small explicit function run natively and round-tripped (both modes) and
compared: recorded side effects in order, the return value, or the exception's type and args
and its traceback's (function, line) list. Divergences the fuzzer finds are minimised
(``python -m splice.tools.genprog --seed S --count 1``) and added here, marked
``@pytest.mark.xfail(strict=True, reason=...)`` until the core is fixed.

So far the fuzzer has found no divergence (see ``.notes/fuzz-findings.md``): the cases below
pin, as explicit functions, the constructs the generator stresses hardest (operands that
record their own evaluation, multi-line expressions that raise, ``except*``, coroutines
driven by hand, local classes with ``nonlocal`` and private names, jumps out of
``finally``), so a core change that breaks them fails here with a readable case.
"""

from __future__ import annotations

import traceback
import types
from collections.abc import Callable
from typing import Any

import pytest

import splice.ir

MODES = [pytest.param(True, id="renest"), pytest.param(False, id="literal")]
EV: list[object] = []


def rec(*args: Any) -> Any:
    EV.append(repr(args))
    return args[-1] if args else None


def outcome(fn: Callable[..., Any], *args: Any) -> tuple[object, ...]:
    EV.clear()
    try:
        result: object = ("value", fn(*args))
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome
        frames = [(f.name, f.lineno) for f in traceback.extract_tb(exc.__traceback__)
                  if f.filename == __file__ and f.name != "outcome"]
        result = ("raised", type(exc).__name__, exc.args, frames)
    return result, list(EV)


def check(fn: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]], *,
          renest: bool) -> None:
    """Run ``fn`` natively and round-tripped, each on fresh arguments, and compare."""
    assert isinstance(fn, types.FunctionType)
    native = outcome(fn, *make_args())
    rebuilt = outcome(splice.ir.roundtrip(fn, renest=renest), *make_args())
    assert rebuilt == native


class Box:
    def __init__(self, v: int) -> None:
        self.v = v

    def __repr__(self) -> str:
        return f"Box({self.v})"

    def __getitem__(self, i: int) -> int:
        rec("getitem", i)
        return self.v + i

    def __setitem__(self, i: int, x: int) -> None:
        rec("setitem", i, x)
        self.v = x


class Rec:
    def __init__(self, name: str, fail: bool = False) -> None:
        self.name, self.fail = name, fail

    def __enter__(self) -> str:
        rec("enter", self.name)
        if self.fail:
            raise ValueError("enter", self.name)
        return self.name

    def __exit__(self, et: Any, ev: Any, tb: Any) -> bool:
        rec("exit", self.name, et.__name__ if et else None)
        return False


class Tick:
    def __init__(self, v: int) -> None:
        self.v = v

    def __await__(self) -> Any:
        got = yield self.v
        return (got or 0) + self.v


class ARec:
    async def __aenter__(self) -> str:
        rec("aenter")
        await Tick(0)
        return "a"

    async def __aexit__(self, *exc: Any) -> bool:
        rec("aexit", exc[0].__name__ if exc[0] else None)
        return False


async def acount(n: int) -> Any:
    for i in range(n):
        await Tick(i)
        yield i


def drive(coro: Any) -> Any:
    sent = None
    for _ in range(100):
        try:
            sent = coro.send(sent)
        except StopIteration as stop:
            return stop.value
        sent = (sent or 0) + 1
    raise AssertionError("too many steps")


# ------------------------------------------------------------------------------ cases

def order_of_augmented_subscript(box: Box, zero: int) -> int:
    rec("c", box)[rec("i", 1)] += rec("v", 2)
    a, b = Box(1), Box(2)
    a.v, b[rec("j", 3)] = rec("x", 4), rec("y", 5)
    return rec("t", (
        rec("p", 1) +
        rec("q", 2) //
        rec("z", zero)))


def multiline_call_that_raises(zero: int) -> object:
    return rec(
        "t",
        [1, 2],
        (3
         // rec("z", zero)),
        {"a": 1})


def except_star(kind: int) -> object:
    try:
        if kind:
            raise ExceptionGroup("eg", [ValueError(1), KeyError("k")])
        raise ValueError(2)
    except* ValueError as eg:
        rec("values", [type(x).__name__ for x in eg.exceptions])
    except* KeyError as eg:
        rec("keys", [type(x).__name__ for x in eg.exceptions])
    return rec("end")


async def coroutine_protocol(n: int) -> int:
    total = 0
    async with ARec() as name:
        rec("in", name)
        async for x in acount(n):
            total += x + await Tick(x)
    total += sum([y async for y in acount(n)])
    return total


def run_coroutine(n: int) -> object:
    return drive(coroutine_protocol(n))


def local_class_nonlocal_and_private(v: int) -> object:
    count = 1

    class Local:
        __hid = v
        seq = [rec("cs", x) for x in range(2)]

        def __init__(self, w: int) -> None:
            self.__w = w + Local.__hid

        def bump(self) -> int:
            nonlocal count
            count += self.__w
            return count + len(__class__.__name__)

    return Local(2).bump(), Local(3).bump(), count, Local.seq


def jumps_out_of_finally(n: int) -> object:
    out = []
    for i in range(n):
        try:
            if i == 1:
                raise KeyError(i)
            out.append(i)
        finally:
            rec("finally", i)
            if i == 2:
                break  # noqa: B012 - the point of the case
            if i == 1:
                continue  # noqa: B012
    try:
        return rec("try", out)
    finally:
        if n > 3:
            return rec("override", n)  # noqa: B012 - the point of the case


def with_failing_second_enter(fail: bool) -> object:
    with Rec("a") as a, Rec("b", fail) as b:
        rec("body", a, b)
    return rec("after")


CASES: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
    (order_of_augmented_subscript, (5, 1)),
    (order_of_augmented_subscript, (5, 0)),
    (multiline_call_that_raises, (0,)),
    (multiline_call_that_raises, (1,)),
    (except_star, (0,)),
    (except_star, (1,)),
    (run_coroutine, (3,)),
    (coroutine_protocol, (2,)),
    (local_class_nonlocal_and_private, (4,)),
    (jumps_out_of_finally, (3,)),
    (jumps_out_of_finally, (5,)),
    (with_failing_second_enter, (False,)),
    (with_failing_second_enter, (True,)),
]


@pytest.mark.parametrize("renest", MODES)
@pytest.mark.parametrize(("fn", "args"), CASES,
                         ids=[f"{fn.__name__}{args}" for fn, args in CASES])
def test_case(fn: Callable[..., Any], args: tuple[Any, ...], renest: bool) -> None:
    if fn is coroutine_protocol:
        # a coroutine object: drive the native and the round-tripped one by hand
        native = outcome(lambda: drive(fn(*args)))
        new = splice.ir.roundtrip(fn, renest=renest)
        assert outcome(lambda: drive(new(*args))) == native
        return
    if fn is order_of_augmented_subscript:
        check(fn, lambda: (Box(args[0]), args[1]), renest=renest)  # a fresh Box per run
        return
    check(fn, lambda: args, renest=renest)


# ------------------------------------------------------------------------------ findings
# F1 (see .notes/fuzz-findings.md): in literal mode (renest=False), every temporary is a
# hidden local that lives until the frame ends, so objects it references are finalized later
# than natively: a generator abandoned by ``break`` or by ``any()`` runs its ``finally`` after
# the code that follows, and ``__del__`` of a temporary runs late. The same holds wherever a
# plugin's rewrite keeps a temporary from being re-nested. (CPython frees temporaries as soon
# as the evaluation stack drops them; the generated code must ``del`` hidden temporaries after
# their last use to match.) The generator keeps finalization out of its programs, so these
# explicit cases are the regression tests.

class Resource:
    def __del__(self) -> None:
        rec("del")


def finalized_generator() -> Any:
    try:
        yield 1
        yield 2
    finally:
        rec("generator finally")


def break_out_of_generator_loop() -> object:
    for _ in finalized_generator():
        break
    return rec("after loop")


def any_abandons_generator_expression() -> object:
    any(True for _ in finalized_generator())
    return rec("after any")


def temporary_with_finalizer() -> object:
    len([Resource()])
    return rec("after len")


LIFETIME_CASES = [break_out_of_generator_loop, any_abandons_generator_expression,
                  temporary_with_finalizer]


# (any_abandons_generator_expression, literal) diverged until the temporary holding a
# comprehension's outermost iterable was released after its statement (splice/ir/release.py)
@pytest.mark.parametrize(("fn", "renest"), [
    pytest.param(fn, renest, id=f"{fn.__name__}-{'renest' if renest else 'literal'}")
    for fn in LIFETIME_CASES for renest in (True, False)])
def test_temporaries_are_released_when_natively_released(fn: Callable[..., Any],
                                                          renest: bool) -> None:
    check(fn, lambda: (), renest=renest)


# F1, second facet (found by genprog seed 100272 with --large, literal mode): ``raise
# Tracked(n)`` lowers to ``%1 = Tracked(n); raise %1``; the hidden local keeps the exception,
# whose traceback keeps the frame: a reference cycle (exception -> traceback -> frame ->
# exception). Every frame on the traceback, with all its locals, then lives until the cyclic
# garbage collector runs. In the generated program a generator local to ``main`` was finalized
# at a garbage collection after ``main`` returned instead of when ``main`` returned, so its
# ``finally`` events were missing. (CPython never stores the raised exception in the frame,
# and deletes ``except ... as e`` names for the same reason.)

class Tracked(Exception):
    pass


def raise_tracked(n: int) -> None:
    raise Tracked(n)


@pytest.mark.parametrize("renest", [True, False], ids=["renest", "literal"])
def test_raised_exception_is_not_kept_alive_by_its_frame(renest: bool) -> None:
    import gc
    import weakref

    fn = splice.ir.roundtrip(raise_tracked, renest=renest)
    enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            fn(1)
        except Tracked as exc:
            ref = weakref.ref(exc)
        assert ref() is None, "the exception outlived its handler (a reference cycle)"
    finally:
        if enabled:
            gc.enable()


# F2 (found by genprog --large seed 200249, literal mode): a method call whose attribute
# name is on a later line than the start of the call. CPython 3.11 attributes a method call
# to the line of the attribute name (``update_start_location_to_match_attr``), so the
# traceback entry of the calling frame shows that line. Literal mode lowers it to
# ``%1 = obj.method; %2 = %1(1)``, a plain call whose position starts at the call's first
# line: the traceback shows the line above. (Renest mode regenerates the method call and is
# right.)

class Raiser:
    def method(self, x: int) -> None:
        raise ValueError(x)


def method_name_on_next_line(obj: Raiser) -> None:
    return (obj
            .method)(
        1)


def method_call_continued_on_next_line(obj: Raiser) -> None:
    return obj \
        .method(2)


@pytest.mark.parametrize("renest", [pytest.param(True, id="renest"),
                                    pytest.param(False, id="literal")])
@pytest.mark.parametrize("fn", [method_name_on_next_line, method_call_continued_on_next_line],
                         ids=lambda fn: fn.__name__)
def test_method_call_line_is_the_attribute_line(fn: Callable[..., Any], renest: bool) -> None:
    check(fn, lambda: (Raiser(),), renest=renest)

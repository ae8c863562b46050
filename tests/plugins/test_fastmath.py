"""FastMath rewrites mapped math calls only where every argument is inferred ``float``, never
where it might not be one, and never inside the replacements themselves. Differential: the
rewritten instance computes exactly what the program rewritten by hand computes."""

from __future__ import annotations

import math
from typing import Any

import pytest

import splice
from splice.cache.instances import ArgumentTypeError
from splice.plugins import FastMath


def cheap_sin(x):  # type: ignore[no-untyped-def]
    # calls math.sin itself: it must not be rewritten into calling itself
    return math.sin(x) + 1000.0


def cheap_sqrt(x):  # type: ignore[no-untyped-def]
    return x ** 0.5


def wave(x, n):  # type: ignore[no-untyped-def]
    total = 0.0
    for i in range(n):
        total = total + math.sin(x * i) + math.sqrt(x + i)
    return total


def wave_by_hand(x, n):  # type: ignore[no-untyped-def]
    total = 0.0
    for i in range(n):
        total = total + cheap_sin(x * i) + cheap_sqrt(x + i)
    return total


def single(x):  # type: ignore[no-untyped-def]
    return math.sin(x)


def keyword_call(x):  # type: ignore[no-untyped-def]
    return math.sqrt(*[x])


def plugin() -> FastMath:
    return FastMath({math.sin: cheap_sin, math.sqrt: cheap_sqrt})


@pytest.mark.parametrize("args", [(0.5, 5), (1.5, 0), (2.25, 13)])
def test_rewritten_instance_matches_the_hand_rewritten_program(args: tuple[Any, ...]) -> None:
    fm = plugin()
    ci = splice.compile(fm, wave, float, int)
    assert splice.invoke(ci, *args) == wave_by_hand(*args)
    if args[1]:
        assert splice.invoke(ci, *args) != wave(*args)  # it really was rewritten
    assert {(r.original, r.replacement) for r in fm.rewrites} == {
        ("math.sin", f"{__name__}.cheap_sin"), ("math.sqrt", f"{__name__}.cheap_sqrt")}


@pytest.mark.parametrize("argtype", [int | float, int, object, None])
def test_no_rewrite_where_the_argument_might_not_be_a_float(argtype: Any) -> None:
    fm = plugin()
    argtypes = () if argtype is None else (argtype,)
    ci = splice.compile(fm, single, *argtypes)
    assert fm.rewrites == []
    for value in (0.5, 2):
        if argtype is None or ci.argtypes[0].accepts(value):
            assert splice.invoke(ci, value) == math.sin(value)


def test_float_argument_is_rewritten_and_guarded_by_invoke() -> None:
    fm = plugin()
    ci = splice.compile(fm, single, float)
    assert len(fm.rewrites) == 1
    assert splice.invoke(ci, 0.5) == cheap_sin(0.5)
    with pytest.raises(ArgumentTypeError):
        splice.invoke(ci, 1)  # an int would have reached the float-only rewrite


def test_star_args_are_not_rewritten() -> None:
    fm = plugin()
    ci = splice.compile(fm, keyword_call, float)
    assert fm.rewrites == []
    assert splice.invoke(ci, 4.0) == 2.0


def test_replacements_are_not_entered() -> None:
    fm = plugin()
    assert fm.recurse(cheap_sin) is False
    assert fm.recurse(wave) is True
    ci = splice.compile(fm, single, float)
    # cheap_sin calls math.sin natively: one level, not an infinite recursion
    assert splice.invoke(ci, 0.25) == math.sin(0.25) + 1000.0


def test_typed_listing_shows_the_replacement() -> None:
    listing = str(splice.code_typed(single, float, plugin=plugin()))
    assert "cheap_sin" in listing


class _Rebinder:
    """A callee that rebinds ``math.sin`` while its caller runs (and restores it later)."""

    def __init__(self) -> None:
        self.original = math.sin

    def rebind(self) -> float:
        math.sin = lambda x: -1.0  # type: ignore[assignment]
        return 0.0


def rebinds_midway(x, rebinder):  # type: ignore[no-untyped-def]
    first = math.sin(x)
    rebinder.rebind()
    return first, math.sin(x)


@pytest.mark.parametrize("world_age", [False, True])
def test_world_age_checks_when_the_call_starts(world_age: bool) -> None:
    fm = FastMath({math.sin: cheap_sin, math.sqrt: cheap_sqrt}, world_age=world_age)
    ci = splice.compile(fm, wave, float, int)
    checked_at_use = "is @sin" in ci.routed_source or "is @sqrt" in ci.routed_source
    assert checked_at_use is not world_age
    assert splice.invoke(ci, 0.5, 7) == wave_by_hand(0.5, 7)
    before = cheap_sin(0.5)
    rebinder = _Rebinder()
    try:
        got = fm.run(rebinds_midway, 0.5, rebinder)
        # default: the program's latest binding from the rebinding on; world age: the
        # call keeps its rewrite until it returns (cheap_sin, run natively, then calls the
        # new math.sin: -1.0 + 1000.0)
        assert got == ((before, 999.0) if world_age else (before, -1.0))
        # the next call sees the new binding either way
        assert fm.run(single, 0.5) == -1.0
    finally:
        math.sin = rebinder.original  # type: ignore[assignment]
    assert fm.run(single, 0.5) == cheap_sin(0.5)


def local_callee(x):  # type: ignore[no-untyped-def]
    sine = math.sin
    return sine(x)


def in_a_match_guard(x):  # type: ignore[no-untyped-def]
    match x:
        case float() if math.sin(x) > 0.25:  # (a guard is one expression: no check fits)
            return "positive"
    return "other"


def test_a_callee_held_by_a_local_is_replaced_behind_a_check() -> None:
    fm = plugin()
    assert fm.run(local_callee, 0.5) == cheap_sin(0.5)
    assert [(r.function, r.original) for r in fm.rewrites] == [("local_callee", "math.sin")]
    assert plugin().run(local_callee, 2) == math.sin(2)  # not a float: the program's call


def test_a_replacement_splice_undoes_is_not_reported() -> None:
    fm = plugin()
    # natively sin(0.5) = 0.48 > 0.25; cheap_sin would make it 1000.48, the same answer,
    # so the report is what tells the two apart
    assert fm.run(in_a_match_guard, 0.5) == in_a_match_guard(0.5)
    (instance,) = [ci for ci in fm.context.instances if ci.argtypes]
    assert any("undone" in line for line in instance.optimizations), instance.optimizations
    assert fm.rewrites == []


def from_list(values):  # type: ignore[no-untyped-def]
    total = 0.0
    for v in values:
        total = total + math.sqrt(v)  # (the elements' class is not inferred: Any)
    return total


@pytest.mark.parametrize("world_age", [False, True], ids=["default", "world_age"])
def test_speculate_rewrites_list_held_floats_behind_a_check(world_age: bool) -> None:
    seen: list[Any] = []

    def recording_sqrt(x):  # type: ignore[no-untyped-def]
        seen.append(x)
        return cheap_sqrt(x)

    proof_only = FastMath({math.sqrt: recording_sqrt}, world_age=world_age)
    assert proof_only.run(from_list, [4.0, 9.0]) == 5.0 and seen == []
    assert proof_only.rewrites == []
    fm = FastMath({math.sqrt: recording_sqrt}, world_age=world_age, speculate=True)
    assert fm.run(from_list, [4.0, 9.0]) == 5.0 and seen == [4.0, 9.0]
    assert {(r.function, r.original) for r in fm.rewrites} == {("from_list", "math.sqrt")}
    seen.clear()
    # an int, a float subclass, a string: the program's own call (and its TypeError)
    assert fm.run(from_list, [4, 9.0]) == from_list([4, 9.0]) and seen == [9.0]

    class Real(float):
        pass

    assert fm.run(from_list, [Real(4.0)]) == 2.0 and seen == [9.0]
    with pytest.raises(TypeError, match="must be real number, not str"):
        fm.run(from_list, ["4"])
    assert seen == [9.0]
    assert fm.cache_token() != proof_only.cache_token()


@pytest.mark.parametrize("world_age", [False, True], ids=["default", "world_age"])
def test_a_speculation_checks_a_resolved_callee_only_in_the_default_mode(
        world_age: bool) -> None:
    from splice.ir.nodes import Compare, Const
    from splice.ir.tools import walk

    fm = FastMath({math.sqrt: cheap_sqrt}, world_age=world_age, speculate=True)
    ci = splice.compile(fm, from_list, list)
    compares = [stmt.op for stmt in walk(ci.optimized)
                if isinstance(getattr(stmt, "op", None), Compare)]
    callee_checks = [c for c in compares if any(
        isinstance(o, Const) and o.value is math.sqrt for o in (c.left, c.right))]
    # (under world age the entry guards cover math.sqrt; the element is checked in both)
    assert len(callee_checks) == (0 if world_age else 1)
    assert splice.invoke(ci, [4.0, 9.0]) == 5.0


def get_sin():  # type: ignore[no-untyped-def]
    return math.sin


def through_a_getter(x):  # type: ignore[no-untyped-def]
    f = get_sin()
    return f(x)


class Operation:
    def __init__(self) -> None:
        self.op = math.sin

    def apply(self, x):  # type: ignore[no-untyped-def]
        return self.op(x)


def through_an_attribute(x):  # type: ignore[no-untyped-def]
    return Operation().apply(x)


@pytest.mark.parametrize("program", [local_callee, through_a_getter, through_an_attribute])
@pytest.mark.parametrize("x", [0.5, 2])
def test_replacements_through_dynamic_dispatch(program: Any, x: Any) -> None:
    # issue 15's forms: `f = get_sin(); f(x)`, `self.op(x)`: replaced behind a check of the
    # value called and of the argument, else the program's call
    fm = plugin()
    expected = cheap_sin(x) if type(x) is float else math.sin(x)
    assert fm.run(program, x) == expected
    assert bool(fm.rewrites) == (type(x) is float)


def pairs_of(values):  # type: ignore[no-untyped-def]
    # (the comprehension's routed calls of range and len need statements: compiled as a
    # nested function, which the listing must show too)
    pairs = [(values[i], values[j]) for i in range(len(values))
             for j in range(i + 1, len(values))]
    return sum(math.sqrt(a * b) for a, b in pairs)


def test_the_listing_of_an_instance_with_a_rewritten_comprehension() -> None:
    ci = splice.compile(plugin(), pairs_of, list)
    source = ci.routed_source
    assert "def " in source and "for i in" in source
    assert splice.invoke(ci, [1.0, 4.0, 9.0]) == pairs_of([1.0, 4.0, 9.0])

"""The lattice: ordering, join/meet laws, accepts, printing, narrowing, conversion."""

from __future__ import annotations

import types

from hypothesis import given, settings
from hypothesis import strategies as st

from splice.infer import (
    ANY,
    NEVER,
    Abstract,
    Const,
    Elements,
    Exact,
    PartialTuple,
    Sub,
    abstract,
    join,
    meet,
    narrow_is,
    narrow_isinstance,
    narrow_truth,
    narrow_type_is,
)

SAMPLES: list[object] = [0, 1, -1, 2, True, False, 0.0, -0.0, 1.5, float("nan"), "", "a",
                         None, (), (1,), (1, "a"), (1.0, 2), [1], {}, b"x", 3 + 0j]

consts = st.sampled_from(SAMPLES[:15]).map(Const)
exacts = st.sampled_from([int, float, str, bool, type(None), tuple, list, dict]).map(Exact)
subs = st.sampled_from([int, object, str]).map(Sub)
base = st.one_of(consts, exacts, subs, st.just(ANY), st.just(NEVER))


def _tuples(inner: st.SearchStrategy[Abstract]) -> st.SearchStrategy[Abstract]:
    return st.lists(inner, min_size=0, max_size=2).map(PartialTuple)


values = st.recursive(base, lambda inner: st.one_of(
    _tuples(inner), st.tuples(inner, inner).map(lambda p: join(*p))), max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(values, values)
def test_join_is_an_upper_bound_and_symmetric(a: Abstract, b: Abstract) -> None:
    j = join(a, b)
    assert a <= j and b <= j
    for v in SAMPLES:
        if a.accepts(v) or b.accepts(v):
            assert j.accepts(v), (a, b, j, v)
    assert join(a, a) == a
    assert join(a, NEVER) == a and join(a, ANY) is ANY


@settings(max_examples=300, deadline=None)
@given(values, values)
def test_meet_keeps_the_common_values(a: Abstract, b: Abstract) -> None:
    m = meet(a, b)
    for v in SAMPLES:
        if a.accepts(v) and b.accepts(v):
            assert m.accepts(v), (a, b, m, v)
    if a <= b:
        assert m == a


@settings(max_examples=300, deadline=None)
@given(values, values, values)
def test_ordering_agrees_with_membership(a: Abstract, b: Abstract, c: Abstract) -> None:
    assert a <= a
    if a <= b:
        for v in SAMPLES:
            if a.accepts(v):
                assert b.accepts(v), (a, b, v)
        if b <= c:
            assert a <= c
    assert NEVER <= a <= ANY


def test_accepts() -> None:
    assert Const(1).accepts(1) and not Const(1).accepts(True) and not Const(1).accepts(1.0)
    assert not Const(0.0).accepts(-0.0)
    assert Const(float("nan")).accepts(float("nan"))
    assert Exact(int).accepts(3) and not Exact(int).accepts(True)
    assert Sub(int).accepts(True)
    assert PartialTuple([Exact(int), Const("a")]).accepts((3, "a"))
    assert not PartialTuple([Exact(int)]).accepts((3, 4))
    assert Elements(range, Exact(int)).accepts(range(3))
    assert not NEVER.accepts(None) and ANY.accepts(object())


def test_widening_bounds_unions() -> None:
    j = NEVER
    for i in range(10):
        j = join(j, Const(i))
    assert j == Exact(int)
    wide = NEVER
    for cls in (int, float, str, bytes, list, dict, set):
        wide = join(wide, Exact(cls))
    assert wide is ANY


def test_printing() -> None:
    assert str(Exact(float)) == "float"
    assert str(join(Exact(int), Const(None))) == "Const(None) | int"
    assert str(PartialTuple([Exact(int), Exact(str)])) == "tuple[int, str]"
    assert str(Sub(int)) == "<:int"
    assert str(ANY) == "Any" and str(NEVER) == "Never"
    assert str(Elements(range, Exact(int))) == "range[int]"


def test_queries() -> None:
    assert Exact(float).exact_class is float and Sub(int).exact_class is None
    assert Const(2).is_const and Const(2).value == 2 and not Exact(int).is_const
    assert join(Const(1), Const(2)).exact_class is int
    assert Exact(int) <= int and Const(True) <= bool and not (Exact(int) <= float)


def test_abstract_conversion() -> None:
    assert abstract(float) == Exact(float)
    assert abstract(None) == Const(None)
    assert abstract(int | None) == join(Exact(int), Const(None))
    assert abstract(tuple[int, str]) == PartialTuple([Exact(int), Exact(str)])
    assert abstract(tuple[int, ...]) == Exact(tuple)
    assert abstract(list[int]) == Exact(list)
    assert abstract(Const(3)) == Const(3)


def test_narrowing() -> None:
    opt = join(Exact(int), Const(None))
    assert narrow_is(opt, None) == (Const(None), Exact(int))
    yes, no = narrow_isinstance(join(Exact(int), Exact(str)), (int,))
    assert yes == Exact(int) and no == Exact(str)
    yes, no = narrow_isinstance(ANY, (float,))
    assert yes == Sub(float) and no is ANY
    assert narrow_type_is(join(Exact(int), Exact(float)), float) == (Exact(float), Exact(int))
    yes, no = narrow_truth(opt)
    assert yes == Exact(int) and no == join(Const(0), Const(None))
    assert narrow_truth(Exact(bool)) == (Const(True), Const(False))
    assert narrow_truth(Const(None)) == (NEVER, Const(None))


def test_method_kind() -> None:
    class C:
        def m(self) -> None:
            pass

    from splice.infer import Method
    method = Method(C.m, Exact(C))
    assert method.accepts(C().m) and method.exact_class is types.MethodType
    assert not method.accepts(C.m)

"""Regression tests for round-trip bugs found in the core (native run is the oracle)."""

from __future__ import annotations

import types

import pytest

import splice.ir
from tests.ir.cases import core_regressions as cases

MODES = [pytest.param(True, id="renest"), pytest.param(False, id="literal")]


@pytest.mark.parametrize("renest", MODES)
def test_method_named_like_its_class(renest: bool) -> None:
    new = splice.ir.roundtrip(cases.Named.Named, renest=renest)
    assert new.__code__.co_argcount == cases.Named.Named.__code__.co_argcount
    assert new(cases.Named(), 1) == cases.Named().Named(1)


@pytest.mark.parametrize("renest", MODES)
def test_types_coroutine_stays_awaitable(renest: bool) -> None:
    native = cases.await_legacy(cases.legacy_coroutine)
    rebuilt = cases.await_legacy(splice.ir.roundtrip(cases.legacy_coroutine, renest=renest))
    assert native.send(None) == rebuilt.send(None) == "suspended"
    for coroutine in (native, rebuilt):
        with pytest.raises(StopIteration) as stop:
            coroutine.send(42)
        assert stop.value.value == 42


@pytest.mark.parametrize("renest", MODES)
@pytest.mark.parametrize("args", [(0, 0, 0), (0, 0, 1), (1, 0, 0), (0, 1, 0)])
def test_chain_of_names(renest: bool, args: tuple[int, int, int]) -> None:
    new = splice.ir.roundtrip(cases.chain_of_names, renest=renest)
    assert new(*args) == cases.chain_of_names(*args)


@pytest.mark.parametrize("renest", MODES)
def test_genexp_with_set_display(renest: bool) -> None:
    new = splice.ir.roundtrip(cases.genexp_with_set_display, renest=renest)
    for group in ([("insert", 1, 2)], [("insert", 1, 2), ("delete", 3, 4)], []):
        assert new(group) == cases.genexp_with_set_display(group)


@pytest.mark.parametrize("renest", MODES)
def test_global_self_and_class_references(renest: bool) -> None:
    new = splice.ir.roundtrip(cases.recursive, renest=renest)
    assert new.__code__.co_freevars == ()
    assert new(6) == cases.recursive(6)
    make = splice.ir.roundtrip(cases.Fraction.make, renest=renest)
    assert make.__code__.co_freevars == cases.Fraction.make.__code__.co_freevars
    assert make(cases.Fraction, 0) is cases.Fraction
    assert type(make(cases.Fraction, 1)) is cases.Fraction


@pytest.mark.parametrize("renest", MODES)
def test_augmented_assignments(renest: bool) -> None:
    def fresh() -> tuple[types.SimpleNamespace, list[int]]:
        return types.SimpleNamespace(scale=2, count=0), [1, 2, 3]

    new = splice.ir.roundtrip(cases.augmented_everywhere, renest=renest)
    assert new(*fresh(), 1) == cases.augmented_everywhere(*fresh(), 1)
    if renest:  # re-nested code is the source again: no hidden temporaries
        assert "%" not in splice.ir.generate(splice.ir.lower(cases.augmented_everywhere))


def test_code_that_reads_none_of_the_original_cells() -> None:
    """A pass may remove every read of a closure variable (a cell folded to a constant):
    the code then runs without a closure instead of failing to plan one."""
    from splice.ir.compiled import CompiledCode, instantiate

    def outer() -> types.FunctionType:
        x = 5

        def inner() -> int:
            return x

        return inner  # type: ignore[return-value]

    original = outer()
    folded = (lambda: 5).__code__.replace(co_name="inner")
    compiled = CompiledCode.of(folded, {}, original.__code__.co_freevars)
    made = instantiate(compiled, original)
    assert made() == 5 and made.__closure__ is None

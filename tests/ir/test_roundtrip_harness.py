"""The differential harness detects what it claims to: a sabotaged round trip (another
result, an extra or reordered side effect, a shifted traceback line, another frame name, a
generator protocol difference, an extra name in ``locals()``) fails the check."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import pytest

import splice.ir
from tests import differential as d
from tests.ir.cases import rt_harness as cases

Damage = Callable[[types.FunctionType], Any]


@pytest.fixture(params=["renest", "literal"])
def mode(request: pytest.FixtureRequest) -> str:
    """The sabotage replaces the round trip, so only the round-trip modes apply here."""
    return str(request.param)


def sabotage(monkeypatch: pytest.MonkeyPatch, damage: Damage) -> None:
    """Make ``splice.ir.roundtrip`` return ``damage(original)``."""

    def bad_roundtrip(fn: types.FunctionType, *, renest: bool = True) -> Any:
        return damage(fn)

    monkeypatch.setattr(splice.ir, "roundtrip", bad_roundtrip)


def with_code(fn: types.FunctionType, code: types.CodeType) -> types.FunctionType:
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                             fn.__closure__)
    new.__qualname__, new.__kwdefaults__ = fn.__qualname__, fn.__kwdefaults__
    return new


def shifted(fn: types.FunctionType) -> types.FunctionType:
    return with_code(fn, fn.__code__.replace(co_firstlineno=fn.__code__.co_firstlineno + 1))


def renamed(fn: types.FunctionType) -> types.FunctionType:
    return with_code(fn, fn.__code__.replace(co_name=fn.__code__.co_name + "_x"))


def replaced_by(name: str) -> Damage:
    return lambda fn: getattr(cases, name)


def one(fn: Callable[..., Any]) -> d.Case:
    found = [c for c in d.collect(cases) if c.fn is fn]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize(("target", "damage"), [
    (cases.adds, replaced_by("adds_differently")),          # another value
    (cases.adds, replaced_by("adds_as_float")),             # same ==, another type
    (cases.records, replaced_by("records_reordered")),      # side effects reordered
    (cases.records, replaced_by("records_extra")),          # an extra side effect
    (cases.raises, shifted),                                # traceback line
    (cases.raises, renamed),                                # traceback function name
    (cases.raises, replaced_by("raises_other_args")),       # exception args
    (cases.raises_chained, replaced_by("raises_unchained")),  # __context__
    (cases.gen, replaced_by("gen_ignores_throw")),          # generator protocol
    (cases.gen, replaced_by("gen_other_return")),           # StopIteration.value
    (cases.coro, replaced_by("coro_other")),                # coroutine protocol
    (cases.agen, replaced_by("agen_other")),                # async generator protocol
    (cases.returns_locals, replaced_by("returns_more_locals")),  # locals() keys
    (cases.returns_function, replaced_by("returns_other_function")),  # nested function
], ids=lambda v: getattr(v, "__name__", "damage"))
def test_sabotage_is_detected(monkeypatch: pytest.MonkeyPatch, target: Any, damage: Damage,
                              mode: str) -> None:
    case = one(target)
    d.check(case, mode)  # the undamaged round trip passes
    sabotage(monkeypatch, damage)
    with pytest.raises(AssertionError):
        d.check(case, mode)


def test_rebuilt_class_methods_are_round_tripped(mode: str) -> None:
    sub = d.rebuild_class(cases.Klass, mode == "renest")
    assert sub.__mro__[1] is cases.Klass
    assert sub.__qualname__ == cases.Klass.__qualname__
    for name in ("method", "static", "klass", "prop"):
        assert name in vars(sub), name
    assert vars(sub)["method"] is not vars(cases.Klass)["method"]
    assert vars(sub)["method"].__code__ is not cases.Klass.method.__code__


def test_locals_are_compared_exactly_in_renest_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-identifier extra key is tolerated in literal mode only."""
    case = one(cases.returns_locals)
    sabotage(monkeypatch, replaced_by("returns_hidden_local"))
    d.check(case, "literal")
    with pytest.raises(AssertionError):
        d.check(case, "renest")


def test_nondeterministic_case_is_reported() -> None:
    with pytest.raises(AssertionError, match="not deterministic"):
        d.check(one(cases.nondeterministic), "renest")


def _all_cases() -> dict[tuple[str, str], d.Case]:
    from tests.ir.cases import (
        rt_arguments,
        rt_assignments,
        rt_async,
        rt_classes,
        rt_control,
        rt_expressions,
        rt_generators,
        rt_implicit,
        rt_scoping,
    )
    modules = [rt_arguments, rt_assignments, rt_async, rt_classes, rt_control,
               rt_expressions, rt_generators, rt_implicit, rt_scoping]
    return {case.key: case for module in modules for case in d.collect(module)}


def test_lifetime_gaps_still_differ_in_deaths() -> None:
    """Each case excused from comparing deaths (none where the C extensions are built)
    still has a value dying at another point than natively in some mode (else its entry
    must go); the other checks of the case compare the rest."""
    cases = _all_cases()
    for key in sorted(d.LIFETIME_GAPS):
        case = cases[key]
        differs = []
        for mode in d.MODES:
            target = d.rebuilt(case, mode)
            if d.observe(case, target) != d.observe(case, case.fn):
                differs.append(mode)
        assert differs, \
            f"{key}: deaths are native in every mode: remove its LIFETIME_GAPS entry"

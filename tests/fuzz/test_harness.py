"""The generated-program harness detects what it claims to detect: sabotaged round trips
(an extra side effect, shifted line numbers) are reported, and the minimiser shrinks a
divergent program to a small one that still diverges the same way."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator

import pytest

import splice.ir
from splice.tools import genprog

Sabotage = Callable[[types.FunctionType, types.FunctionType], types.FunctionType]


@pytest.fixture
def sabotage(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Sabotage], None]]:
    """Make splice's round trip return ``damage(original, rebuilt)``."""
    compile_ir, roundtrip = splice.ir.compile_ir, splice.ir.roundtrip

    def install(damage: Sabotage) -> None:
        def bad_compile_ir(ir: object, original: types.FunctionType, *, renest: bool = True
                           ) -> types.FunctionType:
            return damage(original, compile_ir(ir, original, renest=renest))  # type: ignore[arg-type]

        def bad_roundtrip(fn: types.FunctionType, *, renest: bool = True
                          ) -> types.FunctionType:
            return damage(fn, roundtrip(fn, renest=renest))

        monkeypatch.setattr(splice.ir, "compile_ir", bad_compile_ir)
        monkeypatch.setattr(splice.ir, "roundtrip", bad_roundtrip)

    yield install


def shift_lines(fn: types.FunctionType) -> types.FunctionType:
    code = fn.__code__.replace(co_firstlineno=fn.__code__.co_firstlineno + 1)
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                             fn.__closure__)
    new.__qualname__ = fn.__qualname__
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def extra_event(original: types.FunctionType, new: types.FunctionType
                ) -> types.FunctionType:
    if original.__name__ != "rec":
        return new

    def rec(*args: object) -> object:
        if args and args[0] == "main":
            new("sabotage")
        return new(*args)
    return rec  # type: ignore[return-value]


@pytest.mark.parametrize("mode", ["renest", "literal"])
def test_extra_side_effect_is_reported(sabotage: Callable[[Sabotage], None],
                                       mode: str) -> None:
    sabotage(extra_event)
    found = genprog.check_seed(0, [mode])
    assert [f.kind for f in found] == ["events"]


def test_shifted_line_numbers_are_reported(sabotage: Callable[[Sabotage], None]) -> None:
    """Only the tracebacks see line numbers: every exception is recorded with its lines."""
    sabotage(lambda original, new: shift_lines(new)
             if original.__qualname__ not in genprog.PRELUDE_FUNCTIONS else new)
    kinds = {f.kind for seed in range(5) for f in genprog.check_seed(seed, ["renest"])}
    assert kinds and kinds <= {"events", "exception"}


def test_transform_failures_are_reported(sabotage: Callable[[Sabotage], None]) -> None:
    def fail(original: types.FunctionType, new: types.FunctionType) -> types.FunctionType:
        if original.__name__ == "main":
            raise splice.UnsupportedError("main", "sabotaged")
        return new
    sabotage(fail)
    found = genprog.check_seed(1, ["literal"])
    assert [f.kind for f in found] == ["transform:UnsupportedError"]
    assert "sabotaged" in found[0].detail


def test_minimiser_shrinks_and_keeps_the_divergence(
        sabotage: Callable[[Sabotage], None]) -> None:
    # functions named f<N> lose a line: the divergence needs an f-function that raises
    sabotage(lambda original, new: shift_lines(new)
             if original.__name__.startswith("f") else new)
    size = genprog.Size(functions=(2, 2), generators=(0, 1), classes=(0, 0),
                        coroutines=(0, 0))
    finding = next(f for seed in range(40)
                   for f in genprog.check_seed(seed, ["renest"], size))
    small = genprog.minimise_finding(finding, budget=60)
    assert len(small.splitlines()) < len(finding.source.splitlines()) / 3
    filename = "<genprog-test-minimised>"
    try:
        again = genprog.check(small, filename, ["renest"])
    finally:
        genprog.forget_source(filename)
    assert [(m, k) for m, k, _ in again] == [("renest", finding.kind)]
    assert finding.functions and all(name.startswith("f") for name in finding.functions)

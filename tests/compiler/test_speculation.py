"""``TypedCall.speculate(expected, replacement)``: a ``typed`` hook replaces a call whose
callee inference did not resolve (taken from a container, a parameter) by a replacement
that runs only where the value called is ``expected``, checked at the call in the default
mode and under world age alike; elsewhere the program's own call runs. Differential: each
program runs natively and under the speculating plugin, with the replacement recording
what it was called with."""

from __future__ import annotations

import math
from typing import Any

import pytest

import splice
from splice.ir.typed_tools import typed_calls

CALLS: list[Any] = []


def fast_sin(x):  # type: ignore[no-untyped-def]
    CALLS.append(x)
    return math.sin(x)


OPERATIONS = {"sin": math.sin, "cos": math.cos}


def apply(name, x):  # type: ignore[no-untyped-def]
    operation = OPERATIONS[name]
    return operation(x)


def rebind_operation(name, value):  # type: ignore[no-untyped-def]
    OPERATIONS[name] = value


def apply_twice_rebinding(x):  # type: ignore[no-untyped-def]
    first = OPERATIONS["sin"](x)
    rebind_operation("sin", abs)  # while the instance runs
    second = OPERATIONS["sin"](x)
    rebind_operation("sin", math.sin)
    return first, second


def call_parameter(f, x):  # type: ignore[no-untyped-def]
    return f(x)


class Speculating(splice.Plugin):
    """Speculates that every unresolved one-argument call calls ``math.sin``."""

    def typed(self, ir: Any) -> None:
        for call in typed_calls(ir):
            if call.callee is None and call.simple and len(call.args) == 1:
                call.speculate(math.sin, fast_sin)


class SpeculatingWorldAge(Speculating):
    world_age = True


@pytest.fixture(params=[Speculating, SpeculatingWorldAge], ids=["default", "world_age"])
def plugin(request: pytest.FixtureRequest) -> splice.Plugin:
    CALLS.clear()
    plugin_class: type[splice.Plugin] = request.param
    return plugin_class()


@pytest.mark.parametrize(("name", "x"), [("sin", 0.5), ("cos", 0.5), ("sin", 2)])
def test_the_replacement_runs_where_the_value_called_is_the_expected_one(
        plugin: splice.Plugin, name: str, x: Any) -> None:
    assert plugin.run(apply, name, x) == apply(name, x)
    expected = [x] if name == "sin" else []
    assert expected == CALLS


def test_a_callee_rebound_while_the_instance_runs_takes_the_programs_call(
        plugin: splice.Plugin) -> None:
    native = apply_twice_rebinding(0.5)
    assert plugin.run(apply_twice_rebinding, 0.5) == native == (math.sin(0.5), 0.5)
    assert CALLS == [0.5]  # the first call only


@pytest.mark.parametrize("f", [math.sin, math.cos, abs, lambda x: x * 2])
def test_a_parameter_callee(plugin: splice.Plugin, f: Any) -> None:
    assert plugin.run(call_parameter, f, 0.25) == call_parameter(f, 0.25)
    expected = [0.25] if f is math.sin else []
    assert expected == CALLS


def test_the_check_is_listed_with_the_instance(plugin: splice.Plugin) -> None:
    plugin.run(apply, "cos", 0.5)
    lines = [line for ci in plugin.context.instances for line in ci.optimizations]
    assert any("fast_sin instead of sin, checked where it is called" in line
               for line in lines), lines


class EqualsAll(type):
    # a metaclass with __eq__ alone: its classes do not hash, so no check can test them
    def __eq__(cls, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]


class Odd(metaclass=EqualsAll):
    pass


def sin_of_literal():  # type: ignore[no-untyped-def]
    return math.sin(1)


def sin_of_starred(values):  # type: ignore[no-untyped-def]
    return math.sin(*values)


def sin_of_value(x):  # type: ignore[no-untyped-def]
    return math.sin(x)


class SpeculatingClasses(splice.Plugin):
    """Speculates that every call of ``math.sin`` has an argument of ``self.cls``."""

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def recurse(self, fn: Any) -> bool:
        return fn is not fast_sin  # (it calls math.sin itself)

    def typed(self, ir: Any) -> None:
        for call in typed_calls(ir):
            if call.callee is math.sin:
                call.speculate(math.sin, fast_sin, (self.cls,))


@pytest.mark.parametrize(("program", "args", "cls"), [
    (sin_of_literal, (), float),        # a literal int: never a float
    (sin_of_starred, ([0.5],), float),  # *values: no one value to check
    (sin_of_value, (0.5,), Odd),        # a class no check can test
], ids=["literal", "starred", "unhashable_class"])
def test_a_speculation_no_check_can_test_is_undone(program: Any, args: tuple[Any, ...],
                                                    cls: type) -> None:
    CALLS.clear()
    plugin = SpeculatingClasses(cls)
    assert plugin.run(program, *args) == program(*args)
    assert CALLS == []
    lines = [line for ci in plugin.context.instances for line in ci.optimizations]
    assert any("replacement of sin undone" in line for line in lines), lines


def test_a_speculation_on_argument_classes_checks_each_argument() -> None:
    CALLS.clear()
    plugin = SpeculatingClasses(float)
    assert plugin.run(sin_of_value, 0.5) == math.sin(0.5) and CALLS == [0.5]
    assert plugin.run(sin_of_value, 1) == math.sin(1) and CALLS == [0.5]

"""Callable objects that cannot be hashed are called under a plugin as natively.

A class that defines ``__eq__`` and not ``__hash__`` makes its instances unhashable; calling
one must not raise ``TypeError: unhashable type`` from splice's dispatch table, wherever the
call is: a statement, code that must stay one expression (a lambda's body, a short-circuit
operand, a comprehension), a class body (genprog seeds 777220 and 777250 found the
short-circuit case).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import splice
from tests.differential import HookedIdentityPlugin, IdentityPlugin


class Callable_:
    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Callable_) and other.n == self.n

    def __call__(self, x: int) -> int:
        return self.n + x

    def method(self, x: int) -> int:
        return self.n * x


def statement() -> int:
    f = Callable_(1)
    return f(2)


def short_circuit() -> object:
    return not Callable_(2)(3) and Callable_(4)(5)


def in_a_lambda() -> int:
    g = lambda x: Callable_(x)(x)  # noqa: E731
    return g(3)


def in_a_comprehension() -> list[int]:
    return [Callable_(i)(i) for i in range(3)]


def in_a_class_body() -> int:
    class Holder:
        value = Callable_(5)(1)
    return Holder.value


def method_of_an_unhashable_receiver() -> int:
    return Callable_(3).method(4) + (Callable_(1).method(2) if True else 0)


class Typed(splice.Plugin):
    def typed(self, ir: Any) -> None:
        return None


PROGRAMS = [statement, short_circuit, in_a_lambda, in_a_comprehension, in_a_class_body,
            method_of_an_unhashable_receiver]
PLUGINS: dict[str, Callable[[], splice.Plugin]] = {
    "identity": IdentityPlugin, "hooked": HookedIdentityPlugin, "typed": Typed}


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_unhashable_callable_objects(program: Callable[[], object], plugin: str) -> None:
    with pytest.raises(TypeError):
        hash(Callable_(0))
    instance = PLUGINS[plugin]()
    assert instance.run(program) == program()
    assert instance.run(program) == program()

"""``splice.compiler.proven``: which values no rebinding can change (literals, parameters the
instance's entry checks, locals holding only such values, builtin arithmetic on them), so
that use-site checks can skip them; and the checks that remain."""

from __future__ import annotations

import math
from typing import Any

import splice
from splice.compiler.proven import proven_classes
from splice.infer.lattice import Exact
from splice.ir import lower
from splice.plugins import FastMath

SCALE = 2.0


def arithmetic(x, n):  # type: ignore[no-untyped-def]
    dt = 0.01
    step = -0.1 * dt
    y = x * 2.0 + n
    z = y
    for _ in range(n):
        z = z + step
    return z, step


def rebound(x, items):  # type: ignore[no-untyped-def]
    a = x + 1.0
    b = x * SCALE  # a global: any class
    c = 1.0
    c = len(items)  # a call: any class
    d = 1.0
    [d := v for v in items]  # noqa: B018 (bound by a comprehension's :=)
    e = 1.0

    def inner():  # type: ignore[no-untyped-def]
        nonlocal e
        e = "s"
    inner()
    return a, b, c, d, e


def proven_locals(fn: Any, *argtypes: Any) -> dict[str, Any]:
    found = proven_classes(lower(fn), tuple(Exact(t) for t in argtypes))
    return {k: (v.cls, v.determined) for k, v in found.items() if isinstance(k, str)}


def test_literals_parameters_and_arithmetic_are_proven() -> None:
    found = proven_locals(arithmetic, float, int)
    assert found["dt"] == (float, True) and found["step"] == (float, True)
    assert found["x"] == (float, False) and found["n"] == (int, False)
    assert found["y"] == (float, False) and found["z"] == (float, False)


def test_what_a_rebinding_or_a_call_can_change_is_not_proven() -> None:
    found = proven_locals(rebound, float, list)
    assert found.get("a") == (float, False)
    for name in ("b", "c", "d", "e"):
        assert name not in found, name


def test_parameters_of_unchecked_or_user_classes_are_not_proven() -> None:
    class Box:
        pass
    assert "x" not in proven_locals(arithmetic)  # no argument types: any class
    assert "x" not in proven_classes(lower(arithmetic), (Exact(Box), Exact(int)))


def marked(x):  # type: ignore[no-untyped-def]
    return ("fast", x)


def twice_sin(x):  # type: ignore[no-untyped-def]
    return math.sin(x * 2.0), math.sin(x * SCALE)


def test_a_proven_argument_is_not_checked_an_unproven_one_is() -> None:
    ci = splice.compile(FastMath({math.sin: marked}), twice_sin, float)
    source = ci.routed_source
    assert source.count("is @sin") == 2  # the callee is always checked
    assert source.count("is @float") == 1  # x * SCALE: SCALE is a global
    assert splice.invoke(ci, 1.5) == (("fast", 3.0), ("fast", 3.0))


def displays(n, fmt):  # type: ignore[no-untyped-def]
    out = []
    seen = {}
    pair = (n, n)
    squares = [i * i for i in range(n)]
    text = f"{fmt}"  # __format__ may return a subclass of str
    maybe = []
    if n:
        maybe = fmt
    return out, seen, pair, squares, text, maybe


def test_displays_and_comprehensions_are_of_their_exact_class() -> None:
    found = proven_locals(displays)
    assert found["out"] == (list, False) and found["seen"] == (dict, False)
    assert found["pair"] == (tuple, False) and found["squares"] == (list, False)
    assert "text" not in found and "maybe" not in found

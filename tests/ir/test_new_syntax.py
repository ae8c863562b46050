"""Syntax added by 3.12 (PEP 695 type parameters, PEP 701 f-strings), differentially: the
round trip and an identity plugin give what the source gives natively, or the function is
refused with a reason and runs natively under a plugin (never a wrong answer).

The programs are written to files at run time: 3.11 cannot parse them."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

import splice
from splice.errors import UnsupportedError
from tests.modules import load

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12),
                                reason="the syntax is new in 3.12 (3.11 cannot parse it)")


def _module(tmp_path: Path, source: str) -> types.ModuleType:
    return load(tmp_path, "newsyntax", source)


class Identity(splice.Plugin):
    pass


def _described(value: Any) -> Any:
    """Type parameters compare by identity: a fresh ``T`` per definition."""
    if isinstance(value, tuple):
        return tuple(_described(v) for v in value)
    if isinstance(value, dict):
        return {k: _described(v) for k, v in value.items()}
    kind = type(value).__name__
    if kind in ("TypeVar", "ParamSpec", "TypeVarTuple", "TypeAliasType"):
        return (kind, value.__name__)
    return value


GENERIC_AT_TOP = """
    def first[T](xs: list[T]) -> T:
        return xs[0]

    def main(n):
        return first([n, 2]), first.__type_params__, first.__annotations__
"""

F_STRINGS = """
    def main(n):
        names = {"a": n}
        return (f"{names["a"]}", f"{"\\n".join(["x", "y"])}", f"{n!r:>{n}}",
                f"{  # a comment inside a field
                   n + 1}", f"{f"{f"{n}"}"}")
"""

NESTED_ALIAS = """
    def main(n):
        type Pair[T] = tuple[T, int]
        return str(Pair.__value__), Pair.__type_params__
"""

NESTED_GENERIC = """
    def main(n):
        def inner[U](u: U) -> U:
            return u
        class Local[V]:
            pass
        return inner(n), inner.__type_params__, Local.__type_params__, inner.__annotations__
"""


@pytest.mark.parametrize("source", [GENERIC_AT_TOP, F_STRINGS], ids=["generic", "fstrings"])
def test_round_trip_and_identity_plugin(tmp_path: Path, source: str) -> None:
    module = _module(tmp_path, source)
    native = _described(module.main(3))
    assert _described(splice.ir.roundtrip(module.main)(3)) == native
    assert _described(splice.ir.roundtrip(module.main, renest=False)(3)) == native
    assert _described(Identity().run(module.main, 3)) == native


@pytest.mark.parametrize("source", [NESTED_ALIAS, NESTED_GENERIC], ids=["alias", "generic"])
def test_type_parameters_in_a_body_are_refused_not_miscompiled(tmp_path: Path,
                                                               source: str) -> None:
    module = _module(tmp_path, source)
    with pytest.raises(UnsupportedError, match="PEP 695"):
        splice.ir.lower(module.main)
    plugin = Identity()
    assert _described(plugin.run(module.main, 3)) == _described(module.main(3))
    reasons = [r.reason for r in splice.explain(plugin) if r.name.endswith("main")]
    assert reasons and "PEP 695" in reasons[0]


CLASS_ATTRIBUTES = """
    def main(n):
        @staticmethod
        def unused():
            pass

        class Point:
            kind = "point"

            def __init__(self, x, y):
                self.x = x
                self.y = y

            def move(self, dx):
                self.x += dx
                self._moved = True
                return self

        p = Point(n, 2).move(1)
        return (p.x, sorted(getattr(Point, "__static_attributes__", ())),
                getattr(Point, "__firstlineno__", None), Point.__qualname__)
"""

DEFAULTS = """
    def pick[T = int, *Ts = *tuple[int, ...], **P = [str]](x: T) -> T:
        return x

    def main(n):
        params = pick.__type_params__
        return pick(n), [p.__name__ for p in params], [str(p.__default__) for p in params]
"""


@pytest.mark.skipif(sys.version_info < (3, 13), reason="__static_attributes__, "
                    "__firstlineno__ (3.13)")
def test_class_made_in_a_function_keeps_its_313_attributes(tmp_path: Path) -> None:
    """3.13 sets ``__static_attributes__`` (the ``self.x`` its methods store) and
    ``__firstlineno__`` on classes; a class statement splice regenerates gets the same."""
    module = _module(tmp_path, CLASS_ATTRIBUTES)
    native = module.main(3)
    assert native[1] == ["_moved", "x", "y"] and native[2] is not None
    assert splice.ir.roundtrip(module.main)(3) == native
    assert splice.ir.roundtrip(module.main, renest=False)(3) == native
    assert Identity().run(module.main, 3) == native


@pytest.mark.skipif(sys.version_info < (3, 13), reason="type parameter defaults: PEP 696 "
                    "(3.13)")
def test_type_parameter_defaults(tmp_path: Path) -> None:
    module = _module(tmp_path, DEFAULTS)
    native = module.main(3)
    assert native[1] == ["T", "Ts", "P"]
    assert splice.ir.roundtrip(module.main)(3) == native
    assert Identity().run(module.main, 3) == native

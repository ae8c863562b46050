"""Syntax added by 3.12 and 3.13 (PEP 695 type parameters and ``type`` statements, at module
level and nested in functions and classes; PEP 701 f-strings; PEP 696 defaults),
differentially: the round trip and plugins give what the source gives natively.

The programs are written to files at run time: 3.11 cannot parse them."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

import splice
from splice.tools.cpython_tests import CONTEXT_MODES, run_many
from tests.modules import load

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12),
                                reason="the syntax is new in 3.12 (3.11 cannot parse it)")


def _module(tmp_path: Path, source: str) -> types.ModuleType:
    return load(tmp_path, "newsyntax", source)


class Identity(splice.Plugin):
    pass


class Typed(splice.Plugin):
    """Typed stages: inference runs over every function before it is compiled."""

    def typed(self, ir: Any) -> Any:
        return ir


class Hooked(splice.Plugin):
    """Per-call hooks: every call runs through the hooked path."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def prehook(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        self.seen.append(getattr(fn, "__qualname__", "?"))


def _described(value: Any) -> Any:
    """Type parameters compare by identity: a fresh ``T`` per definition."""
    if isinstance(value, tuple):
        return tuple(_described(v) for v in value)
    if isinstance(value, dict):
        return {k: _described(v) for k, v in value.items()}
    kind = type(value).__name__
    if kind in ("TypeVar", "ParamSpec", "TypeVarTuple", "TypeAliasType"):
        return (kind, value.__name__)
    if type(value).__module__ == "typing":  # ``Unpack[Ts]``, ``Base[V]``: by their parts
        return repr(value)
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
        type Later = list[Defined]  # lazy: names a local bound after the statement
        Defined = n
        return (str(Pair.__value__), Pair.__type_params__, str(Later.__value__),
                type(Later).__name__, Later.__name__)
"""

NESTED_GENERIC = """
    def main(n):
        def inner[U](u: U) -> U:
            return u
        class Local[V]:
            pass
        return inner(n), inner.__type_params__, Local.__type_params__, inner.__annotations__
"""

# every place a type parameter can be named from inside a function body, each evaluated in
# the parameters' scope (bounds and alias values lazily), in a method and in a class body
NESTED_SCOPES = """
    class Base[X]:
        pass

    def helper(x):
        return x * 2

    def main(n):
        marker = "m"

        def inner[U: (int, str), *Us, **Up](u: U, k: "U" = n, *a: *Us) -> U:
            return helper(u), U.__name__, U.__constraints__, Us.__name__, Up.__name__

        class Local[V: int](Base[V], metaclass=type):
            tag = V
            type Inside = dict[V, marker]

            def get[W](self, w: W) -> tuple[V, W]:
                return V.__name__, W.__name__, helper(w)

        async def agen[A](a: A) -> A:
            return a

        coroutine = agen(n)
        try:
            coroutine.send(None)
        except StopIteration as stop:
            awaited = stop.value
        return (inner(n), inner.__type_params__, inner.__annotations__, Local.__type_params__,
                Local.__orig_bases__, Local().get(n), Local.get.__type_params__, Local.tag,
                Local.__type_params__[0].__bound__, str(Local.Inside.__value__),
                Local.__mro__[1:], awaited, agen.__type_params__)
"""

# what each part evaluates, and when: decorators and defaults before the type parameters'
# scope, annotations and bases in it, bounds and alias values only when read
EVALUATION_ORDER = """
    events = []

    def log(tag, value=None):
        events.append(tag)
        return value

    def main(n):
        @log("decorator", lambda f: f)
        def inner[T: log("bound", int)](a: log("annotation", T) = log("default", n)
                                         ) -> log("return", T):
            return a

        @log("class decorator", lambda c: c)
        class Local[V](log("base", object).__class__, **log("keywords", {})):
            pass

        type Alias[S: log("alias bound")] = log("alias value", S)
        events.append("defined")
        inner.__type_params__[0].__bound__
        Alias.__value__
        Alias.__type_params__[0].__bound__
        made = list(events)
        events.clear()
        return made, inner(n)
"""


@pytest.mark.parametrize("source", [NESTED_ALIAS, NESTED_GENERIC, NESTED_SCOPES,
                                    EVALUATION_ORDER],
                         ids=["alias", "generic", "scopes", "order"])
def test_type_parameters_in_a_body(tmp_path: Path, source: str) -> None:
    """A generic ``def``/``class`` or a ``type`` statement inside a function or class body
    is regenerated with its type parameters, so CPython makes the same annotation scopes:
    the same values, evaluated in the same order, by the round trip and under plugins."""
    module = _module(tmp_path, source)
    native = _described(module.main(3))
    assert _described(splice.ir.roundtrip(module.main)(3)) == native
    assert _described(splice.ir.roundtrip(module.main, renest=False)(3)) == native
    assert _described(Identity().run(module.main, 3)) == native
    assert _described(Hooked().run(module.main, 3)) == native
    typed = Typed()
    assert _described(typed.run(module.main, 3)) == native
    assert [r.entered for r in splice.explain(typed) if r.name.endswith(".main")] == [True]


def test_calls_in_a_generic_body_stay_under_the_plugin(tmp_path: Path) -> None:
    """The bodies of nested generic functions and methods are entered under the plugin
    like any other callee (what runs in the type parameters' own scopes does not: a known
    limit, docs/versions.md)."""
    module = _module(tmp_path, NESTED_SCOPES)
    plugin = Hooked()
    plugin.run(module.main, 3)
    assert {"main.<locals>.inner", "main.<locals>.Local.get", "helper",
            "main.<locals>.agen"} <= set(plugin.seen)
    assert plugin.seen.count("helper") == 2


def test_type_parameters_print_as_written(tmp_path: Path) -> None:
    listing = str(splice.ir.lower(_module(tmp_path, NESTED_SCOPES).main))
    assert "def inner[U: (int, str), *Us, **Up](n)" in listing
    assert "class Local[V: int](Base[V], metaclass=type)" in listing
    assert "type Inside = lazy dict[V, marker]" in listing


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

        class Local[K = str]:
            type Alias[A = bytes] = list[A]

        return (pick(n), [p.__name__ for p in params], [str(p.__default__) for p in params],
                str(Local.__type_params__[0].__default__),
                str(Local.Alias.__type_params__[0].__default__))
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


def test_cpython_own_tests_of_type_parameters() -> None:
    """CPython's tests of PEP 695 (generic functions, classes and ``type`` statements
    defined inside the test methods) round-tripped and with every test under plugins: the
    same outcomes, and the test bodies ran transformed."""
    comparisons = run_many(["test_type_params", "test_type_aliases"], jobs=2, timeout=240.0,
                           modes=("rebuilt", *CONTEXT_MODES))
    assert len(comparisons) == 2 * (1 + len(CONTEXT_MODES))
    for c in comparisons:
        assert c.native.status == "ran" and c.native.tests_run > 20, c.native.detail
        assert c.identical, (c.test, c.mode, c.differences())
        if c.mode in CONTEXT_MODES:
            assert c.other.explain["entered"].get("tests", 0) > 20, c.other.explain


GENERIC_CLASS_HEADER = """
    def make_base(arg):
        class Base:
            __arg__ = arg
        return Base

    class Foo[__T](make_base(lambda: __T)):
        pass

    def main(n):
        return Foo.__bases__[0].__arg__().__name__, n
"""


def test_functions_in_a_generic_class_header_run_natively(tmp_path: Path) -> None:
    """A lambda in a generic class's bases reads the type parameter by its mangled name
    (``_Foo__T``, mangled by rules that differ between 3.12 and 3.13): it is refused with
    the reason, and runs natively under a plugin, never reading the wrong name."""
    module = _module(tmp_path, GENERIC_CLASS_HEADER)
    lam = module.Foo.__bases__[0].__arg__
    with pytest.raises(splice.UnsupportedError, match="generic class"):
        splice.ir.lower(lam)
    plugin = Identity()
    assert plugin.run(module.main, 3) == module.main(3) == ("__T", 3)
    reasons = [r.reason for r in splice.explain(plugin) if r.name.endswith("<lambda>")]
    assert reasons and "generic class" in reasons[0]

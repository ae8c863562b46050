"""Latest binding (issue 3, "What must be shown" 3): every way a definition can change is seen
by the next call under a plugin, including a change made while the plugin runs the caller.
Each case runs under a plugin without hooks and under one with a prehook (different call
paths), and is compared with the same steps run natively."""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest

import splice

THIS = sys.modules[__name__]


class Plain(splice.Plugin):
    """No hooks: the cheapest call path."""


class Seeing(splice.Plugin):
    """Records the Python functions it is called with, by name."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if type(fn) is types.FunctionType:
            self.names.append(fn.__name__)


@pytest.fixture(params=["plain", "hooked"])
def plugin(request: pytest.FixtureRequest) -> splice.Plugin:
    return Plain() if request.param == "plain" else Seeing()


# --------------------------------------------------------------------------- subjects

def helper(x):
    return x + 1


def other(x):
    return x + 100


def caller(x):
    return helper(x) * 10


def with_defaults(x, y=1, *, z=2):
    return (x, y, z)


def call_with_defaults(x):
    return with_defaults(x)


class Shape:
    def area(self):
        return 1


def call_area():
    return Shape().area()


def _new_area(self):
    return 2


@pytest.fixture(autouse=True)
def restore() -> Iterator[None]:
    """Put every subject back as it was (each test changes some of them)."""
    saved = {name: getattr(THIS, name) for name in ("helper", "other", "with_defaults")}
    codes = {name: (fn.__code__, fn.__defaults__, fn.__kwdefaults__ and
                    dict(fn.__kwdefaults__)) for name, fn in saved.items()}
    area = Shape.__dict__["area"]
    yield
    for name, fn in saved.items():
        setattr(THIS, name, fn)
        code, defaults, kwdefaults = codes[name]
        fn.__code__, fn.__defaults__, fn.__kwdefaults__ = code, defaults, kwdefaults
    Shape.area = area


# ------------------------------------------------------------------ changes between runs

def test_global_rebinding(plugin: splice.Plugin) -> None:
    assert plugin.run(caller, 1) == caller(1) == 20
    THIS.helper = other
    assert plugin.run(caller, 1) == caller(1) == 1010
    del THIS.helper
    with pytest.raises(NameError, match="'helper' is not defined"):
        plugin.run(caller, 1)


def test_code_replaced(plugin: splice.Plugin) -> None:
    assert plugin.run(caller, 1) == 20
    before = splice.world()
    helper.__code__ = other.__code__
    assert splice.world() > before  # splice relied on helper: the world moved
    assert plugin.run(caller, 1) == caller(1) == 1010
    helper.__code__ = (lambda x: -x).__code__
    assert plugin.run(caller, 1) == caller(1) == -10


def test_code_replaced_on_caller(plugin: splice.Plugin) -> None:
    """The entry point itself is redefined (jurigged/autoreload patch the function that the
    user then calls again)."""
    assert plugin.run(caller, 2) == 30
    caller_code = caller.__code__
    try:
        caller.__code__ = (lambda x: helper(x) * 1000).__code__
        assert plugin.run(caller, 2) == caller(2) == 3000
    finally:
        caller.__code__ = caller_code


def test_defaults_replaced(plugin: splice.Plugin) -> None:
    assert plugin.run(call_with_defaults, 0) == (0, 1, 2)
    with_defaults.__defaults__ = (10,)
    assert plugin.run(call_with_defaults, 0) == call_with_defaults(0) == (0, 10, 2)


def test_kwdefaults_replaced_and_mutated(plugin: splice.Plugin) -> None:
    assert plugin.run(call_with_defaults, 0) == (0, 1, 2)
    with_defaults.__kwdefaults__ = {"z": 20}
    assert plugin.run(call_with_defaults, 0) == call_with_defaults(0) == (0, 1, 20)
    assert with_defaults.__kwdefaults__ is not None
    with_defaults.__kwdefaults__["z"] = 200  # in place: no event splice could observe
    assert plugin.run(call_with_defaults, 0) == call_with_defaults(0) == (0, 1, 200)


def test_method_replaced_on_class(plugin: splice.Plugin) -> None:
    assert plugin.run(call_area) == 1

    def new_area(self):
        return 2
    Shape.area = new_area
    assert plugin.run(call_area) == call_area() == 2
    Shape.area.__code__ = (lambda self: 3).__code__
    assert plugin.run(call_area) == call_area() == 3


def test_mock_patch(plugin: splice.Plugin) -> None:
    assert plugin.run(caller, 1) == 20
    with mock.patch(f"{__name__}.helper", return_value=7) as patched:
        assert plugin.run(caller, 1) == 70
        patched.assert_called_once_with(1)
    assert plugin.run(caller, 1) == 20
    with mock.patch.object(Shape, "area", return_value=5):
        assert plugin.run(call_area) == 5
    assert plugin.run(call_area) == 1


def test_mock_patch_with_side_effect_function(plugin: splice.Plugin) -> None:
    with mock.patch.object(THIS, "helper", side_effect=other):
        assert plugin.run(caller, 1) == 1010
    if isinstance(plugin, Seeing):
        assert "other" in plugin.names  # the side effect ran under the plugin


def test_two_plugins_both_see_the_change() -> None:
    a, b = Plain(), Seeing()
    assert a.run(caller, 1) == b.run(caller, 1) == 20
    helper.__code__ = other.__code__
    assert a.run(caller, 1) == b.run(caller, 1) == 1010


class Made:
    def __init__(self):
        self.v = 1


class Adder:
    def __call__(self, x):
        return x + 1


class Tools:
    @staticmethod
    def static():
        return 1

    @classmethod
    def klass(cls):
        return 1


class Built:
    def __new__(cls):
        obj = super().__new__(cls)
        obj.v = 1
        return obj


def base(x):
    return x


_adder = Adder()
_partial = functools.partial(base, 1)


def uses_everything():
    return [Made().v, _adder(1), Tools.static(), Tools.klass(), Tools().static(), Built().v,
            _partial(), sorted([2, 1, 3], key=_adder)]


def _replace_everything() -> None:
    Made.__init__ = lambda self: setattr(self, "v", 2)
    Adder.__call__ = lambda self, x: -x
    Tools.static = staticmethod(lambda: 2)
    Tools.klass = classmethod(lambda cls: 2)
    Built.__new__ = lambda cls: types.SimpleNamespace(v=2)
    base.__code__ = (lambda x: x * 2).__code__


def test_other_definitions_replaced(plugin: splice.Plugin) -> None:
    """__init__, __call__, staticmethod, classmethod, __new__ replaced on their classes, and
    the function behind a functools.partial given new code."""
    saved = [dict(vars(k)) for k in (Made, Adder, Tools, Built)]
    code = base.__code__
    try:
        assert plugin.run(uses_everything) == uses_everything() == [
            1, 2, 1, 1, 1, 1, 1, [1, 2, 3]]
        _replace_everything()
        assert plugin.run(uses_everything) == uses_everything() == [
            2, -1, 2, 2, 2, 2, 2, [3, 2, 1]]
        Made.__init__.__code__ = (lambda self: setattr(self, "v", 3)).__code__
        assert plugin.run(uses_everything)[0] == uses_everything()[0] == 3
    finally:
        for klass, attrs in zip((Made, Adder, Tools, Built), saved, strict=True):
            for name in ("__init__", "__call__", "static", "klass", "__new__"):
                if name in attrs:
                    setattr(klass, name, attrs[name])
        base.__code__ = code


# ---------------------------------------------------------- changes while the caller runs

def rebinds_mid_run():
    first = helper(1)
    globals()["helper"] = other
    return first, helper(1)


def swaps_code_mid_run():
    first = helper(1)
    helper.__code__ = other.__code__
    return first, helper(1)


def swaps_defaults_mid_run():
    first = with_defaults(0)
    with_defaults.__defaults__ = (5,)
    with_defaults.__kwdefaults__["z"] = 50
    second = with_defaults(0)
    with_defaults.__kwdefaults__ = {"z": 500}
    return first, second, with_defaults(0)


def replaces_method_mid_run():
    shape = Shape()
    first = shape.area()
    Shape.area = _new_area
    return first, shape.area(), Shape().area()


def patches_mid_run():
    with mock.patch.object(THIS, "helper", side_effect=other):
        patched = caller(1)
    return patched, caller(1)


def countdown(n, log):
    """Replaces its own code when n reaches 2; the recursive call below runs the new code."""
    log.append(n)
    if n == 2:
        countdown.__code__ = _countdown_v2.__code__
    return countdown(n - 1, log) if n else "v1"


def _countdown_v2(n, log):
    log.append(-n)
    return "v2"


CHANGES_MID_RUN: dict[str, tuple[Callable[[], Any], Any]] = {
    "global": (rebinds_mid_run, (2, 101)),
    "code": (swaps_code_mid_run, (2, 101)),
    "defaults": (swaps_defaults_mid_run, ((0, 1, 2), (0, 5, 50), (0, 5, 500))),
    "method": (replaces_method_mid_run, (1, 2, 2)),
    "mock.patch": (patches_mid_run, (1010, 20)),
}


@pytest.mark.parametrize("name", list(CHANGES_MID_RUN))
def test_change_while_running_the_caller(plugin: splice.Plugin, name: str) -> None:
    driver, expected = CHANGES_MID_RUN[name]
    assert driver() == expected  # natively
    # undo, warm the plugin's entries up with the old definitions, then run under it
    _undo()
    assert plugin.run(caller, 1) == 20 and plugin.run(call_with_defaults, 0) == (0, 1, 2)
    assert plugin.run(call_area) == 1
    assert plugin.run(driver) == expected


def _undo() -> None:
    THIS.helper = _ORIGINAL_HELPER
    helper.__code__ = _HELPER_CODE
    with_defaults.__defaults__ = (1,)
    with_defaults.__kwdefaults__ = {"z": 2}
    Shape.area = _AREA


_ORIGINAL_HELPER = helper
_HELPER_CODE = helper.__code__
_AREA = Shape.__dict__["area"]


def test_function_redefines_itself_while_recursing(plugin: splice.Plugin) -> None:
    code = countdown.__code__
    try:
        native_log: list[int] = []
        native = countdown(4, native_log)
        countdown.__code__ = code
        log: list[int] = []
        assert plugin.run(countdown, 4, log) == native == "v2"
        assert log == native_log == [4, 3, 2, -1]
    finally:
        countdown.__code__ = code


# ------------------------------------------------------------------------ the world

def test_world_moves_only_for_definitions_splice_relied_on(plugin: splice.Plugin) -> None:
    def never_reached(x):
        return x

    before = splice.world()
    never_reached.__code__ = (lambda x: x * 2).__code__  # splice never relied on it
    assert splice.world() == before
    plugin.run(caller, 1)
    assert splice.world() == before
    helper.__defaults__ = (5,)  # helper had no defaults: now its x has one
    assert splice.world() > before
    assert plugin.run(helper) == helper() == 6


@pytest.mark.parametrize("how", ["defaults=None", "del defaults", "kwdefaults=None"])
def test_defaults_removed(plugin: splice.Plugin, how: str) -> None:
    assert plugin.run(call_with_defaults, 0) == (0, 1, 2)
    if how == "defaults=None":
        with_defaults.__defaults__ = None
    elif how == "del defaults":
        del with_defaults.__defaults__
    else:
        with_defaults.__kwdefaults__ = None
    with pytest.raises(TypeError, match="missing 1 required"):
        call_with_defaults(0)
    with pytest.raises(TypeError, match="missing 1 required"):
        plugin.run(call_with_defaults, 0)


def test_invalidate_moves_the_world_and_drops_entries() -> None:
    decisions: list[str] = []

    class Deciding(splice.Plugin):
        enter = True

        def recurse(self, fn: Any) -> bool:
            decisions.append(fn.__name__)
            return self.enter

    plugin = Deciding()
    assert plugin.run(caller, 1) == 20
    assert plugin.run(caller, 1) == 20
    assert decisions.count("helper") == 1  # the decision is cached in the table
    assert helper in plugin.context.table
    before = splice.world()
    assert splice.invalidate(helper) == splice.world() == before + 1
    assert helper not in plugin.context.table
    plugin.enter = False
    assert plugin.run(caller, 1) == 20
    assert decisions.count("helper") == 2  # asked again after the invalidation
    assert any(r.name.endswith("helper") and not r.entered
               for r in splice.explain(plugin, helper))
    # invalidating something splice never saw only moves the world
    assert splice.invalidate(lambda: None) == before + 2

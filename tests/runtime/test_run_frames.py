"""``Plugin.run`` adds no frame to the program's stack (``RunCall``, splice/runtime/_recurse.c):
``plugin.run(fn, *args)`` leaves ``fn`` the recursion depth a direct call ``fn(*args)``
leaves it, and a traceback out of the run shows the program's frames alone. The Python
method (used when the extension is not built) is checked to behave the same otherwise."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

import splice
from splice.runtime import native

BUILT_METHOD = splice.Plugin.__dict__["run"]
PYTHON_METHOD = getattr(BUILT_METHOD, "__wrapped__", BUILT_METHOD)
SPLICE_FILES = os.path.dirname(splice.__file__)


@pytest.fixture(params=["c", "python"])
def implementation(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with ``Plugin.run`` as built, then with the Python method."""
    if request.param == "c":
        if native.RUN_CALL is None:
            pytest.fail("splice.runtime._recurse is not built (pip install -e . builds it)")
        yield request.param
        return
    splice.Plugin.run = PYTHON_METHOD  # type: ignore[method-assign]
    try:
        yield request.param
    finally:
        splice.Plugin.run = BUILT_METHOD  # type: ignore[method-assign]


class Identity(splice.Plugin):
    pass


class Counting(splice.Plugin):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def prehook(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        self.calls.append(getattr(fn, "__name__", "?"))


def probe(depth: int = 0) -> int:
    try:
        return probe(depth + 1)
    except RecursionError:
        return depth


class Deep:
    def __init__(self) -> None:
        self.depth = probe()

    def __call__(self) -> int:
        return probe()


def through_init() -> int:
    return Deep().depth


def through_call() -> int:
    return Deep()()


@pytest.mark.parametrize("plugin", [Identity, Counting])
def test_a_run_leaves_the_native_recursion_depth(implementation: str,
                                                plugin: type[splice.Plugin]) -> None:
    native_depth = probe()
    under = plugin().run(probe)
    if implementation == "c":
        assert under == native_depth
    else:  # the Python method's two frames (Plugin.run, Context.run)
        assert under == native_depth - 2


@pytest.mark.parametrize("fn", [probe, through_init, through_call])
@pytest.mark.parametrize("plugin", [Identity, Counting])
def test_a_run_costs_what_calling_the_entry_costs(implementation: str, fn: Any,
                                                  plugin: type[splice.Plugin]) -> None:
    # what the program itself spends under a context (an instantiation, a callable
    # object's call) is apart: the run adds nothing to a call of the entry it looks up
    instance = plugin()
    entry = instance.context.table[fn]
    direct = entry()
    under = instance.run(fn)
    assert under == (direct if implementation == "c" else direct - 2)


def fails(x: int) -> int:
    return helper(x)


def helper(x: int) -> int:
    raise ValueError(x)


def _frames_after_the_test(exc: BaseException) -> list[tuple[str, str]]:
    frames = traceback.extract_tb(exc.__traceback__)
    return [(f.filename, f.name) for f in frames[1:]]  # the first is this test's own


@pytest.mark.parametrize("plugin", [Identity, Counting])
def test_a_traceback_out_of_a_run_shows_the_program_alone(implementation: str,
                                                          plugin: type[splice.Plugin]) -> None:
    with pytest.raises(ValueError) as natively:
        fails(1)
    with pytest.raises(ValueError) as under:
        plugin().run(fails, 1)
    seen = _frames_after_the_test(under.value)
    if implementation == "c":
        assert seen == _frames_after_the_test(natively.value)
    else:
        assert [name for file, name in seen if file.startswith(SPLICE_FILES)] == ["run", "run"]


def test_bad_calls_say_what_is_missing(implementation: str) -> None:
    plugin = Identity()
    with pytest.raises(TypeError) as missing:
        plugin.run()  # type: ignore[call-arg]
    assert "missing 1 required positional argument: 'fn'" in str(missing.value)
    with pytest.raises(TypeError, match="not callable"):
        plugin.run(42)


def test_run_keeps_arguments_and_keywords(implementation: str) -> None:
    def shape(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
        return args, kwargs

    assert Identity().run(shape, 1, 2, fn=3, self=4) == ((1, 2), {"fn": 3, "self": 4})


OTHER = Counting()


def runs_under_another(x: int) -> int:
    held = OTHER.run
    return OTHER.run(probe_once, x) + held(probe_once, x)


def probe_once(x: int) -> int:
    return x + 1


def test_a_run_inside_a_run_composes(implementation: str) -> None:
    # ``other.run(f)`` at a method site and through a name: ``f`` runs under both plugins
    OTHER.calls.clear()
    outer = Counting()
    assert outer.run(runs_under_another, 1) == 4
    assert OTHER.calls == ["probe_once", "probe_once"]
    assert outer.calls.count("probe_once") == 2
    assert "run" not in outer.calls  # the nested run is no call the outer plugin sees


def test_the_c_method_reads_as_the_python_one() -> None:
    if native.RUN_CALL is None:
        pytest.fail("splice.runtime._recurse is not built (pip install -e . builds it)")
    assert BUILT_METHOD.__doc__ == PYTHON_METHOD.__doc__
    assert BUILT_METHOD.__wrapped__ is PYTHON_METHOD
    plugin = Identity()
    bound = plugin.run
    assert bound.__func__ is BUILT_METHOD
    assert bound.__self__ is plugin


class Plain:
    """No Python ``__new__`` or ``__init__``: its entry calls the class itself."""


def instantiate_at(depth: int) -> Any:
    if depth == 0:
        return Plain()
    return instantiate_at(depth - 1)


def _deepest(run: Any) -> int:
    """The largest depth at which ``instantiate_at`` does not reach the recursion limit."""
    depth = 0
    while True:
        try:
            run(instantiate_at, depth)
        except RecursionError:
            return depth - 1
        depth += 1


def test_an_instantiation_at_the_recursion_limit_spends_what_it_spends_natively() -> None:
    # the class's own call counts its unit (type.__call__'s) itself: the entry adds none
    limit = sys.getrecursionlimit()
    plugin = Identity()
    sys.setrecursionlimit(120)
    try:
        natively = _deepest(lambda fn, depth: fn(depth))
        under = _deepest(lambda fn, depth: plugin.run(fn, depth))
    finally:
        sys.setrecursionlimit(limit)
    assert under == natively

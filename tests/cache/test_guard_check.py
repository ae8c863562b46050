"""The C form of run-time guards (splice/cache/_guards.c) against their Python form: in
every state a binding goes through, the C check says True only where every guard's
``holds()`` does (it may say False where Python would say True, never the reverse), and
the specializing entry runs an earlier choice without Python code only while it holds."""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

import splice
from splice.cache import guards
from splice.cache.guards import (
    AttributeGuard,
    AttributeShapeGuard,
    CellGuard,
    FunctionGuard,
    GlobalGuard,
    GlobalShapeGuard,
    Guard,
    guard_check,
)
from splice.runtime import native
from splice.runtime.specializing import SpecializingEntry

pytestmark = pytest.mark.skipif(guards.GuardCheck is None, reason="the C guards are not built")


#: one check kept per guard across a test's changes: once its checks held, it answers from
#: the versions of the dicts and classes it read (its stamps) until one of them changes
_KEPT: dict[int, tuple[Guard, Any]] = {}


def agree(guard: Guard) -> bool:
    """The C check of ``guard`` alone, asserted to agree with its Python form, both made
    anew and kept since the guard's first check (stamped)."""
    holds = guard.holds()
    assert guard_check([True], [guard])() is holds, guard
    kept = _KEPT.get(id(guard))
    if kept is None or kept[0] is not guard:
        kept = _KEPT[id(guard)] = (guard, guard_check([True], [guard]))
    assert kept[1]() is holds, ("kept", guard)
    assert kept[1]() is holds, ("kept, asked again", guard)
    return holds


@pytest.fixture(autouse=True)
def _forget_kept_checks() -> Any:
    yield
    _KEPT.clear()


def make_namespace() -> dict[str, Any]:
    return {"__builtins__": __builtins__, "__name__": "fake", "x": 1}


def test_global_guard_follows_rebinding_deletion_and_builtins() -> None:
    namespace = make_namespace()
    guard = GlobalGuard.now(namespace, "x")
    assert agree(guard)
    namespace["x"] = 2
    assert not agree(guard)
    namespace["x"] = guard.expected
    assert agree(guard)
    del namespace["x"]
    assert not agree(guard)
    # a builtin, then a global shadowing it, then a module as __builtins__
    builtin = GlobalGuard.now(namespace, "len")
    assert builtin.expected is len and agree(builtin)
    namespace["len"] = lambda s: 0
    assert not agree(builtin)
    del namespace["len"]
    namespace["__builtins__"] = types.ModuleType("fake_builtins")
    assert not agree(builtin)
    missing = GlobalGuard.now(namespace, "len")
    assert missing.expected is guards.MISSING and agree(missing)


def test_global_shape_guard_follows_classes_and_tuple_shapes() -> None:
    namespace = make_namespace()
    guard = GlobalShapeGuard.now(namespace, "x")
    assert agree(guard)
    namespace["x"] = 5           # another int: the same shape
    assert agree(guard)
    namespace["x"] = 5.0
    assert not agree(guard)
    namespace["x"] = (1, 2)      # a short tuple has a tuple of shapes
    assert not agree(guard)
    pair = GlobalShapeGuard.now(namespace, "x")
    assert agree(pair)           # compared in Python: the C form calls holds()
    namespace["x"] = (3, 4)
    assert agree(pair)
    namespace["x"] = (3, "4")
    assert not agree(pair)
    namespace["x"] = tuple(range(20))  # a long tuple's shape is its class
    long = GlobalShapeGuard.now(namespace, "x")
    assert agree(long)
    namespace["x"] = (1,)
    check = guard_check([True], [long])
    assert not long.holds() and not check()


def test_attribute_guard_follows_the_mro() -> None:
    class Base:
        def m(self) -> int:
            return 1

    class Derived(Base):
        pass

    guard = AttributeGuard.now(Derived, "m")
    assert guard.expected is Base.__dict__["m"] and agree(guard)
    Derived.m = lambda self: 2  # type: ignore[method-assign]
    assert not agree(guard)
    del Derived.m
    assert agree(guard)
    Base.m = lambda self: 3  # type: ignore[method-assign]
    assert not agree(guard)

    class Other:
        def m(self) -> int:
            return 4

    Base.m = guard.expected  # type: ignore[method-assign]
    assert agree(guard)
    Derived.__bases__ = (Other,)
    assert not agree(guard)
    absent = AttributeGuard.now(Derived, "nothing")
    assert absent.expected is guards.MISSING and agree(absent)
    Other.nothing = 1  # type: ignore[attr-defined]
    assert not agree(absent)


def test_attribute_shape_guard_follows_classes_along_the_mro() -> None:
    class Strength:
        pass

    class Base:
        level = Strength()

    class Derived(Base):
        pass

    guard = AttributeShapeGuard.now(Derived, "level")
    assert guard.expected is Strength and agree(guard)
    Base.level = Strength()       # another object of the class: the same shape
    assert agree(guard)
    Derived.level = 3             # an override of another class
    assert not agree(guard)
    del Derived.level
    assert agree(guard)
    Base.level = (1, 2)           # a short tuple: a tuple of shapes, never a class
    assert not agree(guard)
    pair = AttributeShapeGuard.now(Derived, "level")
    assert agree(pair)            # compared in Python: the C form calls holds()
    Base.level = (3, 4)
    assert agree(pair)
    del Base.level
    assert not agree(pair)
    absent = AttributeShapeGuard.now(Derived, "level")
    assert absent.expected is guards.MISSING and agree(absent)
    Derived.level = 1
    assert not agree(absent)


def test_attribute_guard_on_a_module() -> None:
    module = types.ModuleType("fake_module")
    module.f = len  # type: ignore[attr-defined]
    guard = AttributeGuard.now(module, "f")
    assert agree(guard)
    module.f = abs  # type: ignore[attr-defined]
    assert not agree(guard)
    del module.f  # type: ignore[attr-defined]
    assert not agree(guard)


def test_cell_and_function_guards() -> None:
    def outer() -> tuple[Callable[[], Any], Callable[[Any], None], Callable[[], None]]:
        value: Any = 1

        def read() -> Any:
            return value

        def write(new: Any) -> None:
            nonlocal value
            value = new

        def clear() -> None:
            nonlocal value
            del value
        return read, write, clear

    read, write, clear = outer()
    assert read.__closure__ is not None
    guard = CellGuard.now(read.__closure__[0], "value")
    assert agree(guard)
    write(2)
    assert not agree(guard)
    write(guard.expected)
    assert agree(guard)
    clear()
    assert not agree(guard)
    function = FunctionGuard.now(read)
    assert agree(function)
    read.__defaults__ = (1,)
    assert not agree(function)


def test_the_alive_flag_and_several_guards() -> None:
    namespace = make_namespace()
    alive = [True]
    check = guard_check(alive, [GlobalGuard.now(namespace, "x"),
                                GlobalGuard.now(namespace, "len")])
    assert check() is True
    alive[0] = False
    assert check() is False
    alive[0] = True
    namespace["len"] = None
    assert check() is False


def test_a_stamped_check_sees_what_its_stamps_do_not_cover() -> None:
    """Once stamped, a check still reads cells and calls every time, still follows the
    builtins a global fell back to, and ignores changes that keep every binding."""
    builtins_dict = {"len": len}
    namespace = {"__builtins__": builtins_dict, "x": 1}

    def outer() -> Any:
        value = 1

        def read() -> int:
            return value
        return read

    read = outer()
    assert read.__closure__ is not None
    cell = read.__closure__[0]

    class Base:
        def m(self) -> int:
            return 1

    class Derived(Base):
        pass

    check = guard_check([True], [GlobalGuard.now(namespace, "x"),
                                 GlobalGuard.now(namespace, "len"),
                                 AttributeGuard.now(Derived, "m")],
                        [(cell, 1)])
    assert check() is True and check() is True
    cell.cell_contents = 2           # no dict or class changed: the cell is read anyway
    assert check() is False
    cell.cell_contents = 1
    assert check() is True
    builtins_dict["len"] = abs       # the builtins dict the global fell back to
    assert check() is False
    builtins_dict["len"] = len
    assert check() is True
    namespace["y"] = 2               # a new version, the same bindings: stamped again
    Base.other = 3                   # likewise for the class
    assert check() is True and check() is True
    Base.m = lambda self: 2          # a base's change reaches the class's version tag
    assert check() is False


# --- the specializing entry's fast path ------------------------------------------------------

class TypedIdentity(splice.Plugin):
    def typed(self, ir: Any) -> Any:
        return ir


def counting(monkeypatch: pytest.MonkeyPatch, method: str,
             record: Callable[..., Any]) -> list[Any]:
    """Wrap ``SpecializingEntry.<method>``: each call appends ``record(entry, *args)`` to
    the list returned (what a test counts to see which calls asked Python)."""
    asked: list[Any] = []
    original = getattr(SpecializingEntry, method)

    def wrapper(self: SpecializingEntry, *args: Any, **kwargs: Any) -> Any:
        asked.append(record(self, *args))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SpecializingEntry, method, wrapper)
    return asked


SCALE = 2


def scaled(x):  # type: ignore[no-untyped-def]
    return x * SCALE


def calls_scaled(n):  # type: ignore[no-untyped-def]
    global SCALE
    out = [scaled(i) for i in range(n)]
    SCALE = 3           # the instance of scaled relied on SCALE: the next call rebuilds
    out.append(scaled(1))
    SCALE = 2
    return out


@pytest.mark.skipif(native.CHOSEN is None, reason="the C hooks are not built")
def test_earlier_choices_run_without_asking_until_a_guard_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = counting(monkeypatch, "_runner_for", lambda entry, classes: classes)
    native_result = calls_scaled(50)
    assert TypedIdentity().run(calls_scaled, 50) == native_result
    # the first call of scaled with an int asks; the 49 after it do not; the call after
    # SCALE was rebound asks again (its instance relied on SCALE)
    assert asked.count((int,)) == 2, asked


def helper(x):  # type: ignore[no-untyped-def]
    return x + 1


def other_helper(x):  # type: ignore[no-untyped-def]
    return x - 1


def scaled_by(x, factor=1):  # type: ignore[no-untyped-def]
    return helper(x) * factor


def calls_with_keywords(n):  # type: ignore[no-untyped-def]
    global helper
    out = [scaled_by(i, factor=2) for i in range(n)]
    kept = helper
    helper = other_helper   # the generic instance relied on the binding of helper
    out.append(scaled_by(1, factor=2))
    helper = kept
    return out


@pytest.mark.skipif(native.CHOSEN is None, reason="the C hooks are not built")
def test_calls_with_keywords_run_the_generic_instance_without_asking(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = counting(monkeypatch, "_generic_runner", lambda entry: entry.__qualname__)
    native_result = calls_with_keywords(50)
    assert TypedIdentity().run(calls_with_keywords, 50) == native_result
    # the first keyword call asks; the 49 after it do not; the one after helper was
    # rebound asks again
    assert asked.count("scaled_by") == 2, asked


#: (class of the argument, id of the code object running) for each call of ``scaled_seen``
SEEN: list[tuple[type, Any]] = []


def scaled_seen(x):  # type: ignore[no-untyped-def]
    SEEN.append((type(x), id(sys._getframe().f_code)))  # (equal code objects compare equal)
    return x * SCALE


def calls_scaled_with_many_classes(n):  # type: ignore[no-untyped-def]
    global SCALE
    values = (3, 1.5, 2j, "ab", (1,))  # one class more than Chosen keeps at hand
    out = [scaled_seen(v) for _ in range(n) for v in values]
    SCALE = 3
    out += [scaled_seen(v) for _ in range(n) for v in values]
    SCALE = 2
    return out


@pytest.mark.skipif(native.CHOSEN is None, reason="the C hooks are not built")
def test_a_polymorphic_call_site_runs_each_class_its_own_choice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls alternating between five argument classes run their earlier choices from C
    (the last few kept at hand, the others found in the entry's dict): each class the code
    instance made for it, never another class's; after a guard failed, a class whose
    instance relied on the rebound global asks once again, not on every call (int's did:
    its instance had ``SCALE``'s value folded in)."""
    asked = counting(monkeypatch, "_runner_for", lambda entry, classes: classes)
    native_result = calls_scaled_with_many_classes(20)
    SEEN.clear()
    assert TypedIdentity().run(calls_scaled_with_many_classes, 20) == native_result
    assert asked.count((int,)) == 2, asked
    for cls in (float, complex, str, tuple):
        assert 1 <= asked.count((cls,)) <= 2, (cls, asked)
    half = len(SEEN) // 2
    for phase in (SEEN[:half], SEEN[half:]):
        # the first call of a class may run its instance through ``choose``: the same code
        codes = {cls: {code for seen, code in phase if seen is cls} for cls, _ in phase}
        assert all(len(found) == 1 for found in codes.values()), codes
        assert len({next(iter(found)) for found in codes.values()}) == len(codes), codes


# --- closures made anew take the choices of the one before -----------------------------------

def double(x):  # type: ignore[no-untyped-def]
    return x * 2


def negate(x):  # type: ignore[no-untyped-def]
    return -x


def make(g):  # type: ignore[no-untyped-def]
    return lambda v: g(v)


def closures_of_other_cells():  # type: ignore[no-untyped-def]
    # each closure's cell holds another function: an instance that relied on the cell
    # (a direct call of double) must not run for a closure over negate
    return [make(g)(3) for g in (double, negate, double, negate, negate, double)]


def closures_in_a_loop(n):  # type: ignore[no-untyped-def]
    total = 0
    for i in range(n):
        f = lambda p: p + i  # noqa: E731, B023 (a closure over the loop's cell)
        total += f(1)
    return total


def test_a_closure_made_anew_runs_what_fits_its_cells() -> None:
    assert TypedIdentity().run(closures_of_other_cells) == closures_of_other_cells()


@pytest.mark.skipif(native.CHOSEN is None, reason="the C hooks are not built")
def test_a_closure_made_anew_adopts_the_choices_before_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = counting(monkeypatch, "choose", lambda entry, *args: entry.__qualname__)
    # a full collection sweeps the table: the closure made after it has no entry before it
    # to adopt and chooses once more (when it comes depends on what earlier tests left)
    gc.disable()
    try:
        assert TypedIdentity().run(closures_in_a_loop, 100) == closures_in_a_loop(100)
    finally:
        gc.enable()
    # the first lambda chooses; the 99 after it run the same instance at once
    assert asked.count("closures_in_a_loop.<locals>.<lambda>") == 1, asked

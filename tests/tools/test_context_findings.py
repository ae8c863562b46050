"""Runtime bugs found by running the corpora under identity plugins (CPython's test modules:
``python -m splice.tools.cpython_tests --mode context,hooked``; generated programs:
tests/fuzz/test_context.py). Each test is the minimal repro of one finding and asserts what
native CPython does. The open ones are strict xfails, so a fix shows up here and the mark must
go (with the matching entries of ``splice.tools.cpython_tests.EXPECTED``, whose ``REASONS``
name these repros); r4, r5, r6, r7, r9, r10, r12, r13 and r14 are fixed and stay as regression
tests (r10: tests/runtime/test_overlay_objects.py; r12: tests/cache/test_headroom.py); r11,
hidden cells in frame locals, became a documented limit in cbf5d0e. The generated-program
findings (r1-r3) are in tests/fuzz/test_context.py.

(No ``from __future__ import annotations`` here: r13 compares the flags compile() gives code
compiled from this module.)"""

import abc
import builtins
import functools
import gc
import pickle
import sys
import traceback
import typing
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import pytest

import splice
from splice.tools.cpython_tests import EXPECTED, REASONS


class Identity(splice.Plugin):
    """Recurses everywhere, changes nothing."""


class Hooked(splice.Plugin):
    """The same, with a no-op hook around every call."""

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pass


def under(plugin_class: type[splice.Plugin], fn: Callable[..., Any], *args: Any) -> Any:
    return plugin_class().run(fn, *args)


def bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(reason=f"{reason}: {REASONS[reason].text}", strict=True)


def test_every_reason_is_used_and_every_bug_has_a_repro() -> None:
    used = {reason for _, _, _, reason in EXPECTED}
    assert used == set(REASONS)
    marked = {mark.kwargs["reason"].split(":")[0]
              for value in globals().values() if callable(value)
              for mark in getattr(value, "pytestmark", []) if mark.name == "xfail"}
    assert marked == {key for key, r in REASONS.items() if r.kind == "bug"}


# ---------------------------------------------------------------- r4: class-body temporaries

class _Meta(abc.ABCMeta):
    seen: list[list[str]] = []

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        mcls.seen.append(sorted(k for k in ns if not k.startswith("__")))
        return super().__new__(mcls, name, bases, ns)


def _abstract_subclass() -> object:
    class C(metaclass=_Meta):
        @property
        @abc.abstractmethod
        def foo(self) -> int:
            return 3

    class D(C):
        @C.foo.getter
        def foo(self) -> int:
            return 1

    return sorted(D.__abstractmethods__), _Meta.seen[-2:]


def _class_body_if(flag: type) -> object:
    class E(metaclass=_Meta):
        if issubclass(flag, int):
            dupe = 3
    return _Meta.seen[-1]


def test_r4_decorator_temporaries_stay_out_of_the_class_namespace() -> None:
    assert under(Identity, _abstract_subclass) == _abstract_subclass()


def test_r4_hooked_if_test_temporaries_stay_out_of_the_class_namespace() -> None:
    assert under(Hooked, _class_body_if, bool) == _class_body_if(bool) == ["dupe"]


# ------------------------------------------------------------- r5: the program's __import__

def _g() -> int:
    return 1


def _call_with_import_hook() -> object:
    old = builtins.__import__
    builtins.__import__ = lambda name, *a, **k: object()
    try:
        return _g()  # first call of _g under the plugin: splice resolves it
    finally:
        builtins.__import__ = old


def test_r5_a_replaced_builtins_import_does_not_break_resolution() -> None:
    assert under(Identity, _call_with_import_hook) == _call_with_import_hook() == 1


# ------------------------------------------------------------------ r6: compiler warnings

def _h1() -> int:
    return 1


def _h2() -> int:
    return 2


def _warn_twice() -> list[str]:
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("default")
        for step in (_h1, _h2):
            warnings.warn("once per location", UserWarning, stacklevel=1)
            step()  # first call: compiled under the plugin
        return [str(w.message) for w in log]


def test_r6_compiling_mid_run_keeps_the_warning_registries() -> None:
    assert under(Identity, _warn_twice) == _warn_twice() == ["once per location"]


# --------------------------------------------------------------- r7: splice frames, no hook

def _typevar_module() -> str:
    return str(typing.TypeVar("T").__module__)


def _deprecated(x: int) -> None:
    warnings.warn("old", DeprecationWarning, stacklevel=2)


def _warn_through_partial() -> str:
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        functools.partial(_deprecated, 1)()
    return log[0].filename


def test_r7_instantiation_adds_no_frame() -> None:
    # fixed: a class's entry is C code calling its __init__ compiled as a constructor
    assert under(Identity, _typevar_module) == _typevar_module() == __name__


def test_r7_partial_call_adds_no_frame() -> None:
    assert under(Identity, _warn_through_partial) == _warn_through_partial() == __file__


# ---------------------------------------------------------------- r8, r14: object lifetimes

class _A:
    pass


def _take(a: object, b: object) -> bool:
    ref = weakref.ref(a)
    del a
    gc.collect()
    return ref() is None


def _argument_freed() -> bool:
    return _take(_A(), b=_A())


def _local_function_freed() -> bool:
    def inner() -> int:
        return 1
    inner()
    ref = weakref.ref(inner)
    del inner
    gc.collect()
    return ref() is None


def test_r8_arguments_are_not_kept_in_hidden_locals() -> None:
    # fixed for calls of global names: they are one expression (splice.runtime.sites)
    assert under(Identity, _argument_freed) is _argument_freed() is True


class _Taker:
    def take(self, a: object, b: object) -> bool:
        ref = weakref.ref(a)
        del a
        gc.collect()
        return ref() is None


def _method_argument_freed() -> bool:
    return _Taker().take(_A(), b=None)


def test_r8_method_call_arguments_are_not_kept_in_hidden_locals() -> None:
    # fixed: a method call's receiver and arguments are on CPython's stack, and the
    # callee's frame takes them over (splice/runtime/_methods.c)
    assert under(Identity, _method_argument_freed) is _method_argument_freed() is True


def test_r14_the_dispatch_table_does_not_keep_callees_alive() -> None:
    # fixed: a full collection sweeps the tables, and the IR built for a callee no longer
    # holds it once compiled
    assert under(Identity, _local_function_freed) is _local_function_freed() is True


# ----------------------------------------------------------- r9: reflected __eq__ on None

class _T:
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _T):
            return NotImplemented
        return True

    __hash__ = object.__hash__


def _compare_with_none() -> tuple[bool, bool]:
    return _T() == None, _T() != None  # noqa: E711


def test_r9_hooked_comparison_with_none() -> None:
    assert under(Hooked, _compare_with_none) == _compare_with_none() == (False, True)


# ------------------------------------------------------------ r10: overlays leaked wrappers

def _pickle_map(fn: Any) -> bool:
    m = map(fn, ["1"])
    return m.__reduce__()[1][0] is fn and len(pickle.dumps(m)) > 0


def test_r10_hooked_map_keeps_the_callable_it_was_given() -> None:
    assert under(Hooked, _pickle_map, int) is _pickle_map(int) is True


# ------------------------------------------------------------- r12: the recursion limit

def _nested(x: int) -> bool:
    with open(__file__) as f:  # noqa: SIM117 - nested: deeper lowering
        with open(__file__) as h:
            return [len(f.read()) + len(h.read(1)) + x for _ in range(1)][0] > 0


def _close_to_the_limit() -> bool:
    depth = len(traceback.extract_stack())
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 25)  # like test.support.infinite_recursion(25)
    try:
        return _nested(1)
    finally:
        sys.setrecursionlimit(old)


def test_r12_a_first_call_near_the_recursion_limit_runs() -> None:
    assert under(Identity, _close_to_the_limit) is _close_to_the_limit() is True


# ------------------------------------------------------------------ r13: compile() flags

def _compiled_flags() -> int:
    return compile("x: int = 1", "<s>", "exec").co_flags


def test_r13_hooked_compile_inherits_no_future_flags_from_splice() -> None:
    assert under(Hooked, _compiled_flags) == _compiled_flags() == 0


# ------------------------------------------------- r15: classes that cannot be hashed


class _UnhashableMeta(type):
    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = None  # type: ignore[assignment]


def _set_attribute_of_unhashable_class() -> int:
    cls = _UnhashableMeta("Dynamic", (), {})
    cls.value = 3  # type: ignore[attr-defined]
    return cls.value  # type: ignore[attr-defined,no-any-return]


def test_r15_attribute_of_a_class_that_cannot_be_hashed() -> None:
    assert under(Hooked, _set_attribute_of_unhashable_class) == \
        _set_attribute_of_unhashable_class() == 3

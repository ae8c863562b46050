"""Calls of the functions splice makes are specialised by CPython as calls of ``def``-made
functions are (``splice.compat.versioned``, splice/_functions.c): on 3.13 a function made by
``types.FunctionType`` has no function version, so without it every call site of a
splice-made function stays the generic ``CALL``."""

from __future__ import annotations

import dis
import gc
import types
from typing import Any

import pytest

import splice
from splice import compat

_NOT_BUILT = pytest.mark.xfail(
    compat.versioned is compat._unversioned and compat.VERSION >= (3, 13), strict=True,
    reason="splice/_functions.c not built: on 3.13 calls of splice's functions stay generic")


def callee(x: int, y: int = 1) -> int:
    return x + y


def caller(fn: Any) -> int:
    total = 0
    for i in range(200):
        total += fn(i)
    return total


def call_opnames(fn: types.FunctionType) -> list[str]:
    """The call instructions of ``fn`` as the interpreter has specialised them so far."""
    return [i.opname for i in dis.get_instructions(fn, adaptive=True)
            if i.opname.startswith("CALL")]


def _warm(fn: types.FunctionType, *args: Any) -> None:
    for _ in range(3):
        fn(*args)


@_NOT_BUILT
def test_a_function_made_from_code_gets_its_calls_specialised() -> None:
    made = compat.versioned(types.FunctionType(callee.__code__, globals(), "made",
                                               callee.__defaults__))
    local_caller = types.FunctionType(caller.__code__, globals(), "local_caller")
    _warm(local_caller, made)
    # (CALL_PY_WITH_DEFAULTS on 3.11/3.12, CALL_PY_GENERAL on 3.13: a default is used)
    assert any(name.startswith("CALL_PY") for name in call_opnames(local_caller)), \
        call_opnames(local_caller)
    assert made(1) == callee(1)


@_NOT_BUILT
def test_calls_of_transformed_functions_are_specialised() -> None:
    # the transformed caller calls the transformed callee's entry: a function splice made
    plugin = splice.Plugin()
    for _ in range(3):
        assert plugin.run(caller, callee) == caller(callee)
    seen = [o for o in gc.get_objects() if type(o) is types.FunctionType and
            o.__code__ is not caller.__code__ and o.__name__ == "caller" and
            o.__code__.co_filename == caller.__code__.co_filename]
    assert seen, "no transformed copy of caller found"
    assert any(any(name.startswith("CALL_PY") for name in call_opnames(fn)) for fn in seen), \
        [call_opnames(fn) for fn in seen]


def test_versioned_returns_the_function_and_refuses_other_objects() -> None:
    made = types.FunctionType(callee.__code__, globals(), "made")
    assert compat.versioned(made) is made
    if compat.versioned is not compat._unversioned:
        with pytest.raises(TypeError, match="takes a function"):
            compat.versioned(len)  # type: ignore[arg-type]

"""Definitions rebound *while* a code instance runs (by a callee it calls): a global, a
class attribute, a method, a module attribute, a callee's code, a closure cell, a replaced
callee held by a local (rebound through the caller's frame, 3.13) or a cell. Guards are
checked when an instance is entered, so every type-dependent rewrite inside it must either
hold for every execution or check what it relies on where it relies on it. Each program
runs natively and under FastMath (whose replacement records any call with a non-float
argument) and under a plugin whose typed hook changes nothing: same outcome, no call of the
replacement with something else than a float.

The programs are in ``midrun_program.py`` (loaded fresh for each run: they change their own
module)."""

from __future__ import annotations

import importlib.util
import itertools
import math
import types
from pathlib import Path
from typing import Any

import pytest

import splice
from splice.plugins import FastMath

HERE = Path(__file__).resolve().parent
_counter = itertools.count()

PROGRAMS = ["global_value", "class_attribute", "method_replaced", "module_function",
            "module_function_deleted", "module_constant", "direct_call_argument",
            "callee_code_swapped", "callee_rebound", "cell_rebound", "local_callee",
            "cell_callee"]

#: calls of the replacement with an argument that is not a float
VIOLATIONS: list[Any] = []


def checked_sin(x):  # type: ignore[no-untyped-def]
    """``math.sin`` for floats, recording any other argument (a rewrite that relied on a
    float argument that was not one)."""
    if type(x) is not float:
        VIOLATIONS.append(x)
    return math.sin(x)


#: arguments of the calls of ``recording_sin``
CALLS: list[Any] = []


def recording_sin(x):  # type: ignore[no-untyped-def]
    CALLS.append(x)
    return math.sin(x)


def fresh() -> types.ModuleType:
    name = f"_splice_midrun_program_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, HERE / "midrun_program.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outcome(run: Any) -> Any:
    try:
        return ("returned", run())
    except Exception as exc:  # compared with the native run's
        return ("raised", type(exc), str(exc))


class Typed(splice.Plugin):
    def typed(self, ir: Any) -> None:
        return None


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("x", [3, 1.5], ids=["int", "float"])
def test_fastmath_rewrites_check_what_they_rely_on(name: str, x: Any) -> None:
    native = outcome(lambda: getattr(fresh(), name)(x))
    program = fresh()
    plugin = FastMath({math.sin: checked_sin})
    VIOLATIONS.clear()
    assert outcome(lambda: plugin.run(getattr(program, name), x)) == native
    assert VIOLATIONS == []


@pytest.mark.parametrize("name", PROGRAMS)
def test_typed_instances_match_native(name: str) -> None:
    native = outcome(lambda: getattr(fresh(), name)(3))
    program = fresh()
    assert outcome(lambda: Typed().run(getattr(program, name), 3)) == native


@pytest.mark.parametrize(("name", "x"), [
    ("global_value", 3), ("class_attribute", 3), ("method_replaced", 3),
    ("module_function", 1.5), ("module_function_deleted", 1.5), ("module_constant", 3),
    ("direct_call_argument", 3), ("callee_code_swapped", 3), ("callee_rebound", 3),
    ("cell_rebound", 3), ("local_callee", 3)])
def test_the_rewrite_is_made_before_the_rebinding(name: str, x: Any) -> None:
    """Each program has a rewritten call (so the tests above are about something); the
    replacement runs on a float before the definition changes, except in
    ``module_constant``, where the only rewritten call comes after it: never.
    (``cell_callee`` is not here: inference does not type a cell holding a builtin, so
    nothing is rewritten there; it stays in the differential tests above.)"""
    program = fresh()
    plugin = FastMath({math.sin: recording_sin})
    CALLS.clear()
    outcome(lambda: plugin.run(getattr(program, name), x))
    assert plugin.rewrites, name
    if name == "module_constant":
        assert CALLS == []
    else:
        assert CALLS and type(CALLS[0]) is float, name

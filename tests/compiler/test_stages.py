"""The one pipeline (``splice.compiler.stages``): both builders run the same list of named
stages, timed, checkable after each stage, and stoppable after any of them."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

import splice
from splice.compiler.params import CompileParams
from splice.compiler.pipeline import build_code, build_instance, ir_after
from splice.compiler.stages import STAGES, CompileState, run_stages, stage_names
from splice.ir.nodes import Assign, Const, FunctionIR, Return
from splice.ir.tools import walk
from splice.plugins import FastMath


def poly(x: float, n: int) -> float:
    total = 0.0
    for i in range(n):
        total += x ** i / (i + 1)
    return total


class Marking(splice.Plugin):
    """A ``lowered`` hook that makes every function return ``"marked"``."""

    def lowered(self, ir: FunctionIR) -> None:
        for stmt in walk(ir):
            if isinstance(stmt, Return):
                stmt.value = Const("marked", stmt.pos)


class Breaking(splice.Plugin):
    """A ``lowered`` hook that leaves invalid IR: a temp used before any definition."""

    def lowered(self, ir: FunctionIR) -> None:
        for stmt in walk(ir):
            if isinstance(stmt, Return):
                stmt.value = ir.new_temp()


def test_one_list_serves_both_builders() -> None:
    names = stage_names()
    assert names[0] == "lower" and names[-1] == "codegen"
    assert len(names) == len(set(names)) == len(STAGES)
    untyped = stage_names(typed=False)
    assert untyped == ["lower", "lowered", "route", "finish", "codegen"]
    # the hook stages are stages of the list, in the pipeline's order
    assert names.index("lowered") < names.index("typed") < names.index("optimized")


def test_every_stage_that_ran_is_timed() -> None:
    context = splice.Plugin().context
    state = CompileState(context, poly, poly, params=context.params)
    run_stages(state)
    assert list(state.times) == stage_names(typed=False)
    assert all(t >= 0 for t in state.times.values())
    ci = build_instance(FastMath({}).context, poly, ())
    assert list(ci.times) == stage_names()
    assert set(ci.stages) == {"lowered", "typed", "optimized", "routed"}


def test_until_stops_after_the_named_stage() -> None:
    context = Marking().context
    lowered = ir_after(context, poly, "lower")
    hooked = ir_after(context, poly, "lowered")
    returns = [s for s in walk(hooked) if isinstance(s, Return)]
    assert returns and all(isinstance(r.value, Const) and r.value.value == "marked"
                           for r in returns)
    assert not all(isinstance(s.value, Const) for s in walk(lowered) if isinstance(s, Return))
    # routing replaces the call of ``range`` with a lookup of the dispatch table
    routed = ir_after(context, poly, "route")
    assert str(routed) != str(hooked)
    assert str(splice.code_lowered(poly, plugin=Marking())) == str(splice.code_stage(
        poly, "lowered", plugin=Marking()))


def test_an_unknown_stage_names_the_stages() -> None:
    context = splice.Plugin().context
    with pytest.raises(ValueError, match="no stage named 'typd'; the stages are lower, "):
        ir_after(context, poly, "typd")
    with pytest.raises(ValueError, match="codegen gives code"):
        ir_after(context, poly, "codegen")


def test_the_builders_agree_with_the_stages() -> None:
    """The code a context runs is the stages' code: the hook's rewrite reaches it."""
    plugin = Marking()
    assert plugin.run(poly, 2.0, 3) == "marked"
    compiled = build_code(plugin.context, poly)
    assert not isinstance(compiled, splice.UnsupportedError)


@pytest.mark.parametrize("fn", [poly, json.dumps, textwrap.dedent, textwrap.TextWrapper.wrap,
                                json.JSONEncoder.iterencode])
@pytest.mark.parametrize("typed", [False, True])
def test_the_ir_verifies_after_every_stage(fn: Any, typed: bool) -> None:
    plugin: splice.Plugin = FastMath({}) if typed else splice.Plugin()
    context = plugin.context
    params = CompileParams(verify_stages=True)
    state = CompileState(context, fn, fn, typed=typed, keep=typed, params=params)
    if typed:
        from splice.compiler.inference import interpreter_for, using
        from splice.compiler.instances import callee_instance as _callee_instance

        state.callee_instance = lambda f, t: _callee_instance(context, f, t)
        state.interpreter = interpreter_for(context.hooks)
        with using(state.interpreter):
            run_stages(state)
    else:
        run_stages(state)
    assert state.compiled is not None


def test_verification_names_the_stage_that_broke_the_ir() -> None:
    context = Breaking().context
    state = CompileState(context, poly, poly, params=CompileParams(verify_stages=True))
    with pytest.raises(splice.SpliceError, match="invalid after the 'lowered' stage"):
        run_stages(state)


def test_constructors_are_a_finish_of_the_same_pipeline(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    # the compiled constructor (the form without splice/runtime/_hooks.c's ``Constructor``)
    from splice.runtime import native

    monkeypatch.setattr(native, "CONSTRUCTOR", None)

    class Point:
        def __init__(self, x: int, y: int = 2) -> None:
            self.x, self.y = x, y

    plugin = splice.Plugin()
    assert vars(plugin.run(Point, 1)) == {"x": 1, "y": 2}
    code = plugin.context.constructors
    assert len(code) == 1  # built through build_code with the constructor as ``finish``
    assert any(isinstance(s, Assign) for s in walk(ir_after(plugin.context, Point.__init__,
                                                            "finish")))


def test_a_hook_changing_the_lowered_ir_changes_no_one_elses() -> None:
    # the shared lowered IR is a snapshot: the first user gets the IR lowering made (its
    # hook changes it after the snapshot was taken), later users copies of the snapshot
    def fresh(x: int) -> int:
        return x + 1

    assert Marking().run(fresh, 1) == "marked"  # the first lowering of ``fresh``
    assert splice.Plugin().run(fresh, 1) == 2
    assert Marking().run(fresh, 1) == "marked"
    assert splice.Plugin().run(fresh, 2) == 3

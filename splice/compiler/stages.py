"""The compiler's one pipeline: a list of named stages over one compile state.

Every function a context compiles goes through ``STAGES``, in order; the typed stages run
only for code instances (plugins with ``typed``/``optimized`` hooks or an interpreter,
``splice.compile``)::

    lower           the function's lowered IR (shared cache), copied for this compile
    lowered         the plugins' ``lowered`` hooks                           (kept: lowered)
    load_arguments  typed: every name passed to a call gets its own load
    infer           typed: abstract interpretation under the plugins' interpreter
    typed           typed: the plugins' ``typed`` hooks; replaced callees get their checks
    retype          typed: inference again if ``typed`` hooks changed the IR  (kept: typed)
    optimize        typed: splice's own rewrites of typed IR
    plan_direct     typed: callee instances for calls that can be made direct
    optimized       typed: the plugins' ``optimized`` hooks
    apply_direct    typed: argument loads undone, guarded direct calls   (kept: optimized)
    route           calls, implicit calls through the context (``Context._route``)
    finish          a rewrite the driver asks for (a constructor, ``splice.compiler.
                    constructors``); typed: the use-site checks' reads made real
    direct_native   typed: table lookups of callees the owner calls natively undone
    codegen         IR to a code object                                       (kept: routed)

Each stage is a small function that reads and updates the ``CompileState``; the passes it
runs work on IR alone and live in their own modules. ``run_stages`` times every stage
(``CompileState.times``), keeps a copy of the IR after the stages marked ``keep`` (what
``CodeInstance.lowered``/``typed``/``optimized``/``routed`` and the listings show), checks
the IR after each stage up to ``route`` when ``CompileParams.verify_stages`` is on (the IR
plugins and passes see; routed IR defines some temps in one ``if`` and uses them in another
of the same test, which the verifier does not model), and stops after the stage named by
``until``.

Routing has two forms. The ``try`` form (a call of an unhashable callee falls back to the
slow entry) is what every context wants, but code that must stay an expression cannot hold
a ``try``: when a stage from ``route`` on raises ``UnsupportedError``, the runner starts
again at ``route`` from a copy of the IR as it was before routing, in the plain form (from
``lower``, when no stage but ``lower`` made that IR: lowering again copies the cached IR,
and the usual compile, which does not fail, makes no copy). Nothing else
goes back: data flows one way, from each stage to the next.

Adding a stage is one function here (or a pass in its own module and a stage calling it)
and one entry in ``STAGES``.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from splice.compiler.checks import (
    Checks,
    callees_of,
    finish,
    guard_replaced_callees,
    world_age_callees,
)
from splice.compiler.direct import (
    SelfCall,
    apply_direct_calls,
    building,
    direct_native_calls,
    plan_direct_calls,
)
from splice.compiler.inference import (
    Loaded,
    infer_under,
    load_call_arguments,
    unload_call_arguments,
)
from splice.compiler.lowered import lowered as lowered_ir_of
from splice.compiler.optimize import optimize
from splice.compiler.params import CompileParams
from splice.errors import SpliceError, UnsupportedError
from splice.ir.assemble import compile_code, restore_nested_code
from splice.ir.compiled import CompiledCode
from splice.ir.functions import describe
from splice.ir.nodes import FunctionIR, Snapshot, snapshot_ir
from splice.ir.verifier import VerifyError, verify
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["STAGES", "CompileState", "Stage", "generate_code", "run_stages", "stage_names"]


@dataclass(eq=False)
class CompileState:
    """What the stages of one compile read and write.

    ``owner``: the context (its hook table, routing, dispatch table). ``fn``: the function
    compiled (errors name it); ``builder``: the function the stages see as
    ``ir.function`` (``fn``, or for a code instance a copy holding only what inference may
    read, ``splice.cache.instances.builder_of``). ``typed``: run the typed stages.
    """

    owner: Any
    fn: types.FunctionType
    builder: types.FunctionType
    typed: bool = False
    argtypes: tuple[Any, ...] = ()
    key: Hashable = None
    #: a last rewrite of the routed IR the driver asks for (a constructor's)
    finish: Callable[[FunctionIR], FunctionIR] | None = None
    #: the instance a direct call of ``function`` with ``argtypes`` runs (typed)
    callee_instance: Callable[[types.FunctionType, tuple[Any, ...]], Any] | None = None
    #: keep copies of the IR after the stages marked ``keep`` (code instances do)
    keep: bool = False
    params: CompileParams = field(default_factory=CompileParams)

    ir: FunctionIR | None = None
    kept: dict[str, FunctionIR] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)
    #: routing in the plain form (see the module docstring), and the IR before routing
    plain: bool = False
    unrouted: FunctionIR | None = None
    compiled: CompiledCode | None = None

    # typed stages
    loaded: Loaded = field(default_factory=dict)
    interpreter: Any = None
    first_inference: Any = None
    inference: Any = None
    checks: Checks = field(default_factory=Checks)
    #: calls' callees before the ``typed`` hooks (what replaced callees are compared with)
    replaced: list[str] = field(default_factory=list)
    #: whether the ``typed`` stage changed the IR inference typed (then it is inferred again)
    retyped: bool = False
    optimizations: list[str] = field(default_factory=list)
    plan: dict[int, Any] = field(default_factory=dict)
    #: the direct calls of the instance being built by its own code (bound once it exists)
    self_calls: dict[int, SelfCall] = field(default_factory=dict)

    @property
    def current(self) -> FunctionIR:
        """The IR as the last stage left it."""
        assert self.ir is not None, "no IR yet: the lower stage runs first"
        return self.ir


@dataclass(frozen=True)
class Stage:
    """One named step of the pipeline."""

    name: str
    run: Callable[[CompileState], None]
    #: only for code instances (``CompileState.typed``)
    typed: bool = False
    #: keep a copy of the IR after this stage under this name (when the state keeps)
    keep: str | None = None


def _function(state: CompileState) -> str:
    return describe(state.fn)


# ----------------------------------------------------------------------------- stages

def _lower(state: CompileState) -> None:
    lowered = lowered_ir_of(state.fn)  # (a copy of its own)
    if isinstance(lowered, UnsupportedError):
        raise lowered
    state.ir = lowered
    state.ir.function = state.builder
    state.ir.key = state.key


def _hooks(stage: str) -> Callable[[CompileState], None]:
    def run(state: CompileState) -> None:
        hooks = state.owner.hooks
        if hooks.stages[stage]:
            state.ir = hooks.run_stage(stage, state.current, state.fn)
    run.__name__ = f"_{stage}_hooks"
    return run


def _load_arguments(state: CompileState) -> None:
    state.loaded = load_call_arguments(state.current)


def _infer(state: CompileState) -> None:
    inference = infer_under(state.owner.hooks, state.builder, state.current,
                            state.argtypes, state.interpreter)
    state.first_inference = state.inference = inference
    state.ir = inference.ir
    state.ir.function = state.builder
    state.ir.key = state.key


def _typed(state: CompileState) -> None:
    hooks = state.owner.hooks
    if not hooks.stages["typed"]:
        return
    inferred = state.current
    snapshot = snapshot_ir(inferred)
    before = callees_of(inferred)
    state.ir = hooks.run_stage("typed", inferred, state.fn)
    if any(getattr(plugin, "world_age", False) for plugin in hooks.plugins):
        state.replaced = world_age_callees(state.ir, before) + guard_replaced_callees(
            state.ir, before, state.checks, state.argtypes, speculated_only=True)
    else:
        state.replaced = guard_replaced_callees(state.ir, before, state.checks,
                                                state.argtypes)
    state.retyped = state.ir is not inferred or not _same_ir(snapshot, snapshot_ir(state.ir))


def _same_ir(before: Snapshot[FunctionIR], after: Snapshot[FunctionIR]) -> bool:
    """Whether two snapshots of IR hold the same structure and the very same shared objects
    (constants, temps' types, resolved callees)."""
    return before.data == after.data and len(before.shared) == len(after.shared) and \
        all(a is b for a, b in zip(before.shared, after.shared, strict=True))


def _retype(state: CompileState) -> None:
    """Infer again what the ``typed`` hooks rewrote, so values have the types of the
    rewritten program (a replacement may return another type than the original callee).
    IR the hooks left as it was (the same object, the same structure and objects: most
    functions under a plugin that rewrites some) keeps its inference: inferring the same
    IR for the same argument types again gives what the first inference gave, and costs
    as much (a whole inference, callees included)."""
    if not state.retyped:
        return
    again = infer_under(state.owner.hooks, state.builder, state.current, state.argtypes,
                        state.interpreter, again=True)
    if again is None:
        raise SpliceError(f"cannot infer {_function(state)} again after its typed hooks: "
                          f"the interpreter {type(state.interpreter).__name__} lacks the "
                          "caches of AbstractInterpreter")
    state.inference = again
    state.ir = again.ir
    state.ir.function = state.builder


def _optimize(state: CompileState) -> None:
    state.optimizations = [*state.replaced, *optimize(state.current)]


def _plan_direct(state: CompileState) -> None:
    assert state.callee_instance is not None
    with building(state.fn.__code__):
        plan = plan_direct_calls(state.owner, state.current, state.callee_instance,
                                 this=(state.fn, state.argtypes))
    state.plan = {i: b for i, b in plan.items() if not isinstance(b, SelfCall)}
    state.self_calls = {i: b for i, b in plan.items() if isinstance(b, SelfCall)}


def _apply_direct(state: CompileState) -> None:
    unload_call_arguments(state.current, state.loaded)
    state.optimizations.extend(apply_direct_calls(
        state.current, {**state.plan, **state.self_calls}, state.checks, state.argtypes))


def _route(state: CompileState) -> None:
    state.owner._route(state.current, plain=state.plain)


def _finish(state: CompileState) -> None:
    if state.typed:
        # the use-site checks' type reads, made real now that calls are routed (no hook
        # sees them)
        finish(state.current, state.checks)
    if state.finish is not None:
        state.ir = state.finish(state.current)


def _direct_native(state: CompileState) -> None:
    targets = {id(binding.function) for binding in state.plan.values()}
    state.optimizations.extend(direct_native_calls(state.owner, state.current, targets))


def _codegen(state: CompileState) -> None:
    state.compiled = generate_code(state.current, state.fn, state.builder)


def generate_code(ir: FunctionIR, fn: types.FunctionType,
                  builder: types.FunctionType | None = None) -> CompiledCode:
    """The ``codegen`` stage alone: ``fn``'s code from its routed IR (what a stored
    instance whose code cannot be used is made again from: ``splice.cache.owners``).
    Raises ``UnsupportedError`` if it does not compile."""
    compiled = compile_code(ir, builder or fn, comprehension_functions=True)
    code = restore_nested_code(compiled.code, fn.__code__)
    return CompiledCode.of(code, compiled.hidden, fn.__code__.co_freevars)


#: the pipeline, in order (the module docstring says what each stage does)
STAGES: tuple[Stage, ...] = (
    Stage("lower", _lower),
    Stage("lowered", _hooks("lowered"), keep="lowered"),
    Stage("load_arguments", _load_arguments, typed=True),
    Stage("infer", _infer, typed=True),
    Stage("typed", _typed, typed=True),
    Stage("retype", _retype, typed=True, keep="typed"),
    Stage("optimize", _optimize, typed=True),
    Stage("plan_direct", _plan_direct, typed=True),
    Stage("optimized", _hooks("optimized"), typed=True),
    Stage("apply_direct", _apply_direct, typed=True, keep="optimized"),
    Stage("route", _route),
    Stage("finish", _finish),
    Stage("direct_native", _direct_native, typed=True),
    Stage("codegen", _codegen, keep="routed"),
)

_ROUTE = next(index for index, stage in enumerate(STAGES) if stage.name == "route")


def stage_names(typed: bool = True) -> list[str]:
    """The names of the stages (without the typed ones: those every context runs)."""
    return [stage.name for stage in STAGES if typed or not stage.typed]


def run_stages(state: CompileState, *, until: str | None = None) -> CompileState:
    """Run the pipeline on ``state`` (from the ``lower`` stage), stopping after ``until``
    if given. Raises ``UnsupportedError`` if the function cannot be compiled."""
    if until is not None and until not in stage_names(state.typed):
        raise ValueError(f"no stage named {until!r}; the stages are "
                         f"{', '.join(stage_names(state.typed))}")
    index = 0
    while index < len(STAGES):
        stage = STAGES[index]
        index += 1
        if stage.typed and not state.typed:
            continue
        if index - 1 == _ROUTE and not state.plain:
            # what the plain form starts from, should the ``try`` form fail: a copy of
            # the IR, unless the ``lower`` stage alone made it (then lowering again is a
            # copy of the cached IR, and the common case pays for no copy)
            state.unrouted = state.current.copy() if _rewritten(state) else None
        start = time.perf_counter()
        try:
            stage.run(state)
        except UnsupportedError:
            if index - 1 < _ROUTE or state.plain:
                raise
            # the ``try`` form did not fit: route again in the plain form
            state.plain = True
            if state.unrouted is None:
                index = 0
            else:
                state.ir, state.unrouted = state.unrouted, None
                index = _ROUTE
            continue
        finally:
            state.times[stage.name] = state.times.get(stage.name, 0.0) + \
                time.perf_counter() - start
        if stage.keep is not None and state.keep:
            state.kept[stage.keep] = state.current if stage.name == "codegen" \
                else state.current.copy()
        if state.params.verify_stages and index - 1 < _ROUTE:
            _verify(state, stage)
        if stage.name == until:
            break
    return state


def _rewritten(state: CompileState) -> bool:
    """Whether a stage before ``route`` other than ``lower`` may have changed the IR."""
    return state.typed or bool(state.owner.hooks.stages["lowered"])


def _verify(state: CompileState, stage: Stage) -> None:
    try:
        verify(state.current)
    except VerifyError as exc:
        raise SpliceError(f"the IR of {_function(state)} is invalid after the "
                          f"{stage.name!r} stage: {exc}") from exc

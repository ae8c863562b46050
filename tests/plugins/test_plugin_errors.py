"""Errors that name their cause (issue 14, points 7 and 8).

A plugin's observer and compile hooks (``prehook``, ``posthook``, ``recurse``, ``lowered``,
``typed``, ``optimized``, ``specialize``) that raise, or return what the hook cannot return,
are reported as ``splice.PluginError`` naming the plugin's class, the hook and the function,
with the hook's exception as ``__cause__``; the program's own handlers do not catch it as
the hook's exception. What an intercepting method or an ``overdub`` raises is the program's:
it reaches the program's handler as raised (the same object, its traceback ending at the
``raise``), as it would if the method were patched in by hand. A plugin's abstract
interpreter that fails makes the function run without its typed stages, with the reason in
``splice.explain``; a strict plugin raises instead.

Each case is differential: the same program runs natively (or under the same plugin with
its fault switched off) and the results are compared.
"""

from __future__ import annotations

import math
import os
import pickle
import traceback
from typing import Any

import pytest

import splice
from splice.errors import InterpreterError
from splice.infer import AbstractInterpreter
from splice.ir.nodes import FunctionIR

SPLICE_DIR = os.path.dirname(splice.__file__) + os.sep
LEAF = f"{__name__}.leaf"


# ----------------------------------------------------------------------------- subjects

def leaf(x):
    return x + 1


def top(x):
    return leaf(x) * 2


def guarded(x):
    """Calls ``leaf`` inside the program's own ``except ValueError``."""
    try:
        return leaf(x)
    except ValueError as exc:
        return ("caught", exc)


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", "") or ""


class Faulty(splice.Plugin):
    """Base of the plugins below: ``fail`` switches the fault on, for ``leaf`` only; the
    exception raised is kept in ``raised``."""

    def __init__(self, fail: bool = True) -> None:
        self.fail = fail
        self.raised: BaseException | None = None

    def _fault(self, fn: Any) -> None:
        if self.fail and _name(fn) == "leaf":
            self.raised = ValueError("plugin bug", _name(fn))
            raise self.raised


class Prehook(Faulty):
    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._fault(fn)


class Posthook(Faulty):
    def posthook(self, result: Any, fn: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        self._fault(fn)


class Recurse(Faulty):
    def recurse(self, fn: Any) -> bool:
        self._fault(fn)
        return True


class Lowered(Faulty):
    def lowered(self, ir: FunctionIR) -> None:
        self._fault(ir.function)


class Typed(Faulty):
    def typed(self, ir: FunctionIR) -> None:
        self._fault(ir.function)


class Optimized(Faulty):
    def optimized(self, ir: FunctionIR) -> None:
        self._fault(ir.function)


class LoweredTyped(Lowered):
    """A ``lowered`` hook in a context with typed stages (the pipeline of code instances
    runs it, not the context's own build)."""

    def typed(self, ir: FunctionIR) -> None:
        pass


class PrehookOverdub(Prehook):
    """Per-call hooks with an ``overdub`` (the other form of the call's wrapper)."""

    def overdub(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.recurse_call(fn, *args, **kwargs)


class PosthookOverdub(Posthook):
    overdub = PrehookOverdub.overdub


RUN_HOOKS = {"prehook": Prehook, "posthook": Posthook, "recurse": Recurse,
             "lowered": Lowered, "typed": Typed, "optimized": Optimized,
             "lowered-typed": LoweredTyped, "prehook-overdub": PrehookOverdub,
             "posthook-overdub": PosthookOverdub}


def _check(error: BaseException, plugin: Faulty, hook: str, function: str = LEAF) -> None:
    assert type(error) is splice.PluginError
    assert isinstance(error, splice.SpliceError)
    assert (error.plugin, error.hook, error.function) == (type(plugin).__name__, hook,
                                                          function)
    assert f"{type(plugin).__name__}.{hook}({function})" in str(error)
    assert "raised ValueError: ('plugin bug', 'leaf')" in str(error)
    assert plugin.raised is not None and error.__cause__ is plugin.raised
    # the cause's traceback ends where the hook raised it
    assert traceback.extract_tb(plugin.raised.__traceback__)[-1].name == "_fault"


@pytest.mark.parametrize("hook", list(RUN_HOOKS))
def test_a_raising_hook_is_a_plugin_error_under_run(hook: str) -> None:
    cls = RUN_HOOKS[hook]
    assert cls(fail=False).run(top, 3) == top(3) == 8
    plugin = cls()
    with pytest.raises(splice.PluginError) as info:
        plugin.run(top, 3)
    _check(info.value, plugin, hook.split("-")[0])


@pytest.mark.parametrize("hook", list(RUN_HOOKS))
def test_the_programs_handler_does_not_take_a_hooks_error_for_its_own(hook: str) -> None:
    """``guarded`` catches ValueError around ``leaf``: natively (and with the fault off) it
    gets leaf's result; a hook's ValueError is the plugin's bug, not the call's outcome."""
    cls = RUN_HOOKS[hook]
    assert cls(fail=False).run(guarded, 3) == guarded(3) == 4
    plugin = cls()
    with pytest.raises(splice.PluginError) as info:
        plugin.run(guarded, 3)
    _check(info.value, plugin, hook.split("-")[0])


@pytest.mark.parametrize("hook", ["lowered", "typed", "optimized"])
def test_a_raising_stage_hook_is_a_plugin_error_under_compile(hook: str) -> None:
    cls = RUN_HOOKS[hook]
    assert splice.invoke(splice.compile(cls(fail=False), leaf, int), 3) == leaf(3)
    plugin = cls()
    with pytest.raises(splice.PluginError) as info:
        splice.compile(plugin, leaf, int)
    _check(info.value, plugin, hook)


def test_the_error_names_the_plugin_of_a_composition_that_failed() -> None:
    quiet, failing = Prehook(fail=False), Posthook()
    composed = splice.compose(quiet, failing)
    with pytest.raises(splice.PluginError) as info:
        composed.run(top, 1)
    _check(info.value, failing, "posthook")


def test_a_hook_on_a_builtin_callee_names_it() -> None:
    class OnSqrt(splice.Plugin):
        def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if fn is math.sqrt:
                raise KeyError("no sqrt")

    def program() -> float:
        return math.sqrt(4.0)
    with pytest.raises(splice.PluginError) as info:
        OnSqrt().run(program)
    assert info.value.function == "math.sqrt"
    assert str(info.value) == "OnSqrt.prehook(math.sqrt) raised KeyError: 'no sqrt'"
    assert type(info.value.__cause__) is KeyError


def test_a_recursion_error_in_a_hook_is_not_wrapped() -> None:
    """The program's recursion may be what ran out of the limit: a RecursionError stays one
    (a program catching it, as natively, keeps working)."""
    class Deep(splice.Plugin):
        def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if _name(fn) == "leaf":
                raise RecursionError("too deep")
    with pytest.raises(RecursionError, match="too deep"):
        Deep().run(top, 1)


def test_plugin_errors_pickle() -> None:
    with pytest.raises(splice.PluginError) as info:
        Prehook().run(top, 1)
    copy = pickle.loads(pickle.dumps(info.value))
    assert type(copy) is splice.PluginError and str(copy) == str(info.value)
    assert (copy.plugin, copy.hook, copy.function) == ("Prehook", "prehook", LEAF)


# ------------------------------------------------------------------------ wrong returns

class Returns(splice.Plugin):
    def __init__(self, value: Any) -> None:
        self.value = value


class LoweredReturns(Returns):
    def lowered(self, ir: FunctionIR) -> Any:
        return self.value if _name(ir.function) == "leaf" else None


class TypedReturns(Returns):
    def typed(self, ir: FunctionIR) -> Any:
        return self.value if _name(ir.function) == "leaf" else None


class OptimizedReturns(Returns):
    def optimized(self, ir: FunctionIR) -> Any:
        return self.value if _name(ir.function) == "leaf" else None


class RecurseReturns(Returns):
    def recurse(self, fn: Any) -> Any:
        return self.value if _name(fn) == "leaf" else True


@pytest.mark.parametrize(("hook", "cls"), [
    ("lowered", LoweredReturns), ("typed", TypedReturns), ("optimized", OptimizedReturns)])
def test_a_stage_hook_returning_something_else_than_ir(hook: str, cls: type[Returns]) -> None:
    assert cls(None).run(top, 3) == top(3)
    for run in (lambda p: p.run(top, 3), lambda p: splice.compile(p, leaf, int)):
        with pytest.raises(splice.PluginError) as info:
            run(cls(42))
        error = info.value
        assert (error.plugin, error.hook, error.function) == (cls.__name__, hook, LEAF)
        assert str(error) == (f"{cls.__name__}.{hook}({LEAF}) returned int 42; "
                              f"{hook} hooks return None or a FunctionIR")
        assert error.__cause__ is None


def test_recurse_returning_something_else() -> None:
    assert RecurseReturns(False).run(top, 3) == top(3)
    with pytest.raises(splice.PluginError) as info:
        RecurseReturns("yes").run(top, 3)
    assert str(info.value) == (f"RecurseReturns.recurse({LEAF}) returned str 'yes'; it must "
                               "return True, False or a plugin")


class Keyed(splice.Plugin):
    def __init__(self, key: Any = None, fail: bool = False) -> None:
        self.key = key
        self.fail = fail
        self.raised: BaseException | None = None

    def specialize(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.fail:
            self.raised = ValueError("plugin bug", _name(fn))
            raise self.raised
        return self.key


def test_specialize_raising_or_returning_an_unhashable_key() -> None:
    assert splice.invoke(splice.compile(Keyed(2), leaf, int, key=2), 3) == leaf(3)
    failing = Keyed(fail=True)
    ci = splice.compile(failing, leaf, int, key=2)
    with pytest.raises(splice.PluginError) as info:
        splice.invoke(ci, 3)
    assert (info.value.plugin, info.value.hook, info.value.function) == (
        "Keyed", "specialize", LEAF)
    assert info.value.__cause__ is failing.raised is not None
    ci = splice.compile(Keyed([2]), leaf, int, key=2)
    with pytest.raises(splice.PluginError, match=r"Keyed.specialize\(.*leaf\) returned "
                       r"list \[2\]; it returns a hashable key or None") as info:
        splice.invoke(ci, 3)
    assert type(info.value.__cause__) is TypeError


# --------------------------------------------------- intercepts and overdubs: unchanged

def target(x):
    return x


def calls_target(x):
    try:
        target(x)
    except ValueError as exc:
        return exc
    return None


class Refuses(splice.Plugin):
    def __init__(self) -> None:
        self.raised: list[ValueError] = []

    @splice.intercept(target)
    def target(self, x: Any) -> Any:
        self.raised.append(ValueError("refused", x))
        raise self.raised[-1]


class RefusesHooked(Refuses):
    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pass


class RefusesDynamically(Refuses):
    dynamic_scope = True


class Injects(splice.Plugin):
    """Fault injection: every call of ``target`` raises."""

    def __init__(self) -> None:
        self.raised: list[ValueError] = []

    def overdub(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if fn is target:
            self.raised.append(ValueError("injected", *args))
            raise self.raised[-1]
        return self.recurse_call(fn, *args, **kwargs)


def _user_frames(exc: BaseException) -> list[tuple[str, int | None, str]]:
    return [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(exc.__traceback__)
            if not f.filename.startswith(SPLICE_DIR)]


FAULTS: dict[str, Any] = {
    "intercept": Refuses, "intercept-hooked": RefusesHooked,
    "intercept-dynamic": RefusesDynamically, "overdub": Injects,
    "intercept-composed": lambda: splice.compose(splice.Plugin(), Refuses()),
}


@pytest.mark.parametrize("kind", list(FAULTS))
def test_an_intercept_or_overdub_raising_reaches_the_program_unchanged(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = FAULTS[kind]()
    faulty = plugin.plugins[-1] if isinstance(plugin, splice.plugin.Composed) else plugin
    caught = plugin.run(calls_target, 5)
    # the program's own ``except ValueError`` caught exactly what the plugin raised
    assert type(caught) is ValueError and caught is faulty.raised[-1]
    assert caught.__cause__ is None and caught.__context__ is None
    assert not isinstance(caught, splice.SpliceError)
    # natively, with the same method patched in by hand, the traceback's user frames (the
    # program's call line, the raise) are the same
    if kind == "overdub":
        def by_hand(x: Any) -> Any:
            return faulty.overdub(target, (x,), {})
    else:
        by_hand = faulty.target
    monkeypatch.setitem(globals(), "target", by_hand)
    native = calls_target(5)
    assert type(native) is ValueError and native.args == caught.args
    native_frames, frames = _user_frames(native), _user_frames(caught)
    assert frames[-1] == native_frames[-1]  # the line of the raise
    assert frames[0] == native_frames[0]  # the program's call of target
    assert frames[-1][2] == ("overdub" if kind == "overdub" else "target")


def test_an_intercept_passes_on_what_the_original_raises() -> None:
    class PassesOn(splice.Plugin):
        @splice.intercept(leaf)
        def leaf(self, x: Any) -> Any:
            return self.recurse_call(leaf, x)

    def program() -> Any:
        try:
            return leaf(None)
        except TypeError as exc:
            return exc
    native, under = program(), PassesOn().run(program)
    assert type(under) is type(native) is TypeError and under.args == native.args


# ------------------------------------------------------------------- the interpreter

class FailsOn(AbstractInterpreter):
    """Raises when asked to infer ``leaf`` (for argument types whose text holds ``only``)."""

    def __init__(self, only: str = "") -> None:
        super().__init__()
        self.only = only
        self.raised: list[BaseException] = []

    def infer(self, fn: Any, argtypes: Any) -> Any:
        if _name(fn) == "leaf" and self.only in str(tuple(argtypes)):
            self.raised.append(ZeroDivisionError("interpreter bug"))
            raise self.raised[-1]
        return super().infer(fn, argtypes)


class ReturnsNonsense(AbstractInterpreter):
    def infer(self, fn: Any, argtypes: Any) -> Any:
        return 42 if _name(fn) == "leaf" else super().infer(fn, argtypes)


class Inferring(splice.Plugin):
    """A typed-stage plugin with its own interpreter; its ``typed`` hook records what it
    saw (a function run without typed stages is not seen)."""

    def __init__(self, interpreter: Any, strict: bool = False) -> None:
        self.interpreter = interpreter
        self.strict = strict
        self.typed_seen: list[str] = []

    def typed(self, ir: FunctionIR) -> None:
        self.typed_seen.append(_name(ir.function))


def _reached(plugin: splice.Plugin, fn: Any) -> Any:
    [reached] = splice.explain(plugin, fn)
    return reached


def test_a_failing_interpreter_runs_the_function_untyped_and_explains() -> None:
    plugin = Inferring(FailsOn())
    assert plugin.run(top, 3) == top(3)
    assert plugin.run(top, 4.5) == top(4.5)
    assert "leaf" not in plugin.typed_seen and "top" in plugin.typed_seen
    reached = _reached(plugin, leaf)
    assert reached.entered  # transformed: its calls still go through the context
    assert reached.reason.startswith("transformed without its typed stages: ")
    assert f"Inferring.interpreter({LEAF}) raised ZeroDivisionError: interpreter bug" \
        in reached.reason
    assert _reached(plugin, top).reason == "transformed"


class FailsOnCalls(AbstractInterpreter):
    """Raises when an inference reaches a call of ``leaf`` (so callers of ``leaf`` cannot
    be inferred; ``leaf`` itself can)."""

    def call_function(self, fn: Any, args: Any, frame: Any = None) -> Any:
        if _name(fn) == "leaf":
            raise ZeroDivisionError("interpreter bug")
        return super().call_function(fn, args, frame)


def test_a_function_run_untyped_still_reaches_its_callees_under_the_plugin() -> None:
    plugin = Inferring(FailsOnCalls())
    assert plugin.run(top, 2) == top(2)
    reached = _reached(plugin, top)
    assert reached.entered
    assert reached.reason.startswith("transformed without its typed stages: Inferring."
                                     f"interpreter({__name__}.top) raised ZeroDivisionError")
    # top's untyped code calls leaf through the context: leaf is entered, with types
    assert _reached(plugin, leaf).reason == "transformed"
    assert set(plugin.typed_seen) == {"leaf"}  # (its generic and int instances)


def test_an_interpreter_failing_for_some_argument_types_only() -> None:
    plugin = Inferring(FailsOn(only="int"))
    assert [plugin.run(top, v) for v in (3, 1.5, 3)] == [top(3), top(1.5), top(3)]
    reached = _reached(plugin, leaf)
    assert reached.entered
    assert reached.reason.startswith("transformed without its typed stages for arguments "
                                     "(int): ")
    assert plugin.typed_seen.count("leaf") >= 1  # the float and generic instances are typed


def test_an_interpreter_returning_something_else_than_an_inference() -> None:
    plugin = Inferring(ReturnsNonsense())
    assert plugin.run(top, 3) == top(3)
    reason = _reached(plugin, leaf).reason
    assert f"Inferring.interpreter({LEAF}) returned int 42; its infer() returns a " \
        "splice.infer.Inference" in reason


def test_a_failing_interpreter_is_an_error_in_strict_mode() -> None:
    interpreter = FailsOn()
    plugin = Inferring(interpreter, strict=True)
    with pytest.raises(splice.PluginError) as info:
        plugin.run(top, 3)
    error = info.value
    assert isinstance(error, InterpreterError)
    assert (error.plugin, error.hook, error.function) == ("Inferring", "interpreter", LEAF)
    assert error.__cause__ is interpreter.raised[-1]


def test_compile_raises_when_the_interpreter_fails() -> None:
    interpreter = FailsOn()
    with pytest.raises(splice.PluginError) as info:
        splice.compile(Inferring(interpreter), leaf, int)
    assert info.value.hook == "interpreter"
    assert info.value.__cause__ is interpreter.raised[-1]
    # a caller's compile is not spoiled by the callee's failure: its call stays ordinary
    ci = splice.compile(Inferring(FailsOn(only="int")), top, int)
    assert splice.invoke(ci, 3) == top(3)
    assert not any("direct call" in line for line in ci.optimizations)

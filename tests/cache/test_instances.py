"""Code instances: ``splice.compile`` builds one specialization under a plugin, ``splice.invoke``
calls exactly it after checking the arguments. Differential: every instance's results are
compared with the function run natively."""

from __future__ import annotations

import math
from typing import Any

import pytest

import splice
from splice.cache.instances import ArgumentTypeError, InvalidatedError, instances_of
from splice.infer.lattice import Abstract, Exact, abstract
from splice.ir.nodes import FunctionIR, Temp
from splice.ir.tools import walk


def poly(x, n):  # type: ignore[no-untyped-def]
    total = 0.0
    for i in range(n):
        total = total + x ** i / (i + 1)
    return total


def describe(value, scale=2, *, suffix="!"):  # type: ignore[no-untyped-def]
    return f"{value * scale}{suffix}"


def raises_inside(x):  # type: ignore[no-untyped-def]
    return 10 // x


@pytest.mark.parametrize("args", [(0.5, 10), (2.0, 0), (-1.25, 7), (0.0, 3)])
def test_invoke_matches_native(args: tuple[Any, ...]) -> None:
    ci = splice.compile(None, poly, float, int)
    assert splice.invoke(ci, *args) == poly(*args)


def test_instance_records_its_specialization_stages_and_source() -> None:
    plugin = splice.Plugin()
    ci = splice.compile(plugin, poly, float, int)
    assert isinstance(ci, splice.CodeInstance)
    assert ci.specialization.code is poly.__code__
    assert ci.specialization.argtypes == (Exact(float), Exact(int))
    assert ci.owner is plugin.context
    assert ci.fn is poly
    for stage in (ci.lowered, ci.typed, ci.optimized, ci.routed):
        assert isinstance(stage, FunctionIR)
    # the typed IR carries abstract values; the lowered IR does not
    assert any(isinstance(r.annotation, Abstract)
               for s in walk(ci.typed) for r in getattr(s, "results", ()))
    assert all(r.annotation is None for s in walk(ci.lowered)
               for r in getattr(s, "results", ()) if isinstance(r, Temp))
    assert "def poly(x, n):" in ci.source
    assert ci.return_type is not None
    assert ci.min_world <= splice.world() and ci.valid and ci.valid_in(splice.world())
    assert ci.compiled is not poly and ci.compiled.__code__ is not poly.__code__
    assert ci in instances_of(plugin.context)


def test_compile_is_cached_per_owner_and_specialization() -> None:
    plugin = splice.Plugin()
    first = splice.compile(plugin, poly, float, int)
    assert splice.compile(plugin, poly, float, int) is first
    assert splice.compile(plugin, poly, int, int) is not first
    assert splice.compile(splice.Plugin(), poly, float, int) is not first  # another owner
    assert splice.compile(plugin, poly, int | float, int).argtypes[0] == abstract(int | float)


def test_invoke_refuses_arguments_outside_the_specialization() -> None:
    ci = splice.compile(None, poly, float, int)
    with pytest.raises(ArgumentTypeError) as info:
        splice.invoke(ci, 1, 3)
    message = str(info.value)
    assert "argument 1" in message and "'x'" in message and "int" in message
    assert "float" in message
    assert isinstance(info.value, TypeError)
    with pytest.raises(TypeError, match="argument 2 .'n'. is float"):
        splice.invoke(ci, 1.0, 3.0)
    with pytest.raises(TypeError, match="argument 2"):
        splice.invoke(ci, 1.0, n=True)  # bool is not exactly int


def test_invoke_binds_keywords_and_defaults_like_a_call() -> None:
    ci = splice.compile(None, describe, int, int)
    assert splice.invoke(ci, 3) == describe(3)
    assert splice.invoke(ci, 3, scale=4, suffix="?") == describe(3, scale=4, suffix="?")
    with pytest.raises(TypeError, match="'scale'"):
        splice.invoke(ci, 3, scale=2.5)
    # arguments that do not bind raise exactly as the native call does
    with pytest.raises(TypeError) as native:
        describe(1, 2, 3)  # type: ignore[misc]
    with pytest.raises(TypeError) as ours:
        splice.invoke(ci, 1, 2, 3)
    assert str(ours.value) == str(native.value)


def test_exceptions_propagate_with_the_user_frame() -> None:
    ci = splice.compile(None, raises_inside, int)
    with pytest.raises(ZeroDivisionError) as info:
        splice.invoke(ci, 0)
    frames = [(tb.tb_frame.f_code.co_name, tb.tb_lineno) for tb in _tb(info.value)]
    assert ("raises_inside", raises_inside.__code__.co_firstlineno + 1) in frames


def _tb(exc: BaseException) -> list[Any]:
    tb, found = exc.__traceback__, []
    while tb is not None:
        found.append(tb)
        tb = tb.tb_next
    return found


def test_unknown_argument_types_are_any() -> None:
    ci = splice.compile(None, poly)
    assert ci.argtypes == ()
    assert splice.invoke(ci, 2, 3) == poly(2, 3)
    assert splice.invoke(ci, 0.5, 4) == poly(0.5, 4)


def test_too_many_argument_types() -> None:
    with pytest.raises(TypeError, match="2 positional parameters"):
        splice.compile(None, poly, float, int, int)


def test_invalidated_instance_is_refused() -> None:
    def local(x):  # type: ignore[no-untyped-def]
        return x + 1
    ci = splice.compile(None, local, int)
    assert splice.invoke(ci, 1) == 2
    before = splice.world()
    ci.invalidate("for the test")
    assert not ci.valid and ci.max_world == before and splice.world() > before
    assert not ci.valid_in(splice.world()) and ci.valid_in(before)
    with pytest.raises(InvalidatedError, match="for the test"):
        splice.invoke(ci, 1)
    again = splice.compile(None, local, int)
    assert again is not ci and splice.invoke(again, 1) == 2


class _Recorder(splice.Plugin):
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def lowered(self, ir: FunctionIR) -> None:
        self.seen.append(("lowered", _annotated(ir)))

    def typed(self, ir: FunctionIR) -> None:
        self.seen.append(("typed", _annotated(ir)))

    def optimized(self, ir: FunctionIR) -> None:
        self.seen.append(("optimized", _annotated(ir)))


def _annotated(ir: FunctionIR) -> int:
    return sum(1 for s in walk(ir) for r in getattr(s, "results", ())
               if isinstance(r, Temp) and r.annotation is not None)


def test_stage_hooks_run_in_order_and_typed_ir_carries_types() -> None:
    plugin = _Recorder()
    splice.compile(plugin, poly, float, int)
    assert [stage for stage, _ in plugin.seen] == ["lowered", "typed", "optimized"]
    assert plugin.seen[0][1] == 0  # lowered IR has no types yet
    assert plugin.seen[1][1] > 0


class _Sqrt(splice.Plugin):
    """A typed pass that replaces math.sqrt by a function returning a marker."""

    def typed(self, ir: FunctionIR) -> None:
        from splice.ir.typed_tools import match_calls

        for call in match_calls(ir, math.sqrt, float):
            call.callee = _marker


def _marker(x):  # type: ignore[no-untyped-def]
    return -1.0


def root(x):  # type: ignore[no-untyped-def]
    return math.sqrt(x)


def test_a_typed_rewrite_changes_the_instance_only() -> None:
    plugin = _Sqrt()
    ci = splice.compile(plugin, root, float)
    assert splice.invoke(ci, 4.0) == -1.0
    assert root(4.0) == 2.0  # the original function is untouched
    generic = splice.compile(plugin, root)  # x: Any -> not rewritten
    assert splice.invoke(generic, 4.0) == 2.0


class _Keyed(splice.Plugin):
    def specialize(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return len(args[0]) if args and isinstance(args[0], list) else None


def first(xs):  # type: ignore[no-untyped-def]
    return xs[0]


def test_runtime_key_is_part_of_the_specialization() -> None:
    plugin = _Keyed()
    two = splice.compile(plugin, first, list, key=2)
    assert splice.compile(plugin, first, list, key=3) is not two
    assert splice.invoke(two, [5, 6]) == 5
    with pytest.raises(ArgumentTypeError, match="runtime key is 3"):
        splice.invoke(two, [5, 6, 7])


def test_code_typed_prints_types_and_return_type() -> None:
    listing = str(splice.code_typed(poly, float, int))
    assert "poly(float, int)" in listing
    assert "::" in listing and "float" in listing
    assert listing.splitlines()[-1].startswith("=> ")


def double(k):  # type: ignore[no-untyped-def]
    return k * 2


def calls_double():  # type: ignore[no-untyped-def]
    return double(21)


class _Aggressive(splice.Plugin):
    """Chooses an interpreter that specialises callees on constant arguments."""

    def __init__(self) -> None:
        from splice.infer import AbstractInterpreter, InferenceParams

        class Counting(AbstractInterpreter):
            runs = 0

            def infer(self, fn: Any, argtypes: Any) -> Any:
                type(self).runs += 1
                return super().infer(fn, argtypes)

        self.interpreter = Counting(InferenceParams(const_prop="aggressive"))


def test_the_plugin_chooses_the_interpreter() -> None:
    default = splice.compile(None, calls_double)
    plugin = _Aggressive()
    chosen = splice.compile(plugin, calls_double)
    assert type(plugin.interpreter).runs >= 1  # the callee double(int) may be built too
    assert default.return_type == Exact(int)
    assert chosen.return_type.is_const and chosen.return_type.value == 42
    assert splice.invoke(chosen) == splice.invoke(default) == calls_double() == 42


def test_a_dropped_plugin_frees_its_instances() -> None:
    import gc
    import weakref

    plugin = splice.Plugin()
    ci = splice.compile(plugin, poly, float, int)
    refs = [weakref.ref(plugin), weakref.ref(plugin.context), weakref.ref(ci)]
    del plugin, ci
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_concurrent_compiles_agree_on_one_instance() -> None:
    import threading

    plugin = splice.Plugin()
    barrier = threading.Barrier(8)
    found: list[Any] = []

    def work() -> None:
        barrier.wait()
        ci = splice.compile(plugin, poly, float, int)
        found.append((ci, splice.invoke(ci, 0.5, 6)))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(ci) for ci, _ in found}) == 1
    assert {result for _, result in found} == {poly(0.5, 6)}
    assert len([i for i in instances_of(plugin.context) if i.fn is poly]) == 1


def test_compile_gives_the_instance_of_that_function_object() -> None:
    """Instances are shared by closures of one code, but ``splice.compile`` returns one
    built for the function it was given: ``invoke`` runs it with that closure's cells,
    even once the closure itself is gone."""
    import gc

    def make(k):  # type: ignore[no-untyped-def]
        def add(x):  # type: ignore[no-untyped-def]
            return x + k
        return add

    plugin = splice.Plugin()
    one, two = make(1), make(2)
    first, second = splice.compile(plugin, one, int), splice.compile(plugin, two, int)
    assert first.fn is one and second.fn is two
    assert splice.invoke(first, 10) == 11 and splice.invoke(second, 10) == 12
    del one, two
    gc.collect()
    assert splice.invoke(first, 10) == 11 and splice.invoke(second, 10) == 12


def _as_text(x):  # type: ignore[no-untyped-def]
    return str(x)


class _Stringify(splice.Plugin):
    """A typed pass that changes the IR in place: math.sqrt becomes a call of str."""

    def typed(self, ir: FunctionIR) -> None:
        from splice.ir.typed_tools import match_calls

        for call in match_calls(ir, math.sqrt, float):
            call.callee = _as_text


class _Reads(splice.Plugin):
    """A typed pass that reads the IR and changes nothing."""

    def __init__(self) -> None:
        self.seen = 0

    def typed(self, ir: FunctionIR) -> FunctionIR:
        self.seen += sum(1 for _ in walk(ir))
        return ir


def test_ir_the_typed_hooks_changed_is_inferred_again_and_only_that() -> None:
    # the types of rewritten IR are those of the rewritten program (str, not float); IR the
    # hooks left as it was keeps its first inference (inferring it again gives the same)
    changed = splice.compile(_Stringify(), root, float)
    assert changed.retyped and changed.return_type == Exact(str)
    assert splice.invoke(changed, 4.0) == "4.0"
    reader = _Reads()
    kept = splice.compile(reader, root, float)
    assert reader.seen and not kept.retyped
    assert kept.return_type == changed.untyped_return_type == Exact(float)
    assert splice.invoke(kept, 4.0) == 2.0

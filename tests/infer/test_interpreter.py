"""Inference results per construct: types, folding, narrowing, edges, callees."""

from __future__ import annotations

import math

import pytest

from splice.infer import (
    ANY,
    AbstractInterpreter,
    Const,
    Exact,
    InferenceParams,
    PartialTuple,
    infer,
    join,
)
from splice.ir import nodes as N
from tests.infer import cases, holder_program


def test_loops_reach_a_fixpoint() -> None:
    assert infer(cases.loop_sum, [int]).return_type == Exact(int)
    assert infer(cases.while_float, [int]).return_type == Exact(float)


def test_narrowing_in_branches() -> None:
    assert infer(cases.narrowing, [int | None]).return_type == Exact(int)
    assert infer(cases.isinstance_narrowing, [int | str]).return_type == join(
        Exact(int), Exact(float))
    assert infer(cases.type_is, [int | bool]).return_type == Exact(int)


def test_try_finally_paths() -> None:
    result = infer(cases.try_finally, [int]).return_type
    assert isinstance(result, PartialTuple)
    assert Exact(int) <= result.items[0] and Exact(str) <= result.items[0]
    assert result.items[1] == Const(True)


def test_generators() -> None:
    assert infer(cases.use_gen, [int]).return_type == Exact(float)


def test_recursion_and_mutual_recursion() -> None:
    inf = infer(cases.fib, [int])
    assert inf.return_type == Exact(int)
    assert any(e.kind == "callee" and e.target is cases.fib for e in inf.edges)
    assert infer(cases.is_even, [int]).return_type == join(Const(True), Const(False))


def test_user_classes() -> None:
    inf = infer(cases.points, [int])
    assert inf.return_type == PartialTuple([Exact(float), Exact(int)])
    kinds = {(e.kind, getattr(e.target, "__name__", None), e.name) for e in inf.edges}
    assert ("attribute", "Point", "__init__") in kinds
    assert ("global", None, "Point") in kinds


def test_typeshed_and_builtin_methods() -> None:
    inf = infer(cases.strings, [list])
    assert inf.return_type == PartialTuple([Exact(str), Exact(int), Exact(str)])


def test_constant_folding() -> None:
    assert infer(cases.folding, []).return_type == PartialTuple(
        [Const(1027), Const(2), Const(3)])
    none = infer(cases.folding, [], params=InferenceParams(const_prop="none")).return_type
    assert none == PartialTuple([Exact(int), Exact(int), Exact(int)])


def test_globals_rebound_with_global_statement_are_not_assumed() -> None:
    assert infer(cases.uses_bump, [int]).return_type is ANY


def test_nonlocal_rebinding_is_not_assumed() -> None:
    assert infer(cases.nonlocal_counter, [int]).return_type is ANY


def test_with_that_may_swallow() -> None:
    result = infer(cases.with_block, [int]).return_type
    assert result.accepts(0) and result.accepts("after")


def test_typed_ir_carries_types_and_callees() -> None:
    inf = infer(cases.points, [int])
    calls = [s for s in inf.ir.walk() if isinstance(s, N.Assign) and isinstance(s.op, N.Call)]
    assert any(s.op.callee is cases.Point for s in calls)
    assert all(inf.callees[s.id] is s.op.callee for s in calls if s.id in inf.callees)
    temps = [t for s in inf.ir.walk() if isinstance(s, N.Assign) for t in s.results]
    assert temps and all(t.annotation is inf.types[t] for t in temps)
    assert inf.callee_inferences and inf.time > 0


def test_typed_ir_shares_constants_with_the_lowered_ir() -> None:
    def f(x):
        return x * 2.5, "a constant string"

    inf = infer(f, [float])
    assert inf.ir is not inf.base

    def constants(ir: N.FunctionIR) -> list[N.Const]:
        return [o for s in ir.walk() for o in s.operands() if isinstance(o, N.Const)]

    before, after = constants(inf.base), constants(inf.ir)
    assert len(after) == len(before) >= 2
    assert all(a.value is b.value for a, b in zip(before, after, strict=True))


def test_math_transfer() -> None:
    def f(x):
        return math.sqrt(x), math.floor(x), math.isnan(x)

    assert infer(f, [float]).return_type == PartialTuple(
        [Exact(float), Exact(int), Exact(bool)])
    # math.floor runs __floor__ (anything); sqrt and isnan build a float and a bool
    assert infer(f, [object]).return_type == PartialTuple([Exact(float), ANY, Exact(bool)])


def test_argument_forms() -> None:
    def f(x):
        return x

    assert infer(f, [int | None]).return_type == join(Exact(int), Const(None))
    assert infer(f, [Exact(float)]).return_type == Exact(float)


def test_interpreter_instance_caches() -> None:
    interp = AbstractInterpreter()
    first = interp.infer(cases.fib, [int])
    assert interp.infer(cases.fib, [int]).return_type == first.return_type
    assert any(key[0] is cases.fib for key in interp.cache)


@pytest.mark.parametrize("fn,argtypes,args", cases.ALL,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(cases.ALL)])
def test_construct_is_sound(fn, argtypes, args) -> None:  # type: ignore[no-untyped-def]
    from splice.infer.oracle import check_run
    inf = infer(fn, argtypes)
    report = check_run(inf, fn, *args)
    assert report.instrumented >= 1
    assert not report.violations, [str(v) for v in report.violations]


def test_containers_tracked_through_aliases() -> None:
    assert infer(cases.alias_mutation, [int]).return_type == join(Exact(float), Exact(str))
    # through an object's attribute: tracked where no code of the class's module may reach
    # the container otherwise (holder_program.py); cases.py reads attributes by a
    # computed name (``getattr(xs, name)``), which could reach and change ``h.items``
    assert infer(holder_program.via_object, [int]).return_type == join(Exact(int),
                                                                       Exact(str))
    assert infer(cases.via_object, [int]).return_type is ANY
    assert infer(cases.in_tuple, [int]).return_type == join(Exact(int), Exact(str))
    assert infer(cases.via_dict, [int]).return_type == join(Exact(int), Exact(str))
    assert infer(cases.dict_escape, [int]).return_type == join(Exact(int), Exact(str))
    nested = infer(cases.nested_lists, [int]).return_type
    assert isinstance(nested, PartialTuple) and Exact(str) <= nested.items[0]


def test_containers_reaching_unseen_code_are_not_assumed() -> None:
    for fn in (cases.closure_mutation, cases.opaque_mutation, cases.key_mutation,
               cases.via_global):
        assert infer(fn, [int]).return_type is ANY, fn.__name__


def test_edges_are_collected_transitively() -> None:
    inf = infer(cases.points, [int])
    direct = set(inf.edges)
    everything = set(inf.all_edges())
    assert direct <= everything
    # Point.__add__ reads the global Point inside the callee: only a transitive edge
    assert any(e.kind == "callee" and getattr(e.target, "__name__", "") == "__add__"
               for e in everything)
    assert any(e.kind == "global" and e.name == "float" for e in everything)


def test_params_union_width_depth_and_budget() -> None:
    assert infer(cases.narrowing, [int | None]).return_type == Exact(int)
    # a width of one cannot hold int | str: the union widens to Any
    narrow = InferenceParams(union_width=1)
    assert infer(cases.isinstance_narrowing, [int | str], params=narrow).return_type is ANY
    # no call is entered at depth 0 (the entry itself is at depth 0)
    shallow = InferenceParams(max_depth=1)
    assert infer(cases.points, [int], params=shallow).return_type == PartialTuple([ANY, ANY])
    # past the time budget no callee is entered either
    hurried = InferenceParams(time_budget=0.0)
    assert infer(cases.fib, [int], params=hurried).return_type is ANY


def test_native_callbacks_are_inferred() -> None:
    inf = infer(cases.callbacks, [int])
    assert inf.return_type == PartialTuple([Exact(str), Exact(str), Exact(int), Exact(str)])
    assert any(e.kind == "callee" and e.target is cases.by_length for e in inf.all_edges())
    # an item the callback stores into a global escapes; a lambda is not entered
    assert infer(cases.callback_effects, [int]).return_type.items[0] is ANY  # type: ignore[attr-defined]
    assert infer(cases.lambda_escape, [int]).return_type.items[0] is ANY  # type: ignore[attr-defined]


def test_folding_refuses_huge_results() -> None:
    def huge():
        return pow(10, 10**8), 2 ** 10**8, math.factorial(10**6)

    # as a module-level function would be: lower it from this file
    inf = infer(huge, [])
    assert inf.return_type == PartialTuple([Exact(int), Exact(int), Exact(int)])
    assert inf.time < 2.0


def test_attribute_edges_name_the_defining_class() -> None:
    inf = infer(cases.properties, [int])
    edges = {(e.kind, getattr(e.target, "__name__", None), e.name) for e in inf.all_edges()}
    assert ("attribute", "Celsius", "degrees") in edges
    inf = infer(cases.via_object, [int])
    edges = {(e.kind, getattr(e.target, "__name__", None), e.name) for e in inf.all_edges()}
    assert ("attribute", "Holder", "add") in edges
    assert ("attribute", "object", "__new__") not in edges
    inf = infer(cases.inherited, [int])
    edges = {(e.kind, getattr(e.target, "__name__", None), e.name) for e in inf.all_edges()}
    assert ("attribute", "Derived", "greet") in edges and ("attribute", "Base", "greet") in edges
    assert inf.return_type == Const("hi")


# ----------------------------------------------- functions made while the program runs

def test_local_functions_and_lambdas_are_inferred_when_called() -> None:
    from splice.infer.lattice import MadeFunction

    inference = infer(cases.local_functions, [float])
    result = inference.return_type
    assert isinstance(result, PartialTuple)
    assert result.items[0] == Exact(float)  # helper(x): x * 2.0, the default seen at def
    assert result.items[1] == Exact(int)  # twice(3)
    made = [t for t in inference.types.values() if isinstance(t, MadeFunction)]
    assert made and {m.code.co_name for m in made} == {"<lambda>"}  # (helper: a local)
    assert all(m <= Exact(type(cases.local_functions)) for m in made)


def test_a_closures_free_variable_is_any() -> None:
    assert infer(cases.closure_reads_a_cell, [float]).return_type is ANY


def test_lambdas_that_cannot_be_told_apart_stay_plain_functions() -> None:
    inference = infer(cases.two_lambdas_on_a_line, [int])
    result = inference.return_type
    assert isinstance(result, PartialTuple) and result.items == (ANY, ANY)


@pytest.mark.parametrize("fn, args", [(cases.local_functions, (2.5,)),
                                      (cases.closure_reads_a_cell, (1.0,)),
                                      (cases.two_lambdas_on_a_line, (3,))])
def test_made_functions_are_sound(fn, args) -> None:  # type: ignore[no-untyped-def]
    from splice.infer.oracle import check_run

    report = check_run(infer(fn, [type(a) for a in args]), fn, *args)
    assert report.instrumented >= 1 and report.raised is None
    assert not report.violations, [str(v) for v in report.violations]


def test_a_made_function_accepts_the_functions_of_its_code_and_defaults() -> None:
    from splice.infer.lattice import MadeFunction

    def make(d):  # type: ignore[no-untyped-def]
        def inner(a=d):  # type: ignore[no-untyped-def]
            return a
        return inner

    code = make.__code__.co_consts[1]
    made = MadeFunction(code, globals(), [Exact(int)])
    assert made.accepts(make(1)) and not made.accepts(make("s"))
    assert not made.accepts(cases.loop_sum) and not made.accepts(1)

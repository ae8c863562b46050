"""Every IR op and statement class is handled by each part that must know it: the printer,
the verifier, codegen and the abstract interpreter.

The per-construct cases (``tests/ir/cases``) are lowered; every class of ``splice.ir.nodes``
must occur in them (a class no case produces is untested everywhere), and for each case
function the printer must name every op it contains (no object repr), and the verifier,
codegen and inference must accept its IR.
"""

from __future__ import annotations

import importlib
import pkgutil
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import splice.ir
import tests.ir.cases as cases_package
from splice.compat import TYPE_PARAMETER_SYNTAX
from splice.errors import UnsupportedError
from splice.infer import AbstractInterpreter
from splice.ir import nodes
from splice.ir.nodes import FunctionIR, Op, Stmt
from splice.ir.tools import walk
from tests.modules import load

#: classes no lowering produces, with why
NOT_LOWERED: dict[type, str] = {
    nodes.Copy: "made by compiler passes (direct calls, routing), not by lowering",
    **({} if TYPE_PARAMETER_SYNTAX else {
        nodes.TypeAlias: "the `type` statement is syntax from 3.12 on"}),
}


def _classes(base: type) -> set[type]:
    return {value for value in vars(nodes).values()
            if isinstance(value, type) and issubclass(value, base) and value is not base}


def _case_functions() -> Iterator[types.FunctionType]:
    for info in pkgutil.iter_modules(cases_package.__path__):
        module = importlib.import_module(f"{cases_package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
                yield value


def _new_syntax_functions() -> Iterator[types.FunctionType]:
    """The cases of syntax the running version added (the case modules must parse on
    3.11), from tests/ir/test_new_syntax.py."""
    if not TYPE_PARAMETER_SYNTAX:
        return
    from tests.ir.test_new_syntax import EVALUATION_ORDER, NESTED_SCOPES

    folder = Path(tempfile.mkdtemp(prefix="splice-op-coverage-"))
    for index, source in enumerate([NESTED_SCOPES, EVALUATION_ORDER]):
        yield load(folder, f"new_syntax_{index}", source).main


def _lowered() -> list[FunctionIR]:
    found = []
    for fn in [*_case_functions(), *_new_syntax_functions()]:
        try:
            found.append(splice.ir.lower(fn))
        except UnsupportedError:
            continue
    return found


LOWERED = _lowered()


def _nested(node: object) -> Iterator[FunctionIR]:
    for value in vars(node).values() if hasattr(node, "__dict__") else (
            getattr(node, name, None) for name in getattr(type(node), "__slots__", ())):
        if isinstance(value, FunctionIR):
            yield value


def _seen(ir: FunctionIR) -> set[type]:
    """The node classes of ``ir`` and of the functions, lambdas, comprehensions and class
    bodies nested in it."""
    found: set[type] = set()
    for stmt in walk(ir):
        found.add(type(stmt))
        op = getattr(stmt, "op", None)
        for node in (stmt, op):
            for inner in _nested(node):
                found |= _seen(inner)
        if isinstance(op, Op):
            found.add(type(op))
    return found


def test_every_op_has_its_own_name_in_listings() -> None:
    """The printer shows an op by its ``opname``: one per class, or listings mislead."""
    names = [getattr(cls, "opname", None) for cls in _classes(Op)]
    assert None not in names and len(set(names)) == len(names)


def test_every_node_class_is_produced_by_some_case() -> None:
    seen: set[type] = set()
    for ir in LOWERED:
        seen |= _seen(ir)
    missing = (_classes(Op) | _classes(Stmt)) - seen - set(NOT_LOWERED)
    assert not missing, f"no per-construct case lowers to {sorted(c.__name__ for c in missing)}"


@pytest.mark.parametrize("ir", LOWERED, ids=lambda ir: ir.qualname)
def test_every_part_handles_the_ops_of_each_case(ir: FunctionIR) -> None:
    text = str(ir)
    for cls in _seen(ir) & _classes(Op):
        assert cls.opname in text, f"the listing does not show {cls.__name__}"
    assert "Pos(" not in text, "a listing shows an internal position"
    splice.ir.verify(ir)
    assert splice.ir.generate(ir)
    function = ir.function
    assert function is not None
    inference = AbstractInterpreter().infer(function, ())
    assert inference.ir is not None

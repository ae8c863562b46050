"""Objects written to the code cache as data (``splice.cache.references``)."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest

from splice.cache.references import NotStorable, decode, encode


@pytest.mark.parametrize("value", [
    len, dict, type, json.dumps, object.__new__,
    # the interpreter's classes that only ``types`` names (no ``builtins.function``)
    types.BuiltinMethodType, types.FunctionType, types.MethodType, type(None),
    types.CodeType, types.ModuleType,
    (1, "a", None), frozenset({1, 2}),
])
def test_round_trip_through_json(value: Any) -> None:
    data = json.loads(json.dumps(encode(value)))
    assert decode(data) is value or decode(data) == value


def test_an_object_no_module_names_is_not_storable() -> None:
    class Local:
        pass

    with pytest.raises(NotStorable):
        encode(Local)


class Shapes:
    @classmethod
    def unit(cls) -> Any:
        return cls()

    @staticmethod
    def zero() -> int:
        return 0


def test_the_functions_of_class_and_static_methods_round_trip() -> None:
    """``Shapes.unit`` binds the class method anew at each lookup: its qualified name
    names its function (deltablue's ``Strength.stronger``: instances calling it were
    never loaded from disk)."""
    for function in (vars(Shapes)["unit"].__func__, vars(Shapes)["zero"].__func__):
        data = json.loads(json.dumps(encode(function)))
        assert decode(data) is function


def test_an_edge_the_loader_cannot_find_is_refused_when_written() -> None:
    from splice.cache.stored_instances import findable

    def local() -> None:
        pass

    with pytest.raises(NotStorable, match="no module names"):
        findable(local)
    assert findable(json.dumps)[0] == "function"


def _make_wrapper() -> Any:
    def wrapper() -> int:
        return 1
    return wrapper


#: a function whose qualified name (``_make_wrapper.<locals>.wrapper``) names nothing, bound
#: at module level under another name
aliased_wrapper = _make_wrapper()


def test_an_object_bound_in_its_module_under_another_name_round_trips() -> None:
    import json.encoder

    for value in (aliased_wrapper, json.encoder.c_make_encoder):
        if value is None:  # (json without its C accelerator)
            continue
        data = json.loads(json.dumps(encode(value)))
        assert decode(data) is value
    assert encode(aliased_wrapper)[-1] == "aliased_wrapper"


def _wrap(fn: Any) -> Any:
    def wrapper() -> Any:
        return fn()
    return wrapper


def _wrapped_twice() -> int:
    return 2


#: ``_wrapped_twice`` itself is bound nowhere but in the cell ``fn`` of the inner wrapper,
#: itself held only in the cell ``fn`` of the outer one
twice_wrapped = _wrap(_wrap(_wrapped_twice))
_only_in_cells = _wrapped_twice
del _wrapped_twice


def test_an_object_held_only_in_closure_cells_round_trips_by_its_path() -> None:
    from splice.cache.stored_instances import findable

    global _only_in_cells
    target, _only_in_cells = _only_in_cells, None  # the module binds it nowhere now
    try:
        data = json.loads(json.dumps(encode(target)))
        assert data[-1] == "twice_wrapped.<cell:fn>.<cell:fn>"
        assert decode(data) is target
        assert findable(target)[1] == data[1:]
        # a cell that no longer holds it, or a path through what is not a function: refused
        with pytest.raises(NotStorable, match="no cell"):
            decode(["ref", __name__, "twice_wrapped.<cell:memo>"])
        with pytest.raises(NotStorable, match="not a function"):
            decode(["ref", __name__, "json.<cell:fn>"])
    finally:
        _only_in_cells = target

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

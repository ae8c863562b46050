"""Runtime-data specialisation under ``plugin.run`` (``Plugin.specialize``): instances per
(code, argument classes, key), stage hooks that see the key, a bound on keys per function,
invalidation through what the key-less instance relies on, and agreement with
``splice.compile(..., key=)``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import splice
from splice.ir.nodes import Const, FunctionIR, Return
from tests.modules import load

PROGRAM = """
    SCALE = 10

    def scaled(mode, x):
        return x * SCALE

    def main(modes, x):
        return [scaled(mode, x) for mode in modes]
"""


@pytest.fixture
def program(tmp_path: Path) -> Any:
    return load(tmp_path, "keys_program", PROGRAM)


class ByMode(splice.Plugin):
    """Keys calls of ``scaled`` by their mode; the ``typed`` hook bakes the key into the
    result (so instances of different keys give different answers)."""

    def __init__(self) -> None:
        self.keys_seen: list[Any] = []

    def specialize(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if getattr(fn, "__name__", "") == "scaled" and args:
            return args[0]
        return None

    def typed(self, ir: FunctionIR) -> FunctionIR | None:
        if ir.name != "scaled":
            return None
        self.keys_seen.append(ir.key)
        if ir.key is None:
            return None
        for stmt in ir.walk():
            if isinstance(stmt, Return):
                stmt.value = Const(f"{ir.key}!", stmt.pos)
        return ir


def test_each_key_gets_its_own_instance(program: Any) -> None:
    plugin = ByMode()
    assert plugin.run(program.main, ["a", "b", "a"], 2) == ["a!", "b!", "a!"]
    assert sorted(k for k in plugin.keys_seen if k is not None) == ["a", "b"], \
        "one instance per key, built once"
    plugin.run(program.main, ["b", "a"], 3)
    assert sorted(k for k in plugin.keys_seen if k is not None) == ["a", "b"]


def test_calls_without_a_key_run_the_keyless_instance(program: Any) -> None:
    class NoneForNumbers(ByMode):
        def specialize(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            key = super().specialize(fn, args, kwargs)
            return None if isinstance(key, int) else key

    plugin = NoneForNumbers()
    assert plugin.run(program.main, [1, "z"], 2) == [20, "z!"]


def test_keys_per_function_are_bounded(program: Any) -> None:
    plugin = ByMode()
    plugin.context.params = type(plugin.context.params)(max_keys=2)
    result = plugin.run(program.main, ["a", "b", "c", "d", "a"], 2)
    assert result == ["a!", "b!", 20, 20, "a!"], "beyond two keys: the key-less instance"
    assert len([k for k in plugin.keys_seen if k is not None]) == 2


def test_a_keyed_instance_is_invalidated_with_what_it_relies_on(program: Any) -> None:
    class Scaling(splice.Plugin):
        """Keys by mode but changes nothing: results follow the program's globals."""

        def specialize(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return args[0] if getattr(fn, "__name__", "") == "scaled" else None

        def typed(self, ir: FunctionIR) -> None:
            return None

    plugin = Scaling()
    assert plugin.run(program.main, ["a"], 2) == [20]
    program.SCALE = 100
    assert plugin.run(program.main, ["a"], 2) == [200]


def test_compile_with_a_key_agrees_with_run(program: Any) -> None:
    plugin = ByMode()
    plugin.run(program.main, ["a"], 2)
    ci = splice.compile(plugin, program.scaled, str, int, key="a")
    assert splice.invoke(ci, "a", 5) == "a!"
    assert ci.specialization.key == "a"
    built = len(plugin.keys_seen)
    assert splice.compile(plugin, program.scaled, str, int, key="a") is ci
    assert len(plugin.keys_seen) == built


def test_a_key_without_specialize_is_refused(program: Any) -> None:
    class Typed(splice.Plugin):
        def typed(self, ir: FunctionIR) -> None:
            return None

    with pytest.raises(TypeError, match="defines no specialize hook"):
        splice.compile(Typed(), program.scaled, str, int, key="a")


def test_a_failing_specialize_is_a_plugin_error(program: Any) -> None:
    class Broken(ByMode):
        def specialize(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            raise ValueError("boom")

    with pytest.raises(splice.PluginError, match=r"Broken\.specialize.*boom") as info:
        Broken().run(program.main, ["a"], 2)
    assert isinstance(info.value.__cause__, ValueError)

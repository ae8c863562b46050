"""One table of hooks (``splice.hooks``): which plugins of a stack override which hook,
computed in one place that the compiler and the runtime ask."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import splice
from splice.hooks import CALL_HOOKS, COMPILE_HOOKS, IR_STAGES, Hooks, HookTable, overrides
from splice.ir.nodes import FunctionIR

ROOT = Path(splice.__file__).parent


class Pre(splice.Plugin):
    def prehook(self, fn: Any, args: Any, kwargs: Any) -> None:
        pass


class Post(splice.Plugin):
    def posthook(self, result: Any, fn: Any, args: Any, kwargs: Any) -> None:
        pass


class Lowered(splice.Plugin):
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def lowered(self, ir: FunctionIR) -> None:
        self.log.append(self.name)


class Picky(splice.Plugin):
    def recurse(self, fn: Any) -> bool:
        return fn.__name__ != "skipped"


def test_every_hook_of_a_plugin_has_a_default_in_the_table() -> None:
    names = {*IR_STAGES, *CALL_HOOKS, *COMPILE_HOOKS, "recurse", "specialize",
             "interpreter"}
    assert names <= set(vars(Hooks))
    # a Plugin adds no hook of its own: its hooks are Hooks' defaults
    assert not {name for name in names if name in vars(splice.Plugin)}


def test_overrides_are_computed_per_stack() -> None:
    pre, post, plain = Pre(), Post(), splice.Plugin()
    table = HookTable.of((pre, post, plain))
    assert table.prehooks == (pre,) and table.posthooks == (post,)
    assert table.overdubs == () and table.hooked
    assert table.stages == {"lowered": (), "typed": (), "optimized": ()}
    assert table.recurse_everywhere and not table.typed_stages
    assert not HookTable.of((plain,)).hooked
    assert overrides(pre, "prehook") and not overrides(pre, "posthook")


def test_posthooks_run_innermost_first() -> None:
    a, b = Post(), Post()
    assert HookTable.of((a, b)).posthooks == (b, a)


def test_stage_hooks_run_outermost_first() -> None:
    log: list[str] = []
    outer, inner = Lowered(log, "outer"), Lowered(log, "inner")

    def f(x: int) -> int:
        return x + 1
    assert splice.compose(outer, inner).run(f, 1) == 2
    assert log == ["outer", "inner"]


def test_a_stage_hook_returning_the_wrong_kind_is_a_plugin_error() -> None:
    class Bad(splice.Plugin):
        def typed(self, ir: FunctionIR) -> Any:
            return 42

    ir = splice.ir.lower(test_posthooks_run_innermost_first)
    with pytest.raises(splice.PluginError, match="typed hooks return None or a FunctionIR"):
        HookTable.of((Bad(),)).run_stage("typed", ir, test_posthooks_run_innermost_first)


def test_decide_follows_each_plugins_recurse() -> None:
    picky, plain = Picky(), splice.Plugin()
    table = HookTable.of((picky, plain))
    assert not table.recurse_everywhere

    def skipped() -> None: ...

    def entered() -> None: ...
    assert table.decide(skipped) == (plain,)
    assert table.decide(entered) == (picky, plain)


def _compares_a_hook_with_plugin(tree: ast.AST) -> bool:
    """``type(p).typed is not Plugin.typed`` and the like: a second place deciding which
    hooks a plugin overrides."""
    hooks = {*IR_STAGES, *CALL_HOOKS, "recurse", "specialize"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot))
                                                 for op in node.ops):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Attribute) and side.attr in hooks and \
                        isinstance(side.value, ast.Name) and "lugin" in side.value.id:
                    return True
    return False


def test_no_module_but_the_table_decides_what_a_plugin_overrides() -> None:
    found = [str(path.relative_to(ROOT)) for path in sorted(ROOT.rglob("*.py"))
             if path.name != "hooks.py" and _compares_a_hook_with_plugin(
                 ast.parse(path.read_text()))]
    assert found == []


class Timing(splice.Plugin):
    def __init__(self) -> None:
        self.compiles: list[tuple[object, int, int]] = []

    def compiled(self, fn: Any, start_ns: int, end_ns: int) -> None:
        self.compiles.append((fn, start_ns, end_ns))


def test_compiles_are_reported_once_each_outermost_first() -> None:
    def leaf(x: int) -> int:
        return x + 1

    def top(x: int) -> int:
        return leaf(x) * 2

    plugin = Timing()
    assert HookTable.of((plugin,)).compile_observers == (plugin,)
    assert plugin.run(top, 1) == 4
    reported = [fn for fn, _, _ in plugin.compiles]
    assert top in reported and leaf in reported
    assert all(start <= end for _, start, end in plugin.compiles)
    count = len(plugin.compiles)
    assert plugin.run(top, 2) == 6
    assert len(plugin.compiles) == count  # compiled once: nothing more to report


def test_a_failing_compiled_hook_is_a_plugin_error() -> None:
    class Broken(splice.Plugin):
        def compiled(self, fn: Any, start_ns: int, end_ns: int) -> None:
            raise ValueError("broken observer")

    def f() -> int:
        return 1
    with pytest.raises(splice.PluginError, match="compiled") as info:
        Broken().run(f)
    assert isinstance(info.value.__cause__, ValueError)

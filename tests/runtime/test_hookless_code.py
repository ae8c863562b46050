"""Pay for what you use: a context without per-call hooks generates exactly the code it
generated before the implicit-call routing reached attributes, ``async for``, chained
comparisons and class statements. ``hookless_code.json`` holds the code generated for
``hookless_sample`` before that work (main at b5134be, the same at e8cac15), regenerated
for the changes meant to alter hookless code since (calls of globals through inline-cache
sites, builtin methods of displays called as natively, one receiver test for a method
call whose arguments need no statements, a local receiver passed again to the method
found on its class); regenerate it only for such a
change (``python -m tests.runtime.test_hookless_code`` records it)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

import splice
from splice.ir import generate, lower
from tests.runtime import hookless_sample

EXPECTED: dict[str, str] = json.loads(
    (pathlib.Path(__file__).parent / "hookless_code.json").read_text())


class Identity(splice.Plugin):
    """No hooks: no implicit-call routing."""


def _target(path: str) -> Any:
    target: Any = hookless_sample
    for part in path.split("."):
        target = getattr(target, part)
    return target


def hookless_code(key: str) -> str:
    name, plain = key.rsplit("-", 1)
    fn = _target(name)
    context = Identity().context
    assert context.implicit is None
    ir = lower(fn).copy()
    ir.function = fn
    context._route(ir, plain=plain == "True")
    return generate(ir)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_hookless_code_is_unchanged(key: str) -> None:
    assert hookless_code(key) == EXPECTED[key]


def test_the_sample_is_routed_under_hooks() -> None:
    """The same sample does change under hooks (the comparison above can fail)."""

    class Hooked(splice.Plugin):
        def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            pass

    context = Hooked().context
    fn = hookless_sample.operators
    ir = lower(fn).copy()
    ir.function = fn
    context._route(ir, plain=False)
    assert generate(ir) != EXPECTED["operators-False"]


if __name__ == "__main__":
    # ``python -m tests.runtime.test_hookless_code``: record the code generated now
    (pathlib.Path(__file__).parent / "hookless_code.json").write_text(
        json.dumps({key: hookless_code(key) for key in sorted(EXPECTED)}, indent=1,
                   sort_keys=True) + "\n")

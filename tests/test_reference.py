"""docs/reference.md lists every public name and every hook with its exact signature."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import splice
import splice.ir
import splice.ir.tools
import splice.ir.typed_tools
import splice.plugins
from splice.hooks import CALL_HOOKS, COMPILE_HOOKS, IR_STAGES, Hooks

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "reference.md").read_text()
HOOKS = ["recurse", *CALL_HOOKS, *IR_STAGES, "specialize", *COMPILE_HOOKS]


def _section(title: str) -> str:
    start = PAGE.index(f"## {title}\n")
    end = PAGE.find("\n## ", start + 1)
    return PAGE[start:] if end < 0 else PAGE[start:end]


#: every public module the docs promise: its ``__all__`` is listed in its own section
MODULES = [splice, splice.ir, splice.ir.tools, splice.ir.typed_tools, splice.plugins]

#: modules whose every name is listed with its exact signature (``name(params) -> ret``)
WITH_SIGNATURES = [splice.ir.tools, splice.ir.typed_tools]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_public_name_is_listed(module: object) -> None:
    section = _section(f"`{module.__name__}`")  # type: ignore[attr-defined]
    missing = [name for name in module.__all__  # type: ignore[attr-defined]
               if not re.search(rf"`{re.escape(name)}[`(]", section)]
    assert not missing, f"docs/reference.md does not list {missing}"


@pytest.mark.parametrize("module", WITH_SIGNATURES, ids=lambda m: m.__name__)
def test_every_ir_tool_is_listed_with_its_signature(module: object) -> None:
    section = _section(f"`{module.__name__}`")  # type: ignore[attr-defined]
    wrong = []
    for name in module.__all__:  # type: ignore[attr-defined]
        text = str(inspect.signature(getattr(module, name))).replace("'", "")
        if f"`{name}{text}`" not in section:
            wrong.append(f"{name}{text}")
    assert not wrong, f"docs/reference.md lacks these exact signatures: {wrong}"


def _signature(hook: str) -> str:
    signature = inspect.signature(getattr(Hooks, hook))
    text = str(signature).replace("'", "")
    return f"{hook}{text}"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_listed_with_its_signature(hook: str) -> None:
    section = _section("Plugin hooks").replace("\\|", "|")
    assert f"`{_signature(hook)}`" in section


def test_every_plugin_attribute_is_listed() -> None:
    section = _section("Plugin hooks")
    attributes = [name for name, value in vars(splice.Plugin).items()
                  if not name.startswith("_") and not callable(value)
                  and not isinstance(value, property)]
    attributes += ["interpreter"]
    assert [name for name in attributes if f"`{name}`" not in section] == []

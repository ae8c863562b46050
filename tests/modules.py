"""Importing a program written by a test, from a file (so splice finds its source as it
finds any module's)."""

from __future__ import annotations

import importlib.util
import textwrap
import types
from pathlib import Path


def load(folder: Path, name: str, source: str) -> types.ModuleType:
    """Import ``source`` (dedented) as module ``name`` from a file in ``folder``."""
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(f"splice_test_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

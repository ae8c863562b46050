"""The C extensions are built, current, and found by splice's loaders, for this interpreter.

pyproject.toml declares them ``optional = true``: a build that fails is silent and leaves
whatever was built before in place, and every loader (``splice.runtime.native`` and the
``except ImportError`` around the others) then falls back to its Python form without a
word. So, for each ``[[tool.setuptools.ext-modules]]`` entry: a file built for this
interpreter (``importlib.machinery.EXTENSION_SUFFIXES``) imports; it is not older than its
sources, its declared ``depends`` and the headers they ``#include "..."`` from the
repository; and the loaders hold the extensions' objects, not their fallbacks. A fresh clone
builds after checkout, so the built files are the newer there.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import re
import sys
import sysconfig
import tomllib
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
REBUILD = "run `pip install -e . --no-deps` (with this interpreter's pip) to rebuild"

with (ROOT / "pyproject.toml").open("rb") as _file:
    EXTENSIONS: list[dict[str, Any]] = tomllib.load(_file)["tool"]["setuptools"]["ext-modules"]

pytestmark = pytest.mark.skipif(sys.implementation.name != "cpython",
                                reason="the extensions are CPython's C API")

_LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def _built(name: str) -> Path:
    """The file ``name`` is imported from: an extension built for this interpreter."""
    spec = importlib.util.find_spec(name)
    leaf = name.rpartition(".")[2]
    expected = ", ".join(leaf + suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES)
    assert spec is not None and spec.origin is not None, (
        f"{name} is not built for this interpreter (none of {expected}): {REBUILD}")
    assert isinstance(spec.loader, importlib.machinery.ExtensionFileLoader) and \
        spec.origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), (
            f"{name} is imported from {spec.origin}, not an extension built for this "
            f"interpreter ({expected}): {REBUILD}")
    return Path(spec.origin)


def _inputs(extension: dict[str, Any]) -> list[Path]:
    """The files ``extension`` is built from: its sources and declared ``depends``, and the
    repository's headers they include (``#include "..."``, found beside the includer;
    ``#include "internal/..."`` of CPython's is not the repository's)."""
    pending = [ROOT / path for path in [*extension["sources"], *extension.get("depends", [])]]
    for path in pending:
        assert path.is_file(), f"pyproject.toml names {path}, which does not exist"
    found: list[Path] = []
    while pending:
        path = pending.pop()
        if path in found:
            continue
        found.append(path)
        for included in _LOCAL_INCLUDE.findall(path.read_text(encoding="utf-8")):
            header = path.parent / included
            if header.is_file():
                pending.append(header)
    return found


@pytest.mark.parametrize("extension", EXTENSIONS, ids=[e["name"] for e in EXTENSIONS])
def test_built_for_this_interpreter(extension: dict[str, Any]) -> None:
    built = _built(extension["name"])
    error = None
    try:
        importlib.import_module(extension["name"])
    except ImportError as exc:
        error = exc
    assert error is None, f"{built} does not import ({error}): {REBUILD}"


@pytest.mark.parametrize("extension", EXTENSIONS, ids=[e["name"] for e in EXTENSIONS])
def test_not_older_than_its_sources(extension: dict[str, Any]) -> None:
    """An optional build that failed leaves the old file: it must not predate a source."""
    built = _built(extension["name"])
    built_at = built.stat().st_mtime_ns
    newer = [path for path in _inputs(extension) if path.stat().st_mtime_ns > built_at]
    assert not newer, (
        f"{built.relative_to(ROOT) if built.is_relative_to(ROOT) else built} is stale: "
        f"older than {', '.join(str(path.relative_to(ROOT)) for path in newer)} (a build "
        f"that failed leaves the old one, optional = true); {REBUILD}")


def test_native_loader_found_every_name() -> None:
    """Every name of ``splice.runtime.native`` is the extension's, not its fallback: the
    objects callables, ``HANDS_OVER`` the ``_hooks`` module's own bool."""
    from splice.runtime import native

    fallbacks = [name for name in native.__all__ if name != "HANDS_OVER"
                 and not callable(getattr(native, name))]
    assert not fallbacks, f"splice.runtime.native fell back for {fallbacks}: {REBUILD}"
    from splice.runtime import _hooks  # (imported: HOOKED is its Hooked)

    assert isinstance(native.HANDS_OVER, bool)
    assert native.HANDS_OVER is _hooks.HANDS_OVER


def test_other_loaders_found_the_extensions() -> None:
    """The loaders outside ``native`` did not fall back either."""
    from splice import compat, keys
    from splice.cache import guards
    from splice.plugin import Plugin
    from splice.plugins import tracer
    from splice.runtime import dunders, weakkeys

    hooks = sys.modules.get("splice.runtime._hooks")
    fell_back = {
        "splice.cache.guards.GuardCheck": guards.GuardCheck is None,
        "splice.keys.ClassSet": keys.ClassSet is keys._PythonClassSet,
        "splice.runtime.dunders.drive": dunders.drive is dunders._drive_in_python,
        "splice.runtime.weakkeys.WeakKey": weakkeys.WeakKey is weakkeys._PythonWeakKey,
        "splice.runtime.exec_watch (_hooks.watch_compiles)":
            not callable(getattr(hooks, "watch_compiles", None)),
        "splice.Plugin.recurse_call": isinstance(Plugin.__dict__["recurse_call"],
                                                 types.FunctionType),
        "splice.Plugin.run": isinstance(Plugin.__dict__["run"], types.FunctionType),
        "splice.plugins.tracer._Recorder": tracer._Recorder is None,
        "splice.compat.versioned": compat.versioned is compat._unversioned,
    }
    fallbacks = [name for name, fell in fell_back.items() if fell]
    assert not fallbacks, f"the Python forms run for {fallbacks}: {REBUILD}"


def test_hands_over_where_the_headers_are() -> None:
    """``HANDS_OVER`` is decided when ``_hooks`` is built (``_cstack.h``): on 3.11 to 3.13
    with the GIL, where CPython's internal headers are installed. Where this interpreter has
    them, a False says the build did not see them (built before they were installed)."""
    from splice.runtime import native

    header = Path(sysconfig.get_path("include"), "internal", "pycore_frame.h")
    if not ((3, 11) <= sys.version_info[:2] <= (3, 13)
            and not sysconfig.get_config_var("Py_GIL_DISABLED") and header.is_file()):
        pytest.skip(f"no hand-over on this interpreter (or no {header}): False is right")
    assert native.HOOKED is not None, f"splice.runtime._hooks is not built: {REBUILD}"
    assert native.HANDS_OVER, f"{header} is installed but _hooks was built without it: " \
        f"{REBUILD}"


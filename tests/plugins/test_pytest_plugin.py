"""The ``splice_patch`` pytest fixture, registered by the ``pytest11`` entry point, run in a
pytest of its own (a subprocess)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = '''
import threading

import pytest

from splice.plugins import Patch
from tests.plugins import patchee


def test_fixture_is_a_fresh_patch(splice_patch):
    assert isinstance(splice_patch, Patch)
    assert splice_patch.replacements == {}
    splice_patch.replace(patchee.fetch, lambda key: "fake")
    assert splice_patch.run(patchee.load, "k") == "FAKE"
    assert patchee.load("k") == "REAL:K"


def test_next_test_sees_nothing_of_the_last(splice_patch):
    assert splice_patch.replacements == {}
    assert splice_patch.run(patchee.load, "k") == "REAL:K"


def test_attribute(splice_patch):
    splice_patch.setattr(patchee, "RATE", 100)
    assert splice_patch.run(patchee.price, 2) == 200
    assert patchee.price(2) == 4


def test_other_threads_unaffected(splice_patch):
    splice_patch.replace(patchee.fetch, lambda key: "fake")
    barrier = threading.Barrier(2)
    seen = {}
    other = threading.Thread(target=lambda: seen.setdefault(
        "other", patchee.wait_and_load(barrier, "k")))
    other.start()
    seen["patched"] = splice_patch.run(patchee.wait_and_load, barrier, "k")
    other.join()
    assert seen == {"patched": "FAKE", "other": "REAL:K"}
'''


def test_entry_point_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {
        "splice": "splice.plugins.pytest_plugin"}


def test_fixture_in_a_pytest_run(tmp_path: Path) -> None:
    (tmp_path / "test_uses_fixture.py").write_text(textwrap.dedent(TESTS))
    installed = any(e.value == "splice.plugins.pytest_plugin"
                    for e in importlib.metadata.entry_points(group="pytest11"))
    # without the installed entry point (a source checkout), load the plugin by name
    extra = [] if installed else ["-p", "splice.plugins.pytest_plugin"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra,
         "test_uses_fixture.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout

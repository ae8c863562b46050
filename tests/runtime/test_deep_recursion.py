"""Deep recursion under a context: never a crash, and the depth CPython allows.

Natively a Python-to-Python call costs no C stack; through splice's C callables (per-call
hooks, specializing entries, constructors) each level re-enters the interpreter from C.
splice/runtime/_cstack.h guards the C stack (a RecursionError where the stack would
overflow) and, from 3.12, gives back the C recursion budget its own calls spend. Each run
is a child process, since what this guards against is a segmentation fault."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from splice.runtime import native

PROGRAM = Path(__file__).with_name("deep") / "recursion_program.py"
SHAPES = ["plain", "constructor", "method", "callable_object"]


def depths(limit: int, *shapes: str) -> dict[tuple[str, str], int]:
    done = subprocess.run([sys.executable, str(PROGRAM), str(limit), *shapes],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    found = {}
    for line in done.stdout.splitlines():
        shape, mode, depth = line.split()
        found[shape, mode] = int(depth)
    return found


@pytest.mark.parametrize("shape", SHAPES)
def test_a_raised_recursion_limit_never_crashes(shape: str) -> None:
    # 20000 levels: natively no C stack for plain and method recursion; under a context
    # each level may cost C stack, which the guard turns into RecursionError in time
    found = depths(20_000, shape)
    assert set(found) == {(shape, mode) for mode in
                          ("native", "context", "hooked", "tracer", "typed")}
    native_depth = found[shape, "native"]
    for (_, mode), depth in found.items():
        # deeper than the default limit allows, where native is (3.12.1 bounds recursion
        # through type.__call__ by its C budget at about 500)
        assert depth > min(1000, native_depth - 10), (mode, depth, native_depth)
    if shape not in ("constructor", "callable_object"):
        # no C callable between the frames without hooks: the native depth
        assert found[shape, "context"] >= found[shape, "native"] - 10


@pytest.mark.skipif(native.HOOKED is None, reason="the C hooks are not built")
def test_the_default_limit_is_reached_as_natively() -> None:
    found = depths(1000, *SHAPES)
    for shape in ("plain", "method"):
        for mode in ("context", "hooked", "tracer", "typed"):
            assert found[shape, "native"] - 10 <= found[shape, mode] <= found[shape, "native"], \
                (shape, mode, found)
    if sys.version_info < (3, 13):
        # a constructor spends what type.__call__ spends natively (3.13: see _cstack.h)
        for mode in ("context", "tracer"):
            assert abs(found["constructor", mode] - found["constructor", "native"]) <= 5, \
                (mode, found)
    for mode in ("context", "tracer"):
        # a callable object's call spends what its class's call slot spends natively
        assert abs(found["callable_object", mode] - found["callable_object", "native"]) <= 10, \
            (mode, found)

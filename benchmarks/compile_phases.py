"""Where a cold compile's time goes: splice's pipeline stages and the parts of codegen,
summed over the functions the first run of each program builds under the identity plugin.

    python benchmarks/compile_phases.py                      # pyperformance programs
    python benchmarks/compile_phases.py --only deltablue,go

The programs are those of ``benchmarks/outside.py`` (pyperformance's files, installed with
``pip install --no-deps pyperformance``), each loaded afresh and run once under a new
``splice.Plugin()`` in this one process (so the first program also pays for what splice
imports lazily). Each stage of ``splice.compiler.stages.STAGES`` and each step of
``splice.ir.assemble.compile_code`` is timed by wrapping it (``time.perf_counter``, no
profiler, whose cost per call would swamp the many small functions of the compiler). The
parts of codegen are inside its stage's time: the stages add up to the compile time.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import importlib
import os
import sys
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (ROOT, HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from outside import NAMES, load  # noqa: E402

import splice  # noqa: E402

#: the steps of ``compile_code`` timed apart (module-level functions of splice.ir.assemble)
CODEGEN_STEPS = ("generate_function", "release_temps", "to_constants", "scaffold",
                 "_compile_quietly", "substitute")

TIMES: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()


def _timed(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[label] += time.perf_counter() - start
            CALLS[label] += 1
    return timed


def instrument() -> None:
    """Wrap the stages and codegen's steps (for this process only)."""
    stages = importlib.import_module("splice.compiler.stages")
    assemble = importlib.import_module("splice.ir.assemble")
    stages.STAGES = tuple(dataclasses.replace(stage, run=_timed(stage.run, stage.name))
                          for stage in stages.STAGES)
    for name in CODEGEN_STEPS:
        setattr(assemble, name, _timed(getattr(assemble, name), "codegen: " + name))
    stages.lowered_ir_of = _timed(stages.lowered_ir_of, "lower: lowering")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated programs (default: all of outside.py)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else NAMES
    instrument()
    print(f"{'program':16s} {'native ms':>10s} {'first run ms':>13s}")
    for name in names:
        _, native_call = load(name, "native")
        start = time.perf_counter()
        native_call()
        native = time.perf_counter() - start
        _, call = load(name, "identity")
        start = time.perf_counter()
        splice.Plugin().run(call)
        first = time.perf_counter() - start
        print(f"{name:16s} {native * 1e3:10.1f} {first * 1e3:13.1f}")
    built = CALLS["codegen"]
    total = sum(TIMES[label] for label in TIMES if ":" not in label)
    print(f"\n{built} functions built, {total * 1e3:.0f} ms in the stages "
          f"({total / max(built, 1) * 1e3:.2f} ms a function)\n")
    print(f"{'phase':28s} {'ms':>8s} {'calls':>6s} {'ms each':>8s} {'share':>6s}")
    for label, seconds in sorted(TIMES.items(), key=lambda item: -item[1]):
        if seconds * 1e3 < 0.5:
            continue
        print(f"{label:28s} {seconds * 1e3:8.0f} {CALLS[label]:6d} "
              f"{seconds / CALLS[label] * 1e3:8.2f} {seconds / total:6.0%}")


if __name__ == "__main__":
    main()

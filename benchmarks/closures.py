"""The cost of creating and calling a closure, natively and under plugins.

``churn(n)`` makes ``n`` closures (``make(k)`` returns a new function object of one code
object each time) and calls each once. Each configuration runs it after a warm-up, in
rounds interleaved with the others, and the median time per closure is printed:

* ``native``: ``churn`` run natively;
* ``plain``: under a plugin with no hook (transformed code, a dispatch-table entry per
  closure);
* ``typed``: under a plugin with a ``typed`` hook that changes nothing, so every function
  runs code instances through a ``SpecializingEntry`` (instances are shared by the closures
  of one code object: see docs/instances.md).

Relative figures on a shared machine: noisy; compare configurations of one run.

Usage: ``python benchmarks/closures.py [--n N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import splice  # noqa: E402


class Typed(splice.Plugin):
    """A ``typed`` hook that changes nothing."""

    def typed(self, ir: Any) -> None:
        return None


def make(k):  # type: ignore[no-untyped-def]
    def add(x):  # type: ignore[no-untyped-def]
        return x + k
    return add


def churn(n):  # type: ignore[no-untyped-def]
    total = 0
    for i in range(n):
        total += make(i)(1)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000, help="closures per round")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    runners = {"native": churn, "plain": splice.Plugin().wrap(churn),
               "typed": Typed().wrap(churn)}
    expected = churn(options.n)
    for run in runners.values():
        assert run(options.n) == expected  # warm-up, and the same result everywhere
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(options.rounds):
        for name, run in runners.items():
            start = time.perf_counter()
            run(options.n)
            times[name].append((time.perf_counter() - start) / options.n)
    for name, found in times.items():
        print(f"{name:>7}: {statistics.median(found) * 1e6:9.1f} us per closure")


if __name__ == "__main__":
    main()

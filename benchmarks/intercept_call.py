"""What one intercepted call costs (issue 3): a loop calling ``f(i)`` natively, under an
intercepting plugin in a dynamic scope and in a transformed context, and with a hand-made
``mock.patch`` of ``f``, each way against native in the same run.

    python benchmarks/intercept_call.py              # ns per call added (best of 15)
    python benchmarks/intercept_call.py --callgrind  # instructions per call (valgrind)
    python benchmarks/intercept_call.py --python-recurse-call   # without splice's C method

The plugins' methods come in two shapes: ``(*args, **kwargs)`` with a counter, as in
``plugins.py``, and ``(x)``, the target's own signature; the hand-made patch has the first
shape. With ``--callgrind`` each variant runs under ``valgrind --tool=callgrind`` at two
loop sizes and the difference of the instruction counts, divided by the difference of the
sizes, is the cost of one iteration (the interpreter's start-up cancels out).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from plugins import Monkeypatch, intercepting  # noqa: E402

import splice  # noqa: E402


def f(x: int) -> int:
    return x + 1


def loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += f(i)
    return total


def plugin(*, dynamic: bool, any_arguments: bool) -> splice.Plugin:
    """An intercepting plugin for ``f`` that goes on with ``recurse_call``: plugins.py's
    (``*args, **kwargs`` and a counter), or one with ``f``'s own signature."""
    if any_arguments:
        return intercepting(f, dynamic=dynamic)

    class Direct(splice.Plugin):
        dynamic_scope = dynamic

        @splice.intercept(f)
        def f(self, x: int) -> Any:
            return self.recurse_call(f, x)
    return Direct()


def patched(n: int) -> int:
    """``loop`` with ``f`` patched by hand (plugins.py's ``Monkeypatch``)."""
    return int(Monkeypatch(sys.modules[__name__], f).run(loop, n))


def variants() -> dict[str, Callable[[int], int]]:
    runs: dict[str, Callable[[int], int]] = {"native": loop}
    for dynamic, mode in ((True, "dynamic scope"), (False, "transformed")):
        for any_arguments, shape in ((True, "*args, **kwargs"), (False, "(x)")):
            chosen = plugin(dynamic=dynamic, any_arguments=any_arguments)
            runs[f"{mode}, method {shape}"] = \
                lambda n, chosen=chosen: chosen.run(loop, n)  # type: ignore[misc]
    runs["mock.patch, wrapper *args, **kwargs"] = patched
    return runs


def timed(n: int, repeats: int) -> dict[str, float]:
    """ns per iteration, best of ``repeats`` interleaved runs."""
    runs = variants()
    expected = loop(n)
    best = {label: float("inf") for label in runs}
    for _ in range(repeats):
        for label, run in runs.items():
            start = time.perf_counter()
            result = run(n)
            best[label] = min(best[label], time.perf_counter() - start)
            assert result == expected, label
    return {label: seconds / n * 1e9 for label, seconds in best.items()}


def instructions(label: str, n: int, python_method: bool) -> int:
    """Instructions of a whole interpreter running ``label`` with ``n`` iterations."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               sys.executable, __file__, "--worker", label, "--n", str(n)]
    if python_method:
        command.append("--python-recurse-call")
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    for line in done.stderr.splitlines():
        if "Collected" in line:
            return int(line.split()[-1])
    raise RuntimeError(f"no instruction count from valgrind: {done.stderr[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callgrind", action="store_true",
                        help="instructions per call under valgrind instead of times")
    parser.add_argument("--python-recurse-call", action="store_true",
                        help="use the Python Plugin.recurse_call, not the C one")
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    built = splice.Plugin.__dict__["recurse_call"]
    if args.python_recurse_call:
        splice.Plugin.recurse_call = getattr(built, "__wrapped__", built)  # type: ignore
    if args.worker:
        run = variants()[args.worker]
        run(100)  # compiled and patched before the counted run
        run(args.n)
        return
    method = type(splice.Plugin.__dict__["recurse_call"]).__name__  # RecurseCall: the C one
    print(f"Python {sys.version.split()[0]}, Plugin.recurse_call: {method}")
    if args.callgrind:
        small, large = 20_000, 60_000
        per_call = {label: (instructions(label, large, args.python_recurse_call)
                            - instructions(label, small, args.python_recurse_call))
                    / (large - small) for label in variants()}
        native = per_call["native"]
        for label, count in per_call.items():
            print(f"{label:40} {count:8.0f} instructions per call  +{count - native:6.0f}")
        return
    per_call = timed(args.n, 15)
    native = per_call["native"]
    for label, ns in per_call.items():
        print(f"{label:40} {ns:8.0f} ns per call  +{ns - native:6.0f}")


if __name__ == "__main__":
    main()

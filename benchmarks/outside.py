"""Programs nobody here wrote: pyperformance's pure-Python benchmarks, natively, under the
identity plugin and under a plugin whose only hook is ``typed(self, ir): return ir``.

    pip install --no-deps pyperformance          # only its benchmark files are used
    python benchmarks/outside.py                 # every program of NAMES
    python benchmarks/outside.py --only richards,go --runs 6

Each benchmark's own ``__main__`` block runs against a stand-in for ``pyperf`` that records
what it would time (``bench_func(name, fn, *args)``; ``bench_time_func(name, fn, *args)``
is called with one loop), so each program runs with pyperformance's own sizes. Each mode
loads the program afresh and calls its first benchmark ``--runs`` times with one plugin
object (a garbage collection before each call); steady state is the median of runs 2 to 5
(as issues 15 and 16 measure it), the first run (compiling included) is shown apart. The
modes' results must agree. Figures go in benchmarks/README.md with the command that made
them.
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib.util
import os
import statistics
import sys
import time
import types
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (ROOT, HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from run import geomean  # noqa: E402
from run import load as load_program  # noqa: E402

import splice  # noqa: E402

#: benchmarks of pyperformance that need nothing but the standard library
NAMES = ["chaos", "deltablue", "fannkuch", "float", "go", "hexiom", "nqueens", "nbody",
         "raytrace", "richards", "spectral_norm", "meteor_contest", "deepcopy",
         "generators", "coroutines", "json_dumps", "pprint", "unpack_sequence",
         "comprehensions", "scimark", "logging"]


class TypedIdentity(splice.Plugin):
    """Changes nothing, through the typed stages."""

    def typed(self, ir: Any) -> Any:
        return ir


class _Runner:
    """What a benchmark's ``__main__`` block sees as ``pyperf.Runner``: it records the
    benchmarks instead of timing them."""

    def __init__(self, *args: Any, add_cmdline_args: Any = None, **kwargs: Any) -> None:
        self.argparser = argparse.ArgumentParser()
        self.metadata: dict[str, Any] = {}
        self.args: Any = None
        self.benches: list[tuple[str, Any, tuple[Any, ...], bool]] = []

    def parse_args(self, args: Any = None) -> Any:
        self.args = self.argparser.parse_args([])
        return self.args

    def bench_func(self, name: str, fn: Any, *args: Any, **options: Any) -> None:
        self.benches.append((name, fn, args, False))

    def bench_time_func(self, name: str, fn: Any, *args: Any, **options: Any) -> None:
        self.benches.append((name, fn, args, True))

    def bench_async_func(self, name: str, fn: Any, *args: Any, **options: Any) -> None:
        pass  # not measured here


def _fake_pyperf() -> types.ModuleType:
    module = types.ModuleType("pyperf")
    module.Runner = _Runner  # type: ignore[attr-defined]
    module.perf_counter = time.perf_counter  # type: ignore[attr-defined]
    return module


def benchmarks_folder() -> str:
    spec = importlib.util.find_spec("pyperformance")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("benchmarks/outside.py needs pyperformance's benchmark files: "
                 "pip install --no-deps pyperformance")
    return os.path.join(list(spec.submodule_search_locations)[0], "data-files", "benchmarks")


def load(name: str, tag: str) -> tuple[bool, Any]:
    """A fresh module of benchmark ``name`` and a call of its first benchmark, with whether
    the call returns its own timing (``bench_time_func``) rather than a result."""
    path = os.path.join(benchmarks_folder(), f"bm_{name}", "run_benchmark.py")
    sys.modules["pyperf"] = _fake_pyperf()
    module = load_program(path, f"{name}_{tag}")  # every file is named run_benchmark.py
    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    main = [node for node in tree.body if isinstance(node, ast.If)
            and "__main__" in ast.unparse(node.test)]
    if not main:
        raise SystemExit(f"{name}: no __main__ block")
    block = ast.Module(body=main[0].body, type_ignores=[])
    runner_box: list[_Runner] = []
    original = _Runner.__init__

    def recording(self: _Runner, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        runner_box.append(self)

    _Runner.__init__ = recording  # type: ignore[method-assign]
    try:
        exec(compile(block, path, "exec"), module.__dict__)
    finally:
        _Runner.__init__ = original  # type: ignore[method-assign]
    benches = [bench for runner in runner_box for bench in runner.benches]
    if not benches:
        raise SystemExit(f"{name}: its __main__ block records no benchmark")
    _, fn, args, timed = benches[0]
    return timed, ((lambda: fn(1, *args)) if timed else (lambda: fn(*args)))


def measure(name: str, mode: str, runs: int) -> tuple[list[float], Any]:
    timed, call = load(name, mode)
    plugin = {"native": None, "identity": splice.Plugin(), "typed": TypedIdentity()}[mode]
    times, result = [], None
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        result = call() if plugin is None else plugin.run(call)
        times.append(time.perf_counter() - start)
    return times, None if timed else result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--runs", type=int, default=6)
    options = parser.parse_args()
    names = [n for n in options.only.split(",") if n] or NAMES
    print(f"Python {sys.version.split()[0]}; pyperformance's benchmarks, {options.runs} runs "
          "per mode, steady = median of runs 2-5")
    print(f"{'program':<16}{'native ms':>10}{'identity':>10}{'typed':>9}{'typed/id':>10}"
          f"{'1st id ms':>11}{'1st typed':>11}")
    identity_ratios, typed_ratios = [], []
    for name in names:
        found = {mode: measure(name, mode, options.runs)
                 for mode in ("native", "identity", "typed")}
        results = {mode: repr(result)[:200] for mode, (_, result) in found.items()}
        if len(set(results.values())) != 1:
            print(f"{name}: results differ: {results}")
        steady = {mode: statistics.median(times[1:5]) for mode, (times, _) in found.items()}
        identity = steady["identity"] / steady["native"]
        typed = steady["typed"] / steady["native"]
        identity_ratios.append(identity)
        typed_ratios.append(typed / identity)
        print(f"{name:<16}{steady['native'] * 1e3:>10.1f}{identity:>9.2f}x{typed:>8.2f}x"
              f"{typed / identity:>9.2f}x{found['identity'][0][0] * 1e3:>11.1f}"
              f"{found['typed'][0][0] * 1e3:>11.1f}", flush=True)
    print(f"identity/native: geometric mean {geomean(identity_ratios):.2f}x, "
          f"max {max(identity_ratios):.2f}x")
    print(f"typed/identity: geometric mean {geomean(typed_ratios):.2f}x, "
          f"max {max(typed_ratios):.2f}x")


if __name__ == "__main__":
    main()

"""Typed stages in steady state (issue 15, point 1): a plugin whose only hook is
``typed(self, ir): return ir`` against the identity plugin and native CPython, and how many
code instances each run after the first builds (a program that rebinds what its code relied
on used to rebuild on every run).

    python benchmarks/typed_steady.py            # every program, n = N / 4
    python benchmarks/typed_steady.py --quick    # n = N / 40

Programs: ``benchmarks/programs/`` and ``benchmarks/steady/`` (programs that rebind
globals on every run). Each program is loaded once per mode as a fresh module; each mode
runs ``main(n)`` eight times with the same plugin object (a garbage collection before each
run); steady state is the median of runs 2 to 5 (as issue 15 measures it), "late" the
median of runs 6 to 8 (after ``CompileParams.max_rebuilds`` rebuilds a function stops
being rebuilt), the first run is reported apart (it includes compiling). Modes run one
after the other in one process; their results must agree.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (ROOT, HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from run import geomean, load  # noqa: E402

import splice  # noqa: E402

FOLDERS = [os.path.join(HERE, "programs"), os.path.join(HERE, "steady")]
RUNS = 8


class Identity(splice.Plugin):
    pass


class TypedIdentity(splice.Plugin):
    """Changes nothing."""

    def typed(self, ir: Any) -> Any:
        return ir


def instances_built(plugin: Any) -> int:
    """How many code instances the plugin's context built so far."""
    context = getattr(plugin, "context", None)
    cache = getattr(context, "instances", None)
    return getattr(cache, "builds", 0)


def measure(path: str, mode: str, n: int) -> tuple[list[float], list[int], Any]:
    module = load(path, mode)
    plugin = {"native": None, "identity": Identity(), "typed": TypedIdentity()}[mode]
    times, builds, result = [], [], None
    for _ in range(RUNS):
        gc.collect()
        before = instances_built(plugin)
        start = time.perf_counter()
        result = module.main(n) if plugin is None else plugin.run(module.main, n)
        times.append(time.perf_counter() - start)
        builds.append(instances_built(plugin) - before)
    return times, builds, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = N / 40")
    parser.add_argument("--programs", help="comma-separated program names (default: all)")
    args = parser.parse_args()
    divisor = 40 if args.quick else 4
    paths = sorted(os.path.join(folder, f) for folder in FOLDERS
                   for f in os.listdir(folder) if f.endswith(".py"))
    if args.programs:
        wanted = set(args.programs.split(","))
        paths = [p for p in paths if os.path.basename(p)[:-3] in wanted]
    print(f"Python {sys.version.split()[0]}; {RUNS} runs per mode, steady = median of runs "
          f"2-5, late = median of runs 6-{RUNS}; n = N / {divisor}")
    print(f"{'program':20} {'native ms':>10} {'identity':>9} {'typed':>7} {'typed/id':>9} "
          f"{'late t/id':>9} {'1st id ms':>10} {'1st typed':>10}  builds per run 2-{RUNS}")
    ratios, late_ratios = [], []
    for path in paths:
        n = max(1, load(path, "probe").N // divisor)
        found = {mode: measure(path, mode, n) for mode in ("native", "identity", "typed")}
        results = {repr(r) for _, _, r in found.values()}
        assert len(results) == 1, (path, results)
        steady = {mode: statistics.median(t[1:5]) for mode, (t, _, _) in found.items()}
        late = {mode: statistics.median(t[5:]) for mode, (t, _, _) in found.items()}
        ratio = steady["typed"] / steady["identity"]
        ratios.append(ratio)
        late_ratios.append(late["typed"] / late["identity"])
        print(f"{os.path.basename(path)[:-3]:20} {steady['native'] * 1e3:10.2f} "
              f"{steady['identity'] / steady['native']:8.2f}x "
              f"{steady['typed'] / steady['native']:6.2f}x {ratio:8.2f}x "
              f"{late_ratios[-1]:8.2f}x "
              f"{found['identity'][0][0] * 1e3:10.1f} {found['typed'][0][0] * 1e3:10.1f}  "
              f"{found['typed'][1][1:]}")
    for name, values in (("steady state", ratios), ("late runs", late_ratios)):
        print(f"typed/identity, {name}: geometric mean {geomean(values):.2f}x, "
              f"max {max(values):.2f}x "
              "(target: at most 1.05x on every program)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

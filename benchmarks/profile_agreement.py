"""Does the Tracer profile like cProfile? (issue 17, point 2)

    python benchmarks/profile_agreement.py                 # benchmarks/programs, n = N/4
    python benchmarks/profile_agreement.py --scale 1       # the programs' full sizes
    python benchmarks/profile_agreement.py --only nbody,text

For each program in ``benchmarks/programs/``, one run under ``cProfile`` and one under a
``Tracer`` (after a first Tracer run that compiles, then ``reset``: splice's compile work is
not in the measured run, and the Tracer leaves it out of its times anyway), each on a fresh
copy of the program's module. Both profiles are reduced to the same shape, per Python
function (file, first line, name):

* self time: cProfile's ``tottime``, plus the self time of what the Tracer did not record
  that it called (builtins, lambdas, comprehensions, and dunders reached by operators
  unless ``--implicit``: cProfile times them as functions of their own, the Tracer as its
  caller's self time), moved along pstats' call edges;
* total time: ``cumtime``, a recursive function counted once, as both compute it.

Times are compared as shares of the program's total (``main``'s total time in each
profile), since each profiler slows the program down by its own overhead (shown as
"overhead": profiled wall time / native wall time, same process). The headline is the
total variation distance between the two self-time distributions: the share of the
program's time that one profiler attributes to another function than the other does
(target: at most 10%). Also shown: the largest difference of one function's self share
and of one function's total share (percentage points), over the functions either profile
gives at least 1% of the time.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from run import geomean, load, program_paths  # noqa: E402

from splice.plugins import Tracer  # noqa: E402

Key = tuple[str, int, str]
#: per function: (self seconds, total seconds)
Profile = dict[Key, tuple[float, float]]


def cprofile_profile(stats: pstats.Stats, recorded: set[Key]) -> Profile:
    """cProfile's numbers per function the Tracer recorded (``recorded``): the self time of
    the others (builtins, lambdas, comprehensions, dunders the Tracer's run did not enter)
    moved to the nearest caller it recorded, along pstats' call edges in proportion to
    each edge's share."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    out: dict[Key, list[float]] = {k: [v[2], v[3]] for k, v in raw.items() if k in recorded}

    def attribute(key: Any, amount: float, depth: int) -> None:
        callers = raw[key][4]
        edges = {c: e[2] for c, e in callers.items()}
        whole = sum(edges.values()) or 1.0
        for caller, edge_time in edges.items():
            part = amount * edge_time / whole
            if caller in out:
                out[caller][0] += part
            elif caller in raw and depth < 20:
                attribute(caller, part, depth + 1)

    for key, (_, _, tottime, _, _) in raw.items():
        if key not in out:
            attribute(key, tottime, 0)
    return {k: (v[0], v[1]) for k, v in out.items()}


def tracer_profile(tracer: Tracer) -> Profile:
    return {(e.info.filename, e.info.lineno, e.info.code.co_name): (e.tottime, e.cumtime)
            for e in tracer.stats()}


def shares(profile: Profile, root: str) -> tuple[dict[Key, float], dict[Key, float]]:
    totals = [v[1] for k, v in profile.items() if k[2] == root]
    whole = max(totals) if totals else sum(v[0] for v in profile.values())
    return ({k: v[0] / whole for k, v in profile.items()},
            {k: v[1] / whole for k, v in profile.items()})


def compare(path: str, scale: float, implicit: bool) -> dict[str, Any]:
    name = os.path.basename(path)[:-3]
    native = load(path, "native")
    n = max(1, int(native.N * scale))
    gc.collect()
    start = time.perf_counter()
    native.main(n)
    native_s = time.perf_counter() - start

    profiled = load(path, "cprofile")
    profiler = cProfile.Profile()
    gc.collect()
    start = time.perf_counter()
    profiler.runcall(profiled.main, n)
    cprofile_s = time.perf_counter() - start

    traced = load(path, "tracer")
    tracer = Tracer(implicit_calls=implicit)  # the default of `splice trace`: False
    tracer.run(traced.main, n)  # compiles
    tracer.reset()
    gc.collect()
    start = time.perf_counter()
    tracer.run(traced.main, n)
    tracer_s = time.perf_counter() - start
    ours = tracer_profile(tracer)
    theirs = cprofile_profile(pstats.Stats(profiler), set(ours))

    self_c, total_c = shares(theirs, "main")
    self_t, total_t = shares(ours, "main")
    keys = set(self_c) | set(self_t)
    distance = sum(abs(self_c.get(k, 0.0) - self_t.get(k, 0.0)) for k in keys) / 2
    shown = [k for k in keys if max(self_c.get(k, 0), self_t.get(k, 0),
                                    total_c.get(k, 0), total_t.get(k, 0)) >= 0.01]
    worst_self = max((abs(self_c.get(k, 0) - self_t.get(k, 0)), k[2]) for k in shown)
    worst_total = max((abs(total_c.get(k, 0) - total_t.get(k, 0)), k[2]) for k in shown)
    return {"program": name, "n": n, "native_s": native_s,
            "cprofile_overhead": cprofile_s / native_s, "tracer_overhead": tracer_s / native_s,
            "distance": distance, "worst_self": worst_self, "worst_total": worst_total}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.25,
                        help="fraction of each program's N to run (default 0.25)")
    parser.add_argument("--only", help="comma-separated program names")
    parser.add_argument("--implicit", action="store_true",
                        help="Tracer(implicit_calls=True): dunders reached by operators too")
    args = parser.parse_args(argv)
    selected = args.only.split(",") if args.only else None
    rows = [compare(p, args.scale, args.implicit) for p in program_paths(selected)]
    print(f"Python {sys.version.split()[0]}; Tracer after a compiling run; shares of main's "
          "total time")
    print(f"{'program':<14}{'native s':>9}{'cProfile':>9}{'Tracer':>8}{'distance':>10}"
          f"   worst self (pp)        worst total (pp)")
    for r in rows:
        print(f"{r['program']:<14}{r['native_s']:>9.3f}{r['cprofile_overhead']:>8.2f}x"
              f"{r['tracer_overhead']:>7.2f}x{r['distance'] * 100:>9.1f}%"
              f"   {r['worst_self'][0] * 100:5.1f} {r['worst_self'][1]:<16}"
              f"{r['worst_total'][0] * 100:5.1f} {r['worst_total'][1]}")
    cprofile = geomean([r["cprofile_overhead"] for r in rows])
    traced = geomean([r["tracer_overhead"] for r in rows])
    print(f"geometric mean overhead: cProfile {cprofile:.2f}x, Tracer {traced:.2f}x; "
          f"largest distance {max(r['distance'] for r in rows) * 100:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())

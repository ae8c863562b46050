"""Does the Tracer profile like cProfile? (issue 17, point 2)

    python benchmarks/profile_agreement.py                 # benchmarks/programs, n = N/4
    python benchmarks/profile_agreement.py --scale 1       # the programs' full sizes
    python benchmarks/profile_agreement.py --only nbody,text
    python benchmarks/profile_agreement.py --sampled 3     # and each against py-spy

For each program in ``benchmarks/programs/``, ``--repeats`` runs under ``cProfile`` and as
many under a ``Tracer``, interleaved, each a later run of a fresh copy of the program's
module (the first fills what the program keeps between runs; under the Tracer it also
compiles: splice's compile work is not in the measured runs, and the Tracer leaves it out
of its times anyway). Every profile is reduced to the same shape, per Python
function (file, first line, name):

* self time: cProfile's ``tottime``, plus the self time of what the Tracer did not record
  that it called (builtins, comprehensions, and dunders reached by operators unless
  ``--implicit``: cProfile times them as functions of their own, the Tracer as its
  caller's self time), moved along pstats' call edges;
* total time: ``cumtime``, a recursive function counted once, as both compute it.

Times are compared as shares of the program's total (``main``'s total time in each
profile), since each profiler slows the program down by its own overhead (shown as
"overhead": profiled wall time / native wall time, same process, fastest runs). This
machine's speed drifts by up to 2x within seconds, which moves one run's shares by up to
ten points: each profiler's shares are the mean over its runs, and "one run" shows the
range of the distances of the runs' pairs taken alone. The headline is the
total variation distance between the two self-time distributions: the share of the
program's time that one profiler attributes to another function than the other does
(target: at most 10%). Also shown: the largest difference of one function's self share
and of one function's total share (percentage points), over the functions either profile
gives at least 1% of the time.

Both profilers are wrong by their own cost per call, so agreeing with cProfile is not being
right. ``--sampled SECONDS`` adds a reference that pays no cost per call: ``py-spy`` (the
``bench`` extra) sampling a native run of the program from outside the process, without
pausing it. Each profile's distance to it is shown, as each profiler reports its times
(raw) and corrected for its cost per call.
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
from splice.plugins.tracer_bias import Bias, calibration_functions  # noqa: E402

Key = tuple[str, int, str]
#: per function: (self seconds, total seconds)
Profile = dict[Key, tuple[float, float]]


def cprofile_bias(builtins: bool, calls: int = 2000, runs: int = 7) -> Bias:
    """What cProfile costs per call, measured as the Tracer measures its own
    (splice/plugins/tracer_bias.py): the span of an empty function, and the caller's self
    time per call less the native time of one call."""
    empty, calling = calibration_functions()
    native = inside = outside = float("inf")
    for _ in range(runs):
        start = time.perf_counter_ns()
        calling(calls)
        native = min(native, (time.perf_counter_ns() - start) / calls)
        profiler = cProfile.Profile(builtins=builtins)
        profiler.runcall(calling, calls)
        raw: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        for (_, _, name), (_, nc, tottime, _, _) in raw.items():
            if name == "_empty":
                inside = min(inside, tottime * 1e9 / nc)
            elif name == "_calling":
                outside = min(outside, tottime * 1e9 / calls)
    return Bias(inside=inside, outside=max(0.0, outside - native))


def corrected_stats(raw: dict[Any, Any], bias: Bias) -> dict[Any, Any]:
    """pstats' ``stats`` with ``bias`` taken out of every function's times, as
    ``Tracer.stats`` takes its own out: self time less ``inside`` per call and ``outside``
    per call it made; cumulative time less ``inside`` per outermost call and
    ``inside + outside`` per call under them (counted along the call edges)."""
    callees: dict[Any, dict[Any, int]] = {}
    for key, (_, _, _, _, callers) in raw.items():
        for caller, edge in callers.items():
            callees.setdefault(caller, {})[key] = edge[1]
    beneath: dict[Any, float] = {}

    def calls_beneath(key: Any, visiting: frozenset[Any]) -> float:
        """Calls under every call of ``key`` (a recursive call counted, not descended)."""
        if key in beneath:
            return beneath[key]
        total = 0.0
        for callee, count in callees.get(key, {}).items():
            total += count
            if callee != key and callee not in visiting and callee in raw:
                total += count * calls_beneath(callee, visiting | {key}) / raw[callee][1]
        beneath[key] = total
        return total

    out = {}
    for key, (cc, nc, tottime, cumtime, callers) in raw.items():
        made = sum(callees.get(key, {}).values())
        self_ns = tottime * 1e9 - bias.inside * nc - bias.outside * made
        total_ns = cumtime * 1e9 - bias.inside * cc - \
            (bias.inside + bias.outside) * calls_beneath(key, frozenset())
        out[key] = (cc, nc, max(0.0, self_ns) / 1e9, max(0.0, total_ns) / 1e9, callers)
    return out


def cprofile_profile(raw: dict[Any, Any], recorded: set[Key]) -> Profile:
    """cProfile's numbers (pstats' ``stats``) per function the Tracer recorded
    (``recorded``): the self time of the others (builtins, lambdas, comprehensions, dunders
    the Tracer's run did not enter) moved to the nearest caller it recorded, along pstats'
    call edges in proportion to each edge's share."""
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


def tracer_profile(tracer: Tracer, corrected: bool) -> Profile:
    return {(e.info.filename, e.info.lineno, e.info.code.co_name): (e.tottime, e.cumtime)
            for e in tracer.stats(corrected=corrected)}


def shares(profile: Profile, root: str) -> tuple[dict[Key, float], dict[Key, float]]:
    totals = [v[1] for k, v in profile.items() if k[2] == root]
    whole = max(totals) if totals else sum(v[0] for v in profile.values())
    return ({k: v[0] / whole for k, v in profile.items()},
            {k: v[1] / whole for k, v in profile.items()})


def distances(theirs: Profile, ours: Profile) -> tuple[float, tuple[float, str],
                                                      tuple[float, str]]:
    """The total variation distance of the self-time shares, and the largest difference
    of one function's self share and of one function's total share (over the functions
    either profile gives at least 1% of the time)."""
    self_c, total_c = shares(theirs, "main")
    self_t, total_t = shares(ours, "main")
    keys = set(self_c) | set(self_t)
    distance = sum(abs(self_c.get(k, 0.0) - self_t.get(k, 0.0)) for k in keys) / 2
    shown = [k for k in keys if max(self_c.get(k, 0), self_t.get(k, 0),
                                    total_c.get(k, 0), total_t.get(k, 0)) >= 0.01]
    worst_self = max((abs(self_c.get(k, 0) - self_t.get(k, 0)), k[2]) for k in shown)
    worst_total = max((abs(total_c.get(k, 0) - total_t.get(k, 0)), k[2]) for k in shown)
    return distance, worst_self, worst_total


_SAMPLED_CHILD = """
import sys, time
sys.path[:0] = {paths!r}
from run import load
module = load({path!r}, "sampled")
module.main({n})
end = time.perf_counter() + {seconds}
while time.perf_counter() < end:
    module.main({n})
"""


def sampled_profile(path: str, n: int, recorded: set[Key], seconds: float,
                    rate: int = 1000) -> tuple[Profile, int]:
    """A reference without per-call cost: ``py-spy`` sampling, from outside the process and
    without pausing it, a native run of the program that calls ``main(n)`` again and again
    for ``seconds``. Each sample counts as self time of the innermost frame of a function
    the Tracer recorded (what it did not record, a comprehension say, is its caller's, as
    for the two profilers) and as total time of each recorded function on the stack (once,
    however often it recurses). In samples, with how many had ``main`` on the stack."""
    import shutil
    import subprocess
    import tempfile

    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(spy):
        raise SystemExit("--sampled needs py-spy (pip install py-spy)")
    child = _SAMPLED_CHILD.format(paths=[HERE, os.path.dirname(HERE)], path=path, n=n,
                                  seconds=seconds)
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "stacks.txt")
        subprocess.run([spy, "record", "--format", "raw", "--function", "--nonblocking",
                        "-r", str(rate), "-o", out, "--", sys.executable, "-c", child],
                       check=True, capture_output=True)
        with open(out) as f:
            lines = f.read().splitlines()
    # py-spy names a frame "qualname (file:first line)", the file shortened to its path
    # under a sys.path entry
    by_place: dict[tuple[int, str], list[Key]] = {}
    for key in recorded:
        by_place.setdefault((key[1], key[2]), []).append(key)

    def recorded_key(name: str, filename: str, lineno: int) -> Key | None:
        for key in by_place.get((lineno, name.rpartition(".")[2]), ()):
            if key[0].endswith(filename):
                return key
        return None

    counts: dict[Key, list[float]] = {}
    taken = 0
    for line in lines:
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        keys: list[Key] = []
        for frame in stack.split(";"):
            name, _, place = frame.rpartition(" (")
            filename, _, lineno = place.rstrip(")").rpartition(":")
            key = recorded_key(name, filename, int(lineno or 0))
            if key is not None:
                keys.append(key)
        if not any(k[2] == "main" for k in keys):
            continue
        count = int(count_text)
        taken += count
        counts.setdefault(keys[-1], [0.0, 0.0])[0] += count  # (py-spy: outermost first)
        for key in set(keys):
            counts.setdefault(key, [0.0, 0.0])[1] += count
    return {k: (v[0], v[1]) for k, v in counts.items()}, taken


def lowest(biases: list[Bias]) -> Bias:
    """Each cost's lowest measure (the machine's drift only adds)."""
    def least(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return min(known) if known else None
    fields = [least([getattr(b, name) for b in biases]) for name in Bias.__dataclass_fields__]
    return Bias(*fields)


def timed(run: Any, *args: Any) -> float:
    """Seconds ``run(*args)`` takes, after a collection."""
    gc.collect()
    start = time.perf_counter()
    run(*args)
    return time.perf_counter() - start


def compare(path: str, scale: float, implicit: bool, builtins: bool, repeats: int,
            sample_seconds: float = 0.0) -> dict[str, Any]:
    name = os.path.basename(path)[:-3]
    # each way measures later runs of a fresh copy of the module, the first having filled
    # what the program keeps between runs (a memoized function's cache) and, under the
    # Tracer, compiled
    native = load(path, "native")
    # (a program whose work grows exponentially with n names a QUICK size)
    quick = getattr(native, "QUICK", None)
    n = quick if quick is not None and scale < 1 else max(1, int(native.N * scale))
    profiled = load(path, "cprofile")
    traced = load(path, "tracer")
    tracer = Tracer(implicit_calls=implicit)  # the default of `splice trace`: False
    for module in (native, profiled):
        module.main(n)
    tracer.run(traced.main, n)  # compiles
    native_s = cprofile_s = tracer_s = float("inf")
    # each profiler's cost per call: the lowest of `repeats` measures (the machine's drift
    # only adds), taken first so that each run's profile is made right after it (a Tracer
    # of a full-size run holds millions of calls)
    bias = lowest([cprofile_bias(builtins) for _ in range(repeats)])
    tracer_bias = lowest([Tracer(implicit_calls=implicit).bias for _ in range(repeats)])
    # this machine's speed drifts by up to 2x over seconds, and one run's shares with it:
    # each way runs `repeats` times, interleaved, and the profiles compared are the mean of
    # every run's shares (the fastest run counts for the overheads)
    all_stats: list[dict[Any, Any]] = []
    raws: list[Profile] = []
    ours_each: list[Profile] = []
    for _ in range(repeats):
        native_s = min(native_s, timed(native.main, n))

        profiler = cProfile.Profile(builtins=builtins)
        cprofile_s = min(cprofile_s, timed(profiler.runcall, profiled.main, n))
        all_stats.append(pstats.Stats(profiler).stats)  # type: ignore[attr-defined]

        # (a Tracer per run, sharing the compiled code)
        tracer = Tracer(implicit_calls=implicit)
        tracer_s = min(tracer_s, timed(tracer.run, traced.main, n))
        tracer.bias = tracer_bias
        raws.append(tracer_profile(tracer, corrected=False))
        ours_each.append(tracer_profile(tracer, corrected=True))
        del tracer
    recorded = set().union(*ours_each)
    raw = mean_shares(raws)
    ours = mean_shares(ours_each)
    theirs_raw = mean_shares([cprofile_profile(stats, recorded) for stats in all_stats])
    raw_distance = distances(theirs_raw, raw)[0]
    theirs_each = [cprofile_profile(corrected_stats(stats, bias), recorded)
                   for stats in all_stats]
    theirs = mean_shares(theirs_each)
    distance, worst_self, worst_total = distances(theirs, ours)
    # how much one run's pair moves: the spread the mean takes out
    each = [distances(c, t)[0] for c, t in zip(theirs_each, ours_each, strict=True)]
    reference: dict[str, float] = {}
    if sample_seconds:
        sampled, taken = sampled_profile(path, n, recorded, sample_seconds)
        reference = {
            "samples": taken,
            "cprofile": distances(sampled, theirs_raw)[0],
            "cprofile_corrected": distances(sampled, theirs)[0],
            "tracer": distances(sampled, raw)[0],
            "tracer_corrected": distances(sampled, ours)[0]}
    return {"reference": reference, "program": name, "n": n, "native_s": native_s,
            "cprofile_overhead": cprofile_s / native_s, "tracer_overhead": tracer_s / native_s,
            "raw_distance": raw_distance, "distance": distance, "worst_self": worst_self,
            "worst_total": worst_total, "cprofile_bias": bias, "tracer_bias": tracer_bias,
            "spread": (min(each), max(each))}


def mean_shares(profiles: list[Profile]) -> Profile:
    """The mean of the profiles' shares of ``main``'s total time, per function, as a
    profile (a function a run did not see counts 0 in it)."""
    summed: dict[Key, list[float]] = {}
    for profile in profiles:
        self_shares, total_shares = shares(profile, "main")
        for key in self_shares:
            entry = summed.setdefault(key, [0.0, 0.0])
            entry[0] += self_shares[key]
            entry[1] += total_shares[key]
    return {key: (s / len(profiles), t / len(profiles)) for key, (s, t) in summed.items()}


def _cost(bias: Bias) -> str:
    return f"{bias.inside:.0f}+{bias.outside:.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.25,
                        help="fraction of each program's N to run (default 0.25; "
                        "below 1, a program's QUICK size where it names one)")
    parser.add_argument("--only", help="comma-separated program names")
    parser.add_argument("--implicit", action="store_true",
                        help="Tracer(implicit_calls=True): dunders reached by operators too")
    parser.add_argument("--repeats", type=int, default=5,
                        help="runs each way, interleaved: their mean shares are compared, "
                        "the fastest counts for the overheads (default 5)")
    parser.add_argument("--cprofile-builtins", action="store_true",
                        help="cProfile records builtin calls too (its default; they cost "
                        "it an event each, which the Tracer does not pay)")
    parser.add_argument("--sampled", type=float, default=0.0, metavar="SECONDS",
                        help="also sample a native run of each program for SECONDS with "
                        "py-spy (a reference without per-call cost) and show each "
                        "profile's distance to it")
    args = parser.parse_args(argv)
    selected = args.only.split(",") if args.only else None
    rows = [compare(p, args.scale, args.implicit, args.cprofile_builtins, args.repeats,
                    args.sampled)
            for p in program_paths(selected)]
    print(f"Python {sys.version.split()[0]}; Tracer after a compiling run; shares of main's "
          f"total time; cProfile(builtins={args.cprofile_builtins})")
    print(f"{'program':<14}{'native s':>9}{'cProfile':>9}{'Tracer':>8}{'raw':>8}"
          f"{'distance':>10}{'one run':>14}   worst self (pp)        worst total (pp)       "
          f"cost/call ns (cProfile; Tracer)")
    for r in rows:
        low, high = r["spread"]
        print(f"{r['program']:<14}{r['native_s']:>9.3f}{r['cprofile_overhead']:>8.2f}x"
              f"{r['tracer_overhead']:>7.2f}x{r['raw_distance'] * 100:>7.1f}%"
              f"{r['distance'] * 100:>9.1f}%{low * 100:>7.1f}-{high * 100:.1f}%"
              f"   {r['worst_self'][0] * 100:5.1f} {r['worst_self'][1]:<16}"
              f"{r['worst_total'][0] * 100:5.1f} {r['worst_total'][1]:<16}"
              f"{_cost(r['cprofile_bias'])}; {_cost(r['tracer_bias'])}")
    if args.sampled:
        print("\ndistance to the sampled native run (self-time shares; raw / corrected for "
              "each profiler's cost per call)")
        print(f"{'program':<14}{'samples':>8}{'cProfile':>18}{'Tracer':>18}")
        for r in rows:
            ref = r["reference"]
            print(f"{r['program']:<14}{ref['samples']:>8}"
                  f"{ref['cprofile'] * 100:>10.1f}% /{ref['cprofile_corrected'] * 100:>5.1f}%"
                  f"{ref['tracer'] * 100:>10.1f}% /{ref['tracer_corrected'] * 100:>5.1f}%")
    cprofile = geomean([r["cprofile_overhead"] for r in rows])
    traced = geomean([r["tracer_overhead"] for r in rows])
    print(f"geometric mean overhead: cProfile {cprofile:.2f}x, Tracer {traced:.2f}x; "
          f"largest distance {max(r['distance'] for r in rows) * 100:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())

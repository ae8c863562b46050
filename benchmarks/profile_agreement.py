"""Does the Tracer profile like cProfile? (issue 17, point 2)

    python benchmarks/profile_agreement.py                 # benchmarks/programs, n = N/4
    python benchmarks/profile_agreement.py --scale 1       # the programs' full sizes
    python benchmarks/profile_agreement.py --only nbody,text
    python benchmarks/profile_agreement.py --sampled 3     # and each against py-spy
    python benchmarks/profile_agreement.py --detail        # and each function's shares

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
ten points: each profiler's shares are the median over its runs, per function, and "one
run" shows the range of the distances of the runs' pairs taken alone. Each profiler's
cost per call (for the corrected figures) is measured once before the programs run, the
lowest of twice ``--repeats`` measures. The headline is the
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
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from run import geomean, load, program_paths  # noqa: E402

from splice.plugins import FunctionStats, Tracer  # noqa: E402
from splice.plugins.tracer_bias import (  # noqa: E402
    Bias,
    calibration_functions,
    calibration_generator,
)

Key = tuple[str, int, str]
#: per function: (self seconds, total seconds)
Profile = dict[Key, tuple[float, float]]


def cprofile_bias(builtins: bool, calls: int = 2000, runs: int = 7) -> Bias:
    """What cProfile costs per call and per generator resume, measured as the Tracer
    measures its own (splice/plugins/tracer_bias.py): the span of an empty function (of an
    empty generator's resume), and the caller's self time per call (per resume) less the
    native time of one."""
    measured = []
    for callee_name, (_, caller) in (("_empty", calibration_functions()),
                                     ("_resumed", calibration_generator())):
        native = inside = outside = float("inf")
        for _ in range(runs):
            start = time.perf_counter_ns()
            caller(calls)
            native = min(native, (time.perf_counter_ns() - start) / calls)
            profiler = cProfile.Profile(builtins=builtins)
            profiler.runcall(caller, calls)
            raw: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
            for (_, _, name), (_, nc, tottime, _, _) in raw.items():
                if name == callee_name:
                    inside = min(inside, tottime * 1e9 / nc)
                elif name == caller.__name__:
                    outside = min(outside, tottime * 1e9 / calls)
        measured.append((inside, max(0.0, outside - native)))
    (inside, outside), (resume_inside, resume_outside) = measured
    return Bias(inside=inside, outside=outside, resume_inside=resume_inside,
                resume_outside=resume_outside)


def corrected_stats(raw: dict[Any, Any], bias: Bias, generators: set[Key]
                    ) -> dict[Any, Any]:
    """pstats' ``stats`` with ``bias`` taken out of every function's times, as
    ``Tracer.stats`` takes its own out: self time less ``inside`` per call and ``outside``
    per call it made; cumulative time less ``inside`` per outermost call and
    ``inside + outside`` per call under them (counted along the call edges). A call of a
    function of ``generators`` is a resume, with the resume's costs."""
    callees: dict[Any, dict[Any, int]] = {}
    for key, (_, _, _, _, callers) in raw.items():
        for caller, edge in callers.items():
            callees.setdefault(caller, {})[key] = edge[1]
    resume_inside = bias.inside if bias.resume_inside is None else bias.resume_inside
    resume_outside = bias.outside if bias.resume_outside is None else bias.resume_outside

    def inside(key: Any) -> float:
        return resume_inside if key in generators else bias.inside

    def outside(key: Any) -> float:
        return resume_outside if key in generators else bias.outside

    beneath: dict[Any, float] = {}

    def cost_beneath(key: Any, visiting: frozenset[Any]) -> float:
        """What the calls under every call of ``key`` cost the profiler, in ns (a
        recursive call counted, not descended)."""
        if key in beneath:
            return beneath[key]
        total = 0.0
        for callee, count in callees.get(key, {}).items():
            total += count * (inside(callee) + outside(callee))
            if callee != key and callee not in visiting and callee in raw:
                total += count * cost_beneath(callee, visiting | {key}) / raw[callee][1]
        beneath[key] = total
        return total

    out = {}
    for key, (cc, nc, tottime, cumtime, callers) in raw.items():
        made = sum(count * outside(callee) for callee, count in callees.get(key, {}).items())
        self_ns = tottime * 1e9 - inside(key) * nc - made
        total_ns = cumtime * 1e9 - inside(key) * cc - cost_beneath(key, frozenset())
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


def _key(info: Any) -> Key:
    return info.filename, info.lineno, info.code.co_name


def tracer_profile(stats: list[FunctionStats]) -> Profile:
    """``Tracer.stats()`` as a profile."""
    return {_key(e.info): (e.tottime, e.cumtime) for e in stats}


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


def measured_biases(implicit: bool, builtins: bool, repeats: int) -> tuple[Bias, Bias]:
    """cProfile's and the Tracer's costs per call: each the lowest of ``2 * repeats``
    measures, interleaved (the machine's drift only adds). Measured once for every
    program: measured per program, a slow spell of a few seconds made one program's
    costs twice another's."""
    theirs, ours = [], []
    for _ in range(2 * repeats):
        theirs.append(cprofile_bias(builtins))
        ours.append(Tracer(implicit_calls=implicit).bias)
    return lowest(theirs), lowest(ours)


def compare(path: str, scale: float, implicit: bool, builtins: bool, repeats: int,
            biases: tuple[Bias, Bias], sample_seconds: float = 0.0) -> dict[str, Any]:
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
    bias, tracer_bias = biases
    # this machine's speed drifts by up to 2x over seconds, and one run's shares with it:
    # each way runs `repeats` times, interleaved, and the profiles compared are the median
    # of every run's shares, per function (the fastest run counts for the overheads)
    all_stats: list[dict[Any, Any]] = []
    generators: set[Key] = set()
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
        raw_stats = tracer.stats(corrected=False)
        generators |= {_key(e.info) for e in raw_stats if e.info.generator}
        raws.append(tracer_profile(raw_stats))
        ours_each.append(tracer_profile(tracer.stats(corrected=True)))
        del tracer
    recorded = set().union(*ours_each)
    raw = median_shares(raws)
    ours = median_shares(ours_each)
    theirs_raw = median_shares([cprofile_profile(stats, recorded) for stats in all_stats])
    raw_distance = distances(theirs_raw, raw)[0]
    theirs_each = [cprofile_profile(corrected_stats(stats, bias, generators), recorded)
                   for stats in all_stats]
    theirs = median_shares(theirs_each)
    distance, worst_self, worst_total = distances(theirs, ours)
    # how much one run's pair moves: the spread the median takes out
    each = [distances(c, t)[0] for c, t in zip(theirs_each, ours_each, strict=True)]
    reference: dict[str, float] = {}
    profiles = {"cProfile raw": theirs_raw, "cProfile": theirs, "Tracer raw": raw,
                "Tracer": ours}
    if sample_seconds:
        sampled, taken = sampled_profile(path, n, recorded, sample_seconds)
        profiles["py-spy"] = sampled
        reference = {
            "samples": taken,
            "cprofile": distances(sampled, theirs_raw)[0],
            "cprofile_corrected": distances(sampled, theirs)[0],
            "tracer": distances(sampled, raw)[0],
            "tracer_corrected": distances(sampled, ours)[0]}
    return {"reference": reference, "profiles": profiles, "program": name, "n": n,
            "native_s": native_s,
            "cprofile_overhead": cprofile_s / native_s, "tracer_overhead": tracer_s / native_s,
            "raw_distance": raw_distance, "distance": distance, "worst_self": worst_self,
            "worst_total": worst_total, "cprofile_bias": bias, "tracer_bias": tracer_bias,
            "spread": (min(each), max(each))}


def median_shares(profiles: list[Profile]) -> Profile:
    """The median of the profiles' shares of ``main``'s total time, per function, as a
    profile (a function a run did not see counts 0 in it). The median, not the mean: one
    run in a slow spell moves the mean of every share it has by a fifth of its error."""
    each = [shares(profile, "main") for profile in profiles]
    keys = {key for self_shares, _ in each for key in self_shares}
    return {key: (statistics.median(s.get(key, 0.0) for s, _ in each),
                  statistics.median(t.get(key, 0.0) for _, t in each)) for key in keys}


def print_detail(row: dict[str, Any]) -> None:
    """Each function's self and total shares (percent of ``main``'s total) in each profile,
    for the functions any of them gives at least 1%."""
    profiles: dict[str, Profile] = row["profiles"]
    named = {name: shares(profile, "main") for name, profile in profiles.items()}
    keys = sorted({k for self_s, total_s in named.values() for k in self_s
                   if max(self_s.get(k, 0), total_s.get(k, 0)) >= 0.01},
                  key=lambda k: -named["cProfile"][1].get(k, 0.0))
    print(f"\n{row['program']}: self / total shares, %")
    print(f"{'function':<24}" + "".join(f"{name:>16}" for name in named))
    for key in keys:
        cells = "".join(f"{self_s.get(key, 0) * 100:>8.1f}/{total_s.get(key, 0) * 100:<7.1f}"
                        for self_s, total_s in named.values())
        print(f"{key[2][:23]:<24}{cells}")


def _cost(bias: Bias) -> str:
    resumes = "" if bias.resume_inside is None else \
        f" ({bias.resume_inside:.0f}+{bias.resume_outside:.0f})"
    return f"{bias.inside:.0f}+{bias.outside:.0f}{resumes}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.25,
                        help="fraction of each program's N to run (default 0.25; "
                        "below 1, a program's QUICK size where it names one)")
    parser.add_argument("--only", help="comma-separated program names")
    parser.add_argument("--implicit", action="store_true",
                        help="Tracer(implicit_calls=True): dunders reached by operators too")
    parser.add_argument("--repeats", type=int, default=5,
                        help="runs each way, interleaved: their median shares are compared, "
                        "the fastest counts for the overheads (default 5)")
    parser.add_argument("--cprofile-builtins", action="store_true",
                        help="cProfile records builtin calls too (its default; they cost "
                        "it an event each, which the Tracer does not pay)")
    parser.add_argument("--sampled", type=float, default=0.0, metavar="SECONDS",
                        help="also sample a native run of each program for SECONDS with "
                        "py-spy (a reference without per-call cost) and show each "
                        "profile's distance to it")
    parser.add_argument("--detail", action="store_true",
                        help="also print each function's shares in each profile")
    args = parser.parse_args(argv)
    selected = args.only.split(",") if args.only else None
    biases = measured_biases(args.implicit, args.cprofile_builtins, args.repeats)
    rows = [compare(p, args.scale, args.implicit, args.cprofile_builtins, args.repeats,
                    biases, args.sampled)
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
    if args.detail:
        for r in rows:
            print_detail(r)
    cprofile = geomean([r["cprofile_overhead"] for r in rows])
    traced = geomean([r["tracer_overhead"] for r in rows])
    print(f"geometric mean overhead: cProfile {cprofile:.2f}x, Tracer {traced:.2f}x; "
          f"largest distance {max(r['distance'] for r in rows) * 100:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())

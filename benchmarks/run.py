"""splice benchmarks (issue 2, point 5): speed of round-tripped code against native CPython,
measured in the same run, and the latency of lowering + code generation per function.

    python benchmarks/run.py                    # full run (about two minutes)
    python benchmarks/run.py --quick            # a smoke run (seconds)
    python benchmarks/run.py --json out.json    # also write the numbers as JSON
    python benchmarks/run.py --literal          # measure renest=False code instead
    python benchmarks/run.py --stdlib all       # latency over the whole standard library

Speed: each program in ``benchmarks/programs/`` is loaded twice as fresh module objects; in
one copy every function and method (static/class methods, property accessors, functions
held in closure cells such as a decorator's wrapped function) is replaced by its
``splice.ir.roundtrip``; nested functions and lambdas are round-tripped as part of their
enclosing function. Both copies' ``main(n)`` run interleaved (the order alternates per
repeat) after a warm-up, with a garbage collection before each run; the ratio is
round trip / native of the minimum times (the median ratio is shown too). The two copies
must return the same result. The geometric mean of the ratios is the headline number
(target: at most 1.03).

Latency: for every function of the benchmark programs and of a set of standard library
modules (the corpus tool's function discovery, ``splice.tools.corpus.collect``), the source
file is parsed first (splice parses a file once and caches it), then ``splice.ir.lower`` +
``splice.ir.generate`` are timed (best of three). Reported: count, median, p90, p99, max
(target: median at most 0.5 ms).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import io
import json
import math
import os
import platform
import statistics
import sys
import time
import types
import warnings
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROGRAMS = os.path.join(HERE, "programs")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import splice.ir  # noqa: E402
from splice.tools.genprog import transform  # noqa: E402

#: standard library modules for the latency corpus (pure Python, import everywhere)
STDLIB = [
    "argparse", "ast", "base64", "bisect", "calendar", "colorsys", "configparser", "csv",
    "dataclasses", "difflib", "dis", "email.message", "enum", "fractions", "ftplib",
    "functools", "gettext", "heapq", "html.parser", "inspect", "ipaddress", "json.decoder",
    "json.encoder", "logging", "netrc", "ntpath", "optparse", "pathlib", "pickle",
    "pprint", "posixpath", "queue", "random", "shlex", "smtplib", "statistics", "string",
    "tarfile", "textwrap", "tokenize", "traceback", "typing", "urllib.parse", "uuid",
    "zipfile",
]
QUICK_STDLIB = ["bisect", "colorsys", "heapq", "shlex", "string", "textwrap"]


def program_paths(selected: list[str] | None = None) -> list[str]:
    names = sorted(f for f in os.listdir(PROGRAMS) if f.endswith(".py") and f != "__init__.py")
    if selected:
        names = [n for n in names if n[:-3] in selected]
    return [os.path.join(PROGRAMS, n) for n in names]


def load(path: str, tag: str) -> types.ModuleType:
    """A fresh module object for the program at ``path``."""
    name = f"splice_bench_{os.path.basename(path)[:-3]}_{tag}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def timed(fn: Any, n: int) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = fn(n)
    return time.perf_counter() - start, result


def bench_program(path: str, *, repeats: int, quick: bool, renest: bool) -> dict[str, Any]:
    native = load(path, "native")
    rebuilt = load(path, "roundtrip")
    functions = transform(vars(rebuilt), path, renest=renest, verify=False)
    n = getattr(native, "QUICK", max(1, native.N // 8)) if quick else native.N
    # warm-up, and the two copies must agree
    _, expected = timed(native.main, n)
    _, got = timed(rebuilt.main, n)
    if expected != got:
        raise AssertionError(f"{path}: round trip returned {got!r}, native {expected!r}")
    times: dict[str, list[float]] = {"native": [], "roundtrip": []}
    for i in range(repeats):
        order = [("native", native), ("roundtrip", rebuilt)]
        if i % 2:
            order.reverse()
        for label, module in order:
            times[label].append(timed(module.main, n)[0])
    ratios = [r / nat for r, nat in zip(times["roundtrip"], times["native"], strict=True)]
    return {
        "program": os.path.basename(path)[:-3],
        "functions": functions,
        "n": n,
        "native_min_s": min(times["native"]),
        "roundtrip_min_s": min(times["roundtrip"]),
        "ratio": min(times["roundtrip"]) / min(times["native"]),
        "ratio_median": statistics.median(ratios),
        "native_s": times["native"],
        "roundtrip_s": times["roundtrip"],
    }


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[index]


def corpus_functions(stdlib: list[str]) -> tuple[list[tuple[str, types.FunctionType]],
                                                 list[str]]:
    """(source label, function) for the benchmark programs and the stdlib modules, and
    the modules that could not be imported."""
    from splice.tools import corpus

    found: list[tuple[str, types.FunctionType]] = []
    for path in program_paths():
        module = load(path, "latency")
        targets, _ = corpus.collect(module, shadowed=False)
        found += [("benchmarks", t.function) for t in targets]
    missing = []
    claimed: set[types.CodeType] = set()
    for name in stdlib:
        try:
            module = corpus.import_module(name)
        except Exception:  # noqa: BLE001 - a module missing on this platform
            missing.append(name)
            continue
        targets, _ = corpus.collect(module, claimed=claimed)
        found += [("stdlib", t.function) for t in targets]
    return found, missing


def measure_latency(stdlib: list[str]) -> dict[str, Any]:
    from splice.ir.source import find_source

    functions, missing = corpus_functions(stdlib)
    per_source: dict[str, list[float]] = {}
    slowest: list[tuple[float, str]] = []
    failed = 0
    for label, fn in functions:
        try:
            with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                find_source(fn)  # parse the file once, untimed (splice caches it)
                best = math.inf
                for _ in range(3):
                    start = time.perf_counter()
                    splice.ir.generate(splice.ir.lower(fn))
                    best = min(best, time.perf_counter() - start)
        except Exception:  # noqa: BLE001 - unsupported or failing functions are counted
            failed += 1
            continue
        ms = best * 1e3
        per_source.setdefault(label, []).append(ms)
        slowest.append((ms, f"{fn.__module__}.{fn.__qualname__}"))
    every = [ms for values in per_source.values() for ms in values]
    slowest.sort(reverse=True)

    def summary(values: list[float]) -> dict[str, float]:
        return {"count": len(values), "median_ms": statistics.median(values),
                "p90_ms": percentile(values, 90), "p99_ms": percentile(values, 99),
                "max_ms": max(values), "mean_ms": statistics.fmean(values)}

    return {
        "all": summary(every),
        "by_source": {label: summary(values) for label, values in per_source.items()},
        "failed": failed,
        "modules": len(stdlib) - len(missing),
        "missing_modules": missing,
        "slowest": slowest[:5],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small inputs, 3 repeats, a few stdlib modules (a smoke run)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per copy")
    parser.add_argument("--json", metavar="OUT", help="write the results as JSON")
    parser.add_argument("--literal", action="store_true",
                        help="round-trip with renest=False (the testing mode)")
    parser.add_argument("--programs", help="comma-separated program names (default: all)")
    parser.add_argument("--stdlib", default="default",
                        help="'default' (45 modules), 'all' (the corpus tool's list), "
                             "'none', or a comma-separated list")
    parser.add_argument("--no-latency", action="store_true")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 7)
    selected = args.programs.split(",") if args.programs else None
    mode = "renest=False" if args.literal else "renest=True"
    print(f"splice benchmarks: Python {platform.python_version()} "
          f"({platform.python_implementation()}), {mode}, {repeats} repeats"
          + (", quick" if args.quick else ""))
    results = []
    header = (f"{'program':<15}{'funcs':>6}{'native ms':>11}{'splice ms':>11}"
              f"{'ratio':>8}{'median':>8}")
    print(header)
    print("-" * len(header))
    for path in program_paths(selected):
        r = bench_program(path, repeats=repeats, quick=args.quick, renest=not args.literal)
        results.append(r)
        print(f"{r['program']:<15}{r['functions']:>6}{r['native_min_s'] * 1e3:>11.1f}"
              f"{r['roundtrip_min_s'] * 1e3:>11.1f}{r['ratio']:>8.3f}"
              f"{r['ratio_median']:>8.3f}")
    speed_geomean = geomean([r["ratio"] for r in results])
    median_geomean = geomean([r["ratio_median"] for r in results])
    print("-" * len(header))
    print(f"{'geometric mean':<43}{speed_geomean:>8.3f}{median_geomean:>8.3f}"
          f"   (target <= 1.03)")
    out: dict[str, Any] = {"python": platform.python_version(), "mode": mode,
                           "repeats": repeats, "quick": args.quick, "programs": results,
                           "geomean_ratio": speed_geomean,
                           "geomean_median_ratio": median_geomean}
    if not args.no_latency and args.stdlib != "none":
        if args.stdlib == "all":
            from splice.tools import corpus
            stdlib, _ = corpus.enumerate_modules()
        elif args.stdlib == "default":
            stdlib = QUICK_STDLIB if args.quick else STDLIB
        else:
            stdlib = args.stdlib.split(",")
        latency = measure_latency(stdlib)
        out["latency"] = latency
        print()
        print("lower + generate per function (file already parsed), best of 3:")
        for label, s in [("all", latency["all"]), *latency["by_source"].items()]:
            print(f"  {label:<11} {s['count']:>6} functions: median {s['median_ms']:.3f} ms, "
                  f"p90 {s['p90_ms']:.3f}, p99 {s['p99_ms']:.3f}, max {s['max_ms']:.1f}")
        print(f"  ({latency['modules']} stdlib modules; {latency['failed']} functions "
              f"failed or unsupported; target median <= 0.5 ms)")
        for ms, name in latency["slowest"]:
            print(f"  slowest: {ms:8.2f} ms  {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

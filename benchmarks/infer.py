"""Inference benchmark (issue 4, points 1-3): soundness, precision and speed of
``splice.infer`` on the CPU-bound benchmark programs.

    python benchmarks/infer.py            # full run
    python benchmarks/infer.py --quick    # a smoke run (a test calls it)
    python benchmarks/infer.py --fuzz 500 # also the oracle over 500 random programs

For each program in ``benchmarks/programs/``, ``main`` is inferred for an ``int`` argument
(its whole call graph, from a fresh interpreter), then run under the soundness oracle
(``splice.infer.oracle.check_run``: every temp checked against its abstract value).

Precision: the fraction of IR values (temps, over every specialisation of the call graph)
inferred to an exact class or a constant. Speed: the median time to infer one function
(each specialisation's own time, callees excluded, after the whole graph is warm:
re-inferred alone), and the total time to infer the call graph from its entry (cold
interpreter, typeshed parsed already). The "losses" list which ops most often end ``Any``.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import statistics
import sys
import time
import types
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROGRAMS = os.path.join(HERE, "programs")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from splice.infer import ANY, AbstractInterpreter, infer  # noqa: E402
from splice.infer.oracle import all_inferences, check_run  # noqa: E402
from splice.ir import nodes as N  # noqa: E402

#: run sizes for the oracle run (small: the checks slow the program down)
ORACLE_N = {"nbody": 20, "raytrace": 6, "spectral_norm": 10, "recursion": 10,
            "closures": 50, "dicts": 50, "exceptions": 50, "generators": 50,
            "scheduler": 20, "text": 20}


def load(name: str) -> types.ModuleType:
    path = os.path.join(PROGRAMS, name + ".py")
    spec = importlib.util.spec_from_file_location(f"splice_infer_bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def measure(name: str, repeat: int) -> dict[str, Any]:
    module = load(name)
    totals = []
    inference = None
    for _ in range(repeat):
        start = time.perf_counter()
        inference = infer(module.main, [int])
        totals.append(time.perf_counter() - start)
    assert inference is not None
    infs = all_inferences(inference)
    values, exact, losses = count_exact(infs)
    # per-function time: each distinct specialisation inferred alone, callees cached
    interp = AbstractInterpreter()
    interp.infer(module.main, [int])
    per_function = []
    for inf in infs:
        if inf.argtypes and all(a is not ANY for a in inf.argtypes):
            start = time.perf_counter()
            interp._run(inf.function, interp.lowered(inf.function), inf.argtypes)
            per_function.append(time.perf_counter() - start)
    report = check_run(inference, module.main, ORACLE_N.get(name, 10))
    return {"name": name, "functions": len({id(i.function) for i in infs}),
            "specialisations": len(infs), "values": values, "exact": exact,
            "precision": exact / max(values, 1), "total_ms": min(totals) * 1000,
            "per_function_ms": per_function, "checks": report.checks,
            "violations": report.violations, "losses": losses}


def count_exact(inferences: list[Any]) -> tuple[int, int, collections.Counter[str]]:
    """How many IR values ``inferences`` hold, how many of them are inferred to an exact
    class or a constant, and the others by the kind of operation that made them."""
    values = exact = 0
    losses: collections.Counter[str] = collections.Counter()
    for inf in inferences:
        ops = {t: s.op for s in _assigns(inf.ir) for t in s.results}
        for temp, value in inf.types.items():
            values += 1
            if value.exact_class is not None or value.is_const:
                exact += 1
            else:
                op = ops.get(temp)
                losses[type(op).__name__ if op is not None else "for-target"] += 1
    return values, exact, losses


def _assigns(ir: N.FunctionIR) -> list[N.Assign]:
    out = []
    for stmt in ir.walk():
        if isinstance(stmt, N.Assign):
            out.append(stmt)
            if isinstance(stmt.op, N.MakeComprehension):
                out.extend(s for s in stmt.op.fn.walk() if isinstance(s, N.Assign))
    return out


def fuzz(seeds: range) -> tuple[int, int, int, float]:
    """The oracle over random programs (``splice.tools.genprog``): each program's ``main``
    is inferred and run instrumented. Returns (programs, checks, violations, seconds)."""
    from splice.tools.genprog import forget_source, generate_program
    from splice.tools.genprog import load as load_program

    checks = violations = 0
    spent = 0.0
    for seed in seeds:
        source = generate_program(seed)
        filename = f"<splice-infer-fuzz-{seed}>"
        try:
            namespace = load_program(source, filename, f"splice_infer_fuzz_{seed}")
            start = time.perf_counter()
            inference = infer(namespace["main"], [])
            spent += time.perf_counter() - start
            report = check_run(inference, namespace["main"])
            checks += report.checks
            violations += len(report.violations)
            for violation in report.violations[:3]:
                print(f"   VIOLATION seed {seed}: {violation}")
        finally:
            forget_source(filename)
    return len(seeds), checks, violations, spent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--fuzz", type=int, default=0, metavar="N",
                        help="also run the oracle over N random programs")
    args = parser.parse_args(argv)
    names = sorted(f[:-3] for f in os.listdir(PROGRAMS) if f.endswith(".py"))
    if args.quick:
        names = ["recursion", "spectral_norm"]
    infer(load("recursion").main, [int])  # parse typeshed's builtins stub once
    rows = [measure(name, 1 if args.quick else 5) for name in names]
    print(f"{'program':15} {'funcs':>5} {'specs':>5} {'values':>6} {'exact%':>7} "
          f"{'graph ms':>9} {'median fn ms':>12} {'checks':>7} {'violations':>10}  most lost")
    all_fn: list[float] = []
    losses: collections.Counter[str] = collections.Counter()
    for row in rows:
        all_fn.extend(row["per_function_ms"])
        losses.update(row["losses"])
        med = statistics.median(row["per_function_ms"]) * 1000 if row["per_function_ms"] else 0
        print(f"{row['name']:15} {row['functions']:5} {row['specialisations']:5} "
              f"{row['values']:6} {row['precision'] * 100:6.1f}% {row['total_ms']:9.2f} "
              f"{med:12.3f} {row['checks']:7} {len(row['violations']):10}  "
              + ", ".join(f"{k} {v}" for k, v in row["losses"].most_common(2)))
        for violation in row["violations"][:5]:
            print("   VIOLATION", violation)
    mean = statistics.mean(r["precision"] for r in rows)
    print(f"\nmean precision {mean * 100:.1f}% over {len(rows)} programs "
          f"(target 85%); median per function "
          f"{statistics.median(all_fn) * 1000:.3f} ms (target 1 ms) over {len(all_fn)}")
    print("values not exact, by op:", ", ".join(f"{k} {v}" for k, v in losses.most_common(8)))
    violations = sum(len(r["violations"]) for r in rows)
    print(f"oracle: {sum(r['checks'] for r in rows)} checks, {violations} violations")
    if args.fuzz:
        programs, checks, found, spent = fuzz(range(args.fuzz))
        print(f"random programs: {programs}, {checks} checks, {found} violations "
              f"(inference {spent:.1f} s in all)")
        violations += found
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())

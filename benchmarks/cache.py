"""Cold and warm processes under a Tracer: what the code cache on disk saves (issue 13).

For each program of ``benchmarks/programs/``, in fresh processes with an empty cache
folder of their own:

* **cold**: the first process runs ``main`` (the program's quick size) under a new
  ``Tracer``: everything is compiled and written to the cache; then, in the same process,
  a second new ``Tracer`` runs it again (its code already built in-process: bound, not
  built, ``docs/cache.md``);
* **warm**: a second process runs it under a new ``Tracer``, loading the code the first
  wrote.

Reported per program: the time splice spent compiling during the first run (the
``compiled`` hook's spans: building, or loading and binding) cold and warm, and their
ratio; the whole first run cold, warm, and the in-process second run, and warm / in-process
(target: at most 1.2). Times are the best of ``--repeats`` process pairs.

    python benchmarks/cache.py                 # every program, 3 repeats
    python benchmarks/cache.py --programs raytrace,text --repeats 1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = sorted(p.stem for p in (HERE / "programs").glob("*.py") if not p.stem.startswith("_"))

CHILD = textwrap.dedent("""
    import importlib, json, sys, time
    sys.path.insert(0, sys.argv[1])
    from splice.plugins import Tracer

    class Timed(Tracer):
        def __init__(self):
            super().__init__()
            self.compile_ns = 0

        def compiled(self, fn, start_ns, end_ns):
            self.compile_ns += end_ns - start_ns
            super().compiled(fn, start_ns, end_ns)

    program = importlib.import_module(sys.argv[2])
    n = getattr(program, "QUICK", max(1, program.N // 20))
    tracer = Timed()
    start = time.perf_counter()
    tracer.run(program.main, n)
    first = time.perf_counter() - start
    again = Timed()
    start = time.perf_counter()
    again.run(program.main, n)
    second = time.perf_counter() - start
    disk = tracer.context.owner.disk
    print(json.dumps({"first": first, "second": second, "compile": tracer.compile_ns / 1e9,
                      "compiles": tracer.context.owner.compiles,
                      "loaded": disk.loaded if disk else 0}))
""")


def _child(program: str, cache: str) -> dict[str, float]:
    env = {**os.environ, "SPLICE_CACHE": "1", "SPLICE_CACHE_DIR": cache}
    # a file: a plugin class is cached across processes only with its source file
    script = Path(cache).parent / "child.py"
    script.write_text(CHILD)
    done = subprocess.run([sys.executable, str(script), str(HERE / "programs"), program],
                          capture_output=True, text=True, env=env, timeout=600, check=True)
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def measure(program: str, repeats: int) -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="splice-bench-cache-") as folder:
            cache = os.path.join(folder, "cache")
            cold = _child(program, cache)
            warm = _child(program, cache)
        assert warm["compiles"] == 0 and warm["loaded"] > 0, (program, warm)
        for name, value in (("cold_compile", cold["compile"]), ("warm_compile", warm["compile"]),
                            ("cold_first", cold["first"]), ("warm_first", warm["first"]),
                            ("in_process", cold["second"])):
            best[name] = min(best.get(name, math.inf), value)
    return best


def _geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="OUT")
    options = parser.parse_args()
    rows = {}
    print(f"{'program':<14} {'compile cold':>12} {'warm':>8} {'ratio':>7}   "
          f"{'first cold':>10} {'warm':>8} {'in-proc':>8} {'warm/in':>8}")
    for program in options.programs.split(","):
        r = rows[program] = measure(program, options.repeats)
        print(f"{program:<14} {r['cold_compile'] * 1e3:>10.1f}ms {r['warm_compile'] * 1e3:>6.1f}ms "
              f"{r['cold_compile'] / r['warm_compile']:>6.1f}x   "
              f"{r['cold_first'] * 1e3:>8.1f}ms {r['warm_first'] * 1e3:>6.1f}ms "
              f"{r['in_process'] * 1e3:>6.1f}ms {r['warm_first'] / r['in_process']:>7.2f}x")
    ratios = [r["cold_compile"] / r["warm_compile"] for r in rows.values()]
    firsts = [r["warm_first"] / r["in_process"] for r in rows.values()]
    print(f"geometric mean: compile cold/warm {_geomean(ratios):.1f}x, "
          f"warm first run / in-process {_geomean(firsts):.2f}x")
    if options.json:
        Path(options.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

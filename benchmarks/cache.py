"""Cold and warm processes under a fresh plugin: what the code cache on disk saves (issue 13).

For each program of ``benchmarks/programs/`` and each plugin (``Tracer``: transformed code;
``FastMath``: code instances, typed stages), in fresh processes with an empty cache
folder of their own:

* **cold**: the first process runs ``main`` (the program's quick size) under a new plugin:
  everything is compiled and written to the cache; then, in the same process, a second new
  plugin of the same configuration runs it again (its code already built in-process: bound,
  not built, ``docs/cache.md``);
* **warm**: a second process runs it under a new plugin, loading the code the first wrote.

Every process first runs the program natively ``--native-runs`` times (default 2): the
first run of a process pays the program's own first-run costs (its module-level caches,
``re``'s compiled patterns, the allocator's arenas, the specialising interpreter's warm-up
of its code), which natively make a first run 1.0x to 2x its second. Without those runs
(``--native-runs 0``) the warm process's first run pays them and the in-process second run
does not, which no cache can make up; with them, both plugin runs start from a program
that already ran once, and the native first/again column shows what they took away.

Reported per program: the time splice spent compiling during the first run (the
``compiled`` hook's spans: building, or loading and binding) cold and warm, and their
ratio (target: at least 20), also without the collections of the whole heap (generation
2) that fell inside those spans (at the full size a full collection of the program's heap
can take tens of milliseconds; it is triggered by whatever allocates when the counts run
over, and costs in proportion to the program's heap, not to the compile's work); the
whole first run cold, warm, and the in-process second run, and warm / in-process (target:
at most 1.2); how many functions or instances the cold process built, the warm one built,
and the second plugin of the cold process built (both
should be 0). Times are the best of ``--repeats`` process pairs. splice's own modules are
byte-compiled first and the children may write bytecode (``PYTHONDONTWRITEBYTECODE`` is
dropped), as for an installed splice: a warm process's imports are not source compiles.

    python benchmarks/cache.py                 # every program, both plugins, 3 repeats
    python benchmarks/cache.py --programs raytrace,text --plugins fastmath --repeats 1
    python benchmarks/cache.py --native-runs 0     # the first plugin run is the process's
    python benchmarks/cache.py --size full         # the programs' full sizes (N)
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROGRAMS = sorted(p.stem for p in (HERE / "programs").glob("*.py") if not p.stem.startswith("_"))

CHILD = textwrap.dedent("""
    import gc, importlib, json, math, sys, time
    sys.path.insert(0, sys.argv[1])
    from splice.plugins import FastMath, Tracer

    def fast_sqrt(x):
        return x ** 0.5

    def fast_sin(x):
        return x - x ** 3 / 6 + x ** 5 / 120

    class Timed:
        compile_ns = 0

        def compiled(self, fn, start_ns, end_ns):
            self.compile_ns += end_ns - start_ns
            SPANS.append((start_ns, end_ns))
            super().compiled(fn, start_ns, end_ns)

    # the collections that fall inside compile spans: a collection of the whole heap is
    # triggered by whichever allocation comes when the counts run over, and costs in
    # proportion to the program's heap, not to what the compile allocated
    SPANS, COLLECTIONS = [], []

    def collected(phase, info, started=[0]):
        if phase == "start":
            started[0] = time.perf_counter_ns()
        else:
            COLLECTIONS.append((started[0], time.perf_counter_ns(), info["generation"]))

    def full_collections_in_compiles():
        inside = 0
        for start, end, generation in COLLECTIONS:
            if generation == 2:
                for span_start, span_end in SPANS:
                    inside += max(0, min(end, span_end) - max(start, span_start))
        return inside / 1e9

    class TimedTracer(Timed, Tracer):
        pass

    class TimedFastMath(Timed, FastMath):
        pass

    def plugin():
        if sys.argv[3] == "tracer":
            return TimedTracer()
        return TimedFastMath({math.sqrt: fast_sqrt, math.sin: fast_sin})

    program = importlib.import_module(sys.argv[2])
    n = program.N if sys.argv[5] == "full" else \
        getattr(program, "QUICK", max(1, program.N // 20))
    native = []
    for _ in range(int(sys.argv[4])):
        start = time.perf_counter()
        program.main(n)
        native.append(time.perf_counter() - start)
    first_plugin = plugin()
    gc.callbacks.append(collected)
    start = time.perf_counter()
    first_plugin.run(program.main, n)
    first = time.perf_counter() - start
    gc.callbacks.remove(collected)
    full = full_collections_in_compiles()
    again = plugin()
    start = time.perf_counter()
    again.run(program.main, n)
    second = time.perf_counter() - start
    context = first_plugin.context
    owner = context.owner
    disk = owner.disk
    print(json.dumps({"first": first, "second": second, "native": native,
                      "compile": first_plugin.compile_ns / 1e9,
                      "compile_full_gc": full,
                      "compiles": owner.compiles + context.instances.builds,
                      "again_compiles": again.context.instances.builds,
                      "loaded": disk.loaded if disk else 0}))
""")


def _child(program: str, plugin: str, cache: str, native_runs: int, size: str
           ) -> dict[str, Any]:
    env = {**os.environ, "SPLICE_CACHE": "1", "SPLICE_CACHE_DIR": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # a file: a plugin class is cached across processes only with its source file
    script = Path(cache).parent / "child.py"
    script.write_text(CHILD)
    done = subprocess.run([sys.executable, str(script), str(HERE / "programs"), program, plugin,
                           str(native_runs), size],
                          capture_output=True, text=True, env=env, timeout=600, check=True)
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def measure(program: str, plugin: str, repeats: int, native_runs: int, size: str
            ) -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="splice-bench-cache-") as folder:
            cache = os.path.join(folder, "cache")
            cold = _child(program, plugin, cache, native_runs, size)
            warm = _child(program, plugin, cache, native_runs, size)
        if native_runs >= 2:
            for name, value in (("native_first", warm["native"][0]),
                                ("native_again", warm["native"][1])):
                best[name] = min(best.get(name, math.inf), value)
        best["warm_builds"] = max(best.get("warm_builds", 0), warm["compiles"])
        best["again_builds"] = max(best.get("again_builds", 0), cold["again_compiles"])
        best["cold_builds"] = max(best.get("cold_builds", 0), cold["compiles"])
        for name, value in (("cold_compile", cold["compile"]), ("warm_compile", warm["compile"]),
                            ("cold_compile_net", cold["compile"] - cold["compile_full_gc"]),
                            ("warm_compile_net", warm["compile"] - warm["compile_full_gc"]),
                            ("cold_first", cold["first"]), ("warm_first", warm["first"]),
                            ("in_process", cold["second"])):
            best[name] = min(best.get(name, math.inf), value)
    return best


def _geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--plugins", default="tracer,fastmath")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--native-runs", type=int, default=2,
                        help="native runs of the program before the plugin's, in every "
                             "process (0: none; the first run of a process pays the "
                             "program's own first-run costs)")
    parser.add_argument("--size", choices=("quick", "full"), default="quick",
                        help="the programs' quick size (QUICK, else N/20: runs of 1 to 60 "
                             "ms, where a warm process's fixed costs weigh most) or their "
                             "full size N")
    parser.add_argument("--json", metavar="OUT")
    options = parser.parse_args()
    import splice

    compileall.compile_dir(os.path.dirname(splice.__file__), quiet=1)
    rows: dict[str, dict[str, dict[str, float]]] = {}
    for plugin in options.plugins.split(","):
        print(f"\n{plugin}:")
        print(f"{'program':<14} {'compile cold':>12} {'warm':>8} {'ratio':>7}   "
              f"{'first cold':>10} {'warm':>8} {'in-proc':>8} {'warm/in':>8}   "
              f"built: cold, warm, again   without full collections: cold, warm, ratio")
        table = rows[plugin] = {}
        for program in options.programs.split(","):
            r = table[program] = measure(program, plugin, options.repeats,
                                         options.native_runs, options.size)
            print(f"{program:<14} {r['cold_compile'] * 1e3:>10.1f}ms "
                  f"{r['warm_compile'] * 1e3:>6.1f}ms "
                  f"{r['cold_compile'] / r['warm_compile']:>6.1f}x   "
                  f"{r['cold_first'] * 1e3:>8.1f}ms {r['warm_first'] * 1e3:>6.1f}ms "
                  f"{r['in_process'] * 1e3:>6.1f}ms {r['warm_first'] / r['in_process']:>7.2f}x   "
                  f"{r['cold_builds']:.0f}, {r['warm_builds']:.0f}, {r['again_builds']:.0f}   "
                  f"{r['cold_compile_net'] * 1e3:.1f}ms, {r['warm_compile_net'] * 1e3:.1f}ms, "
                  f"{r['cold_compile_net'] / r['warm_compile_net']:.1f}x"
                  + (f"   native first/again {r['native_first'] / r['native_again']:.2f}x"
                     if "native_first" in r else ""),
                  flush=True)
        ratios = [r["cold_compile"] / r["warm_compile"] for r in table.values()]
        firsts = [r["warm_first"] / r["in_process"] for r in table.values()]
        net = [r["cold_compile_net"] / r["warm_compile_net"] for r in table.values()]
        both = [p for p, r in table.items()
                if r["cold_compile"] / r["warm_compile"] >= 20
                and r["warm_first"] / r["in_process"] <= 1.2]
        both_net = [p for p, r in table.items()
                    if r["cold_compile_net"] / r["warm_compile_net"] >= 20
                    and r["warm_first"] / r["in_process"] <= 1.2]
        print(f"geometric mean: compile cold/warm {_geomean(ratios):.1f}x "
              f"({_geomean(net):.1f}x without full collections), "
              f"warm first run / in-process {_geomean(firsts):.2f}x")
        print(f"compile ratio >= 20x and warm/in-process <= 1.2x: {len(both)} of "
              f"{len(table)} ({', '.join(both) or 'none'}); without full collections in "
              f"the compile spans: {len(both_net)} ({', '.join(both_net) or 'none'})")
    if options.json:
        Path(options.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

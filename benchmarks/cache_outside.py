"""The code cache on programs nobody here wrote (issue 13): each pyperformance program of
``outside.py`` in three fresh processes sharing an empty cache folder: natively, then under
a new plugin twice (**cold**: everything compiled and written; **warm**: loaded). Reported
per program and plugin: whether the three results agree, how many functions or instances
each process built (warm should build none) and loaded, and the first run's time cold and
warm (compile and the program's run). A benchmark whose first recorded function returns
its own timing (``bench_time_func``) is compared by its having run, not by its result.

    python benchmarks/cache_outside.py                       # Tracer and FastMath, all
    python benchmarks/cache_outside.py --plugins fastmath --only deltablue,go
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from outside import NAMES  # noqa: E402

CHILD = textwrap.dedent("""
    import json, math, sys, time
    sys.path.insert(0, sys.argv[1])
    import outside
    from splice.plugins import FastMath, Tracer

    def fast_sqrt(x):
        return x ** 0.5

    name, kind = sys.argv[2], sys.argv[3]
    timed, call = outside.load(name, "cache")
    if kind == "native":
        print(json.dumps({"result": "timed" if timed else repr(call())[:300]}))
        raise SystemExit
    plugin = Tracer() if kind == "tracer" else FastMath({math.sqrt: fast_sqrt})
    start = time.perf_counter()
    result = plugin.run(call)
    took = time.perf_counter() - start
    context = plugin.context
    disk = context.owner.disk
    print(json.dumps({"result": "timed" if timed else repr(result)[:300], "time": took,
                      "built": context.owner.compiles + context.instances.builds,
                      "loaded": disk.loaded if disk else 0,
                      "ignored": [why for _, why in disk.ignored] if disk else []}))
""")


def _child(script: str, name: str, kind: str, cache: str) -> dict[str, object]:
    env = {**os.environ, "SPLICE_CACHE": "1", "SPLICE_CACHE_DIR": cache}
    done = subprocess.run([sys.executable, script, HERE, name, kind], capture_output=True,
                          text=True, env=env, timeout=900)
    if done.returncode:
        return {"result": f"failed: {done.stderr.strip().splitlines()[-1:]}"}
    report: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--plugins", default="tracer,fastmath")
    options = parser.parse_args()
    names = [n for n in options.only.split(",") if n] or NAMES
    print(f"Python {sys.version.split()[0]}")
    print(f"{'plugin':<9}{'program':<16}{'same':>5}{'built cold':>11}{'warm':>6}"
          f"{'loaded':>8}{'first cold ms':>15}{'warm ms':>9}   ignored")
    differ = rebuilt = 0
    with tempfile.TemporaryDirectory(prefix="splice-cache-outside-") as folder:
        script = os.path.join(folder, "child.py")
        with open(script, "w", encoding="utf-8") as file:
            file.write(CHILD)
        for kind in options.plugins.split(","):
            for name in names:
                cache = os.path.join(folder, f"{kind}-{name}")
                native = _child(script, name, "native", cache)
                cold = _child(script, name, kind, cache)
                warm = _child(script, name, kind, cache)
                same = native["result"] == cold["result"] == warm["result"]
                differ += not same
                rebuilt += bool(warm.get("built"))
                ignored = warm.get("ignored") or []
                print(f"{kind:<9}{name:<16}{'yes' if same else 'NO':>5}"
                      f"{cold.get('built', '-')!s:>11}{warm.get('built', '-')!s:>6}"
                      f"{warm.get('loaded', '-')!s:>8}"
                      f"{float(cold.get('time', 0)) * 1e3:>15.0f}"   # type: ignore[arg-type]
                      f"{float(warm.get('time', 0)) * 1e3:>9.0f}   "  # type: ignore[arg-type]
                      f"{'; '.join(map(str, ignored))[:120]}", flush=True)
                if not same:
                    print(f"    native {native['result']}\n    cold {cold['result']}\n"
                          f"    warm {warm['result']}")
    print(f"results differing: {differ}; warm processes that built anything: {rebuilt}")


if __name__ == "__main__":
    main()

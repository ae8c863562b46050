"""Steady-state cost under the identity plugin counted in instructions, not seconds: for
a machine too loaded (or too noisy) for wall-clock ratios to mean anything.

    python benchmarks/instructions.py                         # deltablue, richards, chaos
    python benchmarks/instructions.py --only go,hexiom --runs 2,6

For each pyperformance program of ``benchmarks/outside.py`` and each mode (native; the
identity plugin, ``splice.Plugin()``: ``recurse`` always true), the program is loaded afresh
and its first benchmark called ``k`` times in one process under valgrind's callgrind, a
garbage collection before each call (as outside.py does), for two values of ``k``
(``--runs``, default 2 and 6). The difference of the two instruction counts divided by the
difference of the ``k``s is the instructions of one steady run: loading, compiling and
the first runs cancel out (``PYTHONHASHSEED=0``: with a random seed the counts moved by
about 0.3% from one process to the next). Reported: those per mode, and identity/native.
The counts include the collections before the calls, which ``outside.py`` does not time:
they traverse splice's own objects too. Needs valgrind and pyperformance
(``pip install --no-deps pyperformance``); takes about a minute a program (callgrind runs
the program some 50 times slower).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = """
import gc, sys
sys.path.insert(0, {here!r})
import outside, splice
timed, call = outside.load({name!r}, {mode!r})
plugin = splice.Plugin()
for _ in range({runs}):
    gc.collect()
    plugin.run(call) if {mode!r} == "identity" else call()
"""


def callgrind_instructions(code: str, what: str) -> int:
    """Instructions callgrind counts for a fresh ``python -c code`` (splice's cache off,
    ``PYTHONHASHSEED=0``); ``what`` names the run in the error if callgrind fails.
    ``shapes_instructions.py`` counts with this too."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, "-c", code],
        capture_output=True, text=True,
        env={**os.environ, "SPLICE_CACHE": "0", "PYTHONHASHSEED": "0"}, check=False)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{what}: callgrind failed\n{done.stderr[-2000:]}")
    return int(found.group(1))


def instructions(name: str, mode: str, runs: int) -> int:
    """Instructions callgrind counts for ``runs`` calls of program ``name`` in ``mode``."""
    code = CHILD.format(here=HERE, name=name, mode=mode, runs=runs)
    return callgrind_instructions(code, f"{name} {mode}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="deltablue,richards,chaos")
    parser.add_argument("--runs", default="2,6", help="the two numbers of calls: k1,k2")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    low, high = (int(k) for k in args.runs.split(","))
    if not 0 < low < high:
        raise SystemExit("--runs: two numbers of calls, the first smaller")
    print(f"{'program':<12} {'native':>14} {'identity':>14} {'ratio':>7}   "
          f"(instructions of one steady run: calls {low} and {high})")
    for name in args.only.split(","):
        per_run = {mode: (instructions(name, mode, high) - instructions(name, mode, low))
                   / (high - low) for mode in ("native", "identity")}
        print(f"{name:<12} {per_run['native']:>14,.0f} {per_run['identity']:>14,.0f} "
              f"{per_run['identity'] / per_run['native']:>6.2f}x", flush=True)


if __name__ == "__main__":
    main()

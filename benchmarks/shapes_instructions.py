"""What one operation of each ``shapes.py`` kernel costs in instructions, natively and under
the identity plugin: callgrind, not a clock, so another engineer's jobs on the same cores
do not move it.

    python benchmarks/shapes_instructions.py                      # every kernel
    python benchmarks/shapes_instructions.py --only "o.m(x),c(x)"  # labels containing these

Each kernel runs in a fresh process under valgrind's callgrind, twice with 200 iterations
(compiling, warming up the interpreter's specialisations) and then with ``n`` iterations,
for two values of ``n`` (``--sizes``, default 2000 and 12000); the difference of the two
counts divided by the difference of the ``n``s is one iteration's instructions, the loop's
own included (both modes pay it). ``PYTHONHASHSEED=0`` makes the counts repeat exactly
(a random seed moved them by hundreds of instructions per iteration). Needs valgrind.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from instructions import callgrind_instructions  # noqa: E402

CHILD = """
import sys
sys.path.insert(0, {here!r})
import shapes, splice
kernel = shapes.KERNELS[{label!r}]
plugin = splice.Plugin()
run = (lambda n: plugin.run(kernel, n)) if {mode!r} == "identity" else kernel
run(200); run(200); run({n})
"""


def instructions(label: str, mode: str, n: int) -> int:
    """Instructions callgrind counts for the process running kernel ``label`` ``n`` times."""
    code = CHILD.format(here=HERE, label=label, mode=mode, n=n)
    return callgrind_instructions(code, f"{label} {mode}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated parts of kernel labels")
    parser.add_argument("--sizes", default="2000,12000", help="the two iteration counts")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    low, high = (int(k) for k in args.sizes.split(","))
    if not 0 < low < high:
        raise SystemExit("--sizes: two iteration counts, the first smaller")
    import shapes

    wanted = [part for part in args.only.split(",") if part]
    print(f"{'kernel':<46} {'native':>8} {'identity':>9} {'added':>7}   "
          f"(instructions per iteration: n={low} and n={high})")
    for label in shapes.KERNELS:
        if wanted and not any(part in label for part in wanted):
            continue
        per = {mode: (instructions(label, mode, high) - instructions(label, mode, low))
               / (high - low) for mode in ("native", "identity")}
        print(f"{label:<46} {per['native']:>8,.0f} {per['identity']:>9,.0f} "
              f"{per['identity'] - per['native']:>+7,.0f}", flush=True)


if __name__ == "__main__":
    main()

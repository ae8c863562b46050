"""Precision of the typed stages on programs nobody here wrote (issue 15, point 2): the
share of IR values inferred to an exact class or a constant, over the code instances one
run of each pyperformance program of ``outside.py`` builds under a plugin whose only hook
is ``typed(self, ir): return ir`` (every inference of each instance, callees' included,
each counted once), with the operations whose values are lost most often.

    python benchmarks/outside_precision.py
    python benchmarks/outside_precision.py --only deltablue,nbody

The disk cache is turned off (an instance loaded from it holds no inference). Target: a
geometric mean of at least 0.80 and at least 0.60 on every program.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import sys

os.environ["SPLICE_CACHE"] = "0"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from infer import count_exact  # noqa: E402
from outside import NAMES, TypedIdentity, load  # noqa: E402

from splice.infer.oracle import all_inferences  # noqa: E402


def precision(name: str) -> tuple[int, int, collections.Counter[str]]:
    """Values, exact values and losses by operation over one run of ``name``."""
    _, call = load(name, "precision")
    plugin = TypedIdentity()
    plugin.run(call)
    seen: dict[int, object] = {}
    for ci in plugin.context.instances:
        if ci.inference is not None:
            for inference in all_inferences(ci.inference):
                seen.setdefault(id(inference), inference)
    return count_exact(list(seen.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    options = parser.parse_args()
    names = [n for n in options.only.split(",") if n] or NAMES
    print(f"Python {sys.version.split()[0]}")
    print(f"{'program':<16}{'values':>8}{'exact':>8}   most lost")
    shares, total = [], collections.Counter[str]()
    for name in names:
        values, exact, losses = precision(name)
        share = exact / max(values, 1)
        shares.append(max(share, 1e-3))
        total.update(losses)
        print(f"{name:<16}{values:>8}{share:>8.2f}   "
              + ", ".join(f"{op} {n}" for op, n in losses.most_common(5)), flush=True)
    mean = math.exp(sum(map(math.log, shares)) / len(shares))
    print(f"geometric mean {mean:.2f}, lowest {min(shares):.2f} (targets 0.80 and 0.60)")
    print("values not exact, by op: "
          + ", ".join(f"{op} {n}" for op, n in total.most_common(10)))


if __name__ == "__main__":
    main()

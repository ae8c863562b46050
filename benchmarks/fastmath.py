"""FastMath vs the same program rewritten by hand, measured in the same run.

``simulate`` calls ``math.sin``, ``math.exp`` and ``math.sqrt`` on floats; ``by_hand`` is the
same function with those calls replaced by the cheap versions by hand. Timed, interleaved,
in one process:

* ``fastmath``: ``simulate`` compiled under ``FastMath`` (``splice.compile``) and invoked;
* ``fastmath_world_age``: the same with ``FastMath(..., world_age=True)``: the rewrites
  are checked when each call starts, not at each use;
* ``hand``: ``by_hand`` compiled through the same pipeline under a plugin that, like
  FastMath, enters every function but the replacements, and invoked (the same machinery
  without the rewrite: the ratio fastmath/hand is the cost of rewriting with FastMath
  instead of by hand; target at most 1.02);
* ``hand_native`` / ``original_native``: ``by_hand`` and ``simulate`` run natively (for
  reference: the cost of the machinery itself, and what the replacements buy).

Every configuration's result is compared with native ``by_hand`` (it must be identical).

Usage: ``python benchmarks/fastmath.py [--quick] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import splice  # noqa: E402
from splice.plugins import FastMath  # noqa: E402


def fast_sin(x):  # type: ignore[no-untyped-def]
    """sin on [-pi, pi] by a 7th-degree Taylor polynomial after range reduction."""
    x = math.remainder(x, 2.0 * math.pi)
    x2 = x * x
    return x * (1.0 - x2 / 6.0 * (1.0 - x2 / 20.0 * (1.0 - x2 / 42.0)))


def fast_exp(x):  # type: ignore[no-untyped-def]
    """exp for small |x| by a 5th-degree polynomial."""
    return 1.0 + x * (1.0 + x / 2.0 * (1.0 + x / 3.0 * (1.0 + x / 4.0 * (1.0 + x / 5.0))))


def fast_sqrt(x):  # type: ignore[no-untyped-def]
    return x ** 0.5


def simulate(x, n):  # type: ignore[no-untyped-def]
    """A damped oscillator stepped ``n`` times (floats throughout)."""
    v = 0.0
    total = 0.0
    dt = 0.01
    for _ in range(n):
        a = -math.sin(x) * math.exp(-0.1 * dt)
        v = v + a * dt
        x = x + v * dt
        total = total + math.sqrt(x * x + v * v)
    return total


def by_hand(x, n):  # type: ignore[no-untyped-def]
    """``simulate`` with the replacements written in by hand."""
    v = 0.0
    total = 0.0
    dt = 0.01
    for _ in range(n):
        a = -fast_sin(x) * fast_exp(-0.1 * dt)
        v = v + a * dt
        x = x + v * dt
        total = total + fast_sqrt(x * x + v * v)
    return total


REPLACEMENTS = {math.sin: fast_sin, math.exp: fast_exp, math.sqrt: fast_sqrt}


class ByHand(splice.Plugin):
    """No rewrite; the replacements run natively, as under FastMath."""

    def recurse(self, fn: Any) -> bool:
        return fn not in REPLACEMENTS.values()


def measure(configs: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """Each configuration timed ``rounds`` times, interleaved (round-robin)."""
    times: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(rounds):
        for name, run in configs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    args = parser.parse_args(argv)
    n, rounds = (2_000, 3) if args.quick else (200_000, 15)
    x0 = 0.5

    plugin = FastMath(REPLACEMENTS)
    start = time.perf_counter()
    rewritten = splice.compile(plugin, simulate, float, int)
    compile_ms = (time.perf_counter() - start) * 1e3
    hand = splice.compile(ByHand(), by_hand, float, int)
    # the rewrite checked when each call starts instead of at each use (Julia's world age)
    aged = splice.compile(FastMath(REPLACEMENTS, world_age=True), simulate, float, int)
    rewrites = [f"line {r.line}: {r.original} -> {r.replacement}" for r in plugin.rewrites]

    expected = by_hand(x0, n)
    configs: dict[str, Callable[[], Any]] = {
        "fastmath": lambda: splice.invoke(rewritten, x0, n),
        "fastmath_world_age": lambda: splice.invoke(aged, x0, n),
        "hand": lambda: splice.invoke(hand, x0, n),
        "hand_native": lambda: by_hand(x0, n),
        "original_native": lambda: simulate(x0, n),
    }
    for name in ("fastmath", "fastmath_world_age", "hand", "hand_native"):
        got = configs[name]()
        if got != expected:
            print(f"MISMATCH: {name} returned {got!r}, by_hand returned {expected!r}")
            return 1
    configs["fastmath"]()  # warm up
    times = measure(configs, rounds)
    best = {name: min(values) for name, values in times.items()}
    median = {name: statistics.median(values) for name, values in times.items()}
    ratios = {
        "fastmath/hand": best["fastmath"] / best["hand"],
        "fastmath_world_age/hand": best["fastmath_world_age"] / best["hand"],
        "fastmath/hand_native": best["fastmath"] / best["hand_native"],
        "hand/hand_native": best["hand"] / best["hand_native"],
        "original_native/hand_native": best["original_native"] / best["hand_native"],
    }
    print(f"FastMath benchmark: n={n}, {rounds} interleaved rounds, best of each")
    print(f"  compile (FastMath instance, first): {compile_ms:.1f} ms")
    print(f"  rewrites: {len(rewrites)}")
    for line in rewrites:
        print(f"    {line}")
    for name in configs:
        print(f"  {name:<18} best {best[name] * 1e3:8.2f} ms   median {median[name] * 1e3:8.2f} ms")
    for name, value in ratios.items():
        print(f"  {name:<28} {value:.3f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "n": n, "rounds": rounds, "compile_ms": compile_ms, "rewrites": rewrites,
            "best_s": best, "median_s": median, "ratios": ratios}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

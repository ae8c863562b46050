"""FastMath on numeric code that keeps its data in lists, vs the same program rewritten by
hand, measured in the same run (issue 15, point 3).

``advance`` is an n-body step in the style of pyperformance's ``nbody``: positions and
velocities live in lists (``[x, y, z]``), so inference knows the elements only as ``Any``
and FastMath's proof-based rewrite (every argument inferred ``float``) rewrites nothing.
``FastMath(..., speculate=True)`` rewrites the ``math.sqrt`` calls anyway, behind a check
at the call that each argument is exactly a float. ``by_hand`` is ``advance`` with the
replacement written in. Timed, interleaved, in one process, each through
``splice.compile``/``splice.invoke``:

* ``speculate``: ``advance`` under ``FastMath(..., speculate=True)``;
* ``speculate_world_age``: the same with ``world_age=True`` (a speculation is still
  checked at the call: no entry guard covers a list's element);
* ``proof_only``: under ``FastMath(...)`` (rewrites nothing here: for reference);
* ``hand``: ``by_hand`` under a plugin that enters every function but the replacement.

Targets: speculate/hand at most 1.05, speculate_world_age/hand at most 1.02. Every
configuration's result is compared with native ``by_hand`` (it must be identical).

Usage: ``python benchmarks/fastmath_lists.py [--quick] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastmath import measure  # noqa: E402

import splice  # noqa: E402
from splice.plugins import FastMath  # noqa: E402


def fast_sqrt(x):  # type: ignore[no-untyped-def]
    return x ** 0.5


def make_bodies():  # type: ignore[no-untyped-def]
    """Five bodies as ``[position, velocity, mass]``, positions and velocities lists."""
    return [[[float(i), 0.5 * i, -0.25 * i], [0.01 * i, -0.02 * i, 0.03], 1.0 + i]
            for i in range(5)]


def advance(bodies, dt, n):  # type: ignore[no-untyped-def]
    pairs = [(bodies[i], bodies[j]) for i in range(len(bodies))
             for j in range(i + 1, len(bodies))]
    for _ in range(n):
        for (p1, v1, m1), (p2, v2, m2) in pairs:
            dx = p1[0] - p2[0]
            dy = p1[1] - p2[1]
            dz = p1[2] - p2[2]
            distance = math.sqrt(dx * dx + dy * dy + dz * dz)
            mag = dt / (distance * distance * distance)
            b1, b2 = m1 * mag, m2 * mag
            v1[0] -= dx * b2
            v1[1] -= dy * b2
            v1[2] -= dz * b2
            v2[0] += dx * b1
            v2[1] += dy * b1
            v2[2] += dz * b1
        for p, v, _m in bodies:
            p[0] += dt * v[0]
            p[1] += dt * v[1]
            p[2] += dt * v[2]
    return sum(p[0] + p[1] + p[2] for p, _v, _m in bodies)


def by_hand(bodies, dt, n):  # type: ignore[no-untyped-def]
    """``advance`` with the replacement written in by hand."""
    pairs = [(bodies[i], bodies[j]) for i in range(len(bodies))
             for j in range(i + 1, len(bodies))]
    for _ in range(n):
        for (p1, v1, m1), (p2, v2, m2) in pairs:
            dx = p1[0] - p2[0]
            dy = p1[1] - p2[1]
            dz = p1[2] - p2[2]
            distance = fast_sqrt(dx * dx + dy * dy + dz * dz)
            mag = dt / (distance * distance * distance)
            b1, b2 = m1 * mag, m2 * mag
            v1[0] -= dx * b2
            v1[1] -= dy * b2
            v1[2] -= dz * b2
            v2[0] += dx * b1
            v2[1] += dy * b1
            v2[2] += dz * b1
        for p, v, _m in bodies:
            p[0] += dt * v[0]
            p[1] += dt * v[1]
            p[2] += dt * v[2]
    return sum(p[0] + p[1] + p[2] for p, _v, _m in bodies)


REPLACEMENTS = {math.sqrt: fast_sqrt}


class ByHand(splice.Plugin):
    """No rewrite; the replacement runs natively, as under FastMath."""

    def recurse(self, fn: Any) -> bool:
        return fn is not fast_sqrt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    args = parser.parse_args(argv)
    n, rounds = (200, 3) if args.quick else (20_000, 15)
    dt = 0.001

    speculating = FastMath(REPLACEMENTS, speculate=True)
    compiled = {
        "speculate": (speculating, advance),
        "speculate_world_age": (FastMath(REPLACEMENTS, speculate=True, world_age=True),
                                advance),
        "proof_only": (FastMath(REPLACEMENTS), advance),
        "hand": (ByHand(), by_hand),
    }
    instances = {name: splice.compile(plugin, fn, list, float, int)
                 for name, (plugin, fn) in compiled.items()}
    expected = by_hand(make_bodies(), dt, n)
    for name, ci in instances.items():
        got = splice.invoke(ci, make_bodies(), dt, n)
        if name != "proof_only" and got != expected:
            print(f"MISMATCH: {name} returned {got!r}, by_hand returned {expected!r}")
            return 1
    rewrites = [f"line {r.line}: {r.original} -> {r.replacement}"
                for r in speculating.rewrites]
    configs: dict[str, Callable[[], Any]] = {
        name: (lambda ci=ci: splice.invoke(ci, make_bodies(), dt, n))
        for name, ci in instances.items()}
    configs["hand_native"] = lambda: by_hand(make_bodies(), dt, n)
    times = measure(configs, rounds)
    best = {name: min(values) for name, values in times.items()}
    ratios = {f"{name}/hand": best[name] / best["hand"]
              for name in ("speculate", "speculate_world_age", "proof_only")}
    ratios["hand/hand_native"] = best["hand"] / best["hand_native"]
    print(f"FastMath on list-held floats: n={n}, {rounds} interleaved rounds, best of each")
    print(f"  rewrites (speculate): {len(rewrites)}")
    for line in rewrites:
        print(f"    {line}")
    for name in configs:
        print(f"  {name:<20} best {best[name] * 1e3:8.2f} ms")
    for name, value in ratios.items():
        print(f"  {name:<28} {value:.3f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "n": n, "rounds": rounds, "rewrites": rewrites, "best_s": best,
            "ratios": ratios}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

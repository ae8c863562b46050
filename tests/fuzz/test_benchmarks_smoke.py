"""Smoke test: ``benchmarks/run.py --quick`` runs every benchmark program natively and
round-tripped (it checks both copies return the same result) and measures lowering latency.
Timings are never asserted (benchmarks are not tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_benchmark_run(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick",
                    "--repeats", "1", "--stdlib", "bisect,colorsys", "--json", str(out)],
                   check=True, capture_output=True, text=True, env=env, timeout=300)
    data = json.loads(out.read_text())
    programs = {p["program"] for p in data["programs"]}
    assert len(programs) >= 8
    assert all(p["functions"] > 0 and p["ratio"] > 0 for p in data["programs"])
    assert data["latency"]["all"]["count"] > 100
    assert data["latency"]["failed"] == 0

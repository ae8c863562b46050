"""The plugin benchmark script runs (a smoke run on one program). Performance itself is
measured by the benchmarks, never asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_plugin_benchmarks_quick_run(tmp_path: Path) -> None:
    out = tmp_path / "plugins.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "plugins.py"), "--quick",
         "--programs", "nbody", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(out.read_text())
    (program,) = results["programs"]
    assert program["program"] == "nbody"
    assert set(program["ratios"]) == {"identity", "nested", "intercept", "dynamic",
                                      "monkeypatch", "tracer", "setprofile"}
    assert program["intercept"]["calls_per_run"] > 0
    assert [r["program"] for r in results["latency"]] == ["nbody"]


def test_intercept_call_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "intercept_call.py"), "--n", "2000"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split("  ")[0].strip() for line in done.stdout.splitlines()[1:]]
    assert rows == ["native", "dynamic scope, method *args, **kwargs",
                    "dynamic scope, method (x)", "transformed, method *args, **kwargs",
                    "transformed, method (x)", "mock.patch, wrapper *args, **kwargs"]


def test_fastmath_lists_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "fastmath_lists.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fastmath_lists.py"), "--quick",
         "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(out.read_text())
    # the list-held floats' sqrt is rewritten only by speculation (results equal by_hand's)
    assert len(results["rewrites"]) == 1 and "math.sqrt" in results["rewrites"][0]
    assert set(results["ratios"]) == {"speculate/hand", "speculate_world_age/hand",
                                      "proof_only/hand", "hand/hand_native"}

"""benchmarks/infer.py --quick runs and finds no violation."""

from __future__ import annotations

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_infer_benchmark_quick(capsys) -> None:  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "splice_bench_infer", os.path.join(ROOT, "benchmarks", "infer.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "mean precision" in out and "0 violations" in out

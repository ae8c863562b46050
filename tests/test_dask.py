"""``splice.integrations.dask``: tasks a program submits to a ``distributed`` cluster under
a plugin run on the worker processes under copies of the plugin, with native results, and
what the copies collect comes back when the client closes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import distributed
import pytest

import splice
from splice.plugins import Tracer
from tests.runtime import process_program as program


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def work(address: str) -> tuple[Any, ...]:
    with distributed.Client(address) as client:
        futures = client.map(program.square, range(6))
        total = client.submit(sum, futures).result()
        keyword = client.submit(program.add, 2, y=3).result()
        error = client.submit(program.boom, 1).exception()
        names = sorted({str(f.key).split("-")[0] for f in futures})
        return total, keyword, repr(error), names


@pytest.mark.parametrize("make", [splice.Plugin, Tracer, program.Hooked],
                         ids=["identity", "tracer", "hooked"])
def test_results_are_native(address: str, make: Any) -> None:
    expected = work(address)
    assert expected[-1] == ["square"]  # keys are named after the function, as natively
    assert make().run(work, address) == expected


def test_the_tracer_gets_the_calls_made_on_the_workers(address: str) -> None:
    tracer = Tracer()
    tracer.run(work, address)
    squares = [(t.pid, c) for t in tracer.threads() for c in t.walk() if c.name == "square"]
    assert len(squares) == 6
    assert os.getpid() not in {pid for pid, _ in squares}
    assert all([c.name for c in call.children] == ["helper"] for _, call in squares)


def test_hooked_plugins_report_back(address: str) -> None:
    plugin = program.Hooked()
    plugin.run(work, address)
    assert plugin.calls == 6



SCRIPT = Path(__file__).parent / "runtime" / "dask_script.py"


@pytest.mark.parametrize("plugin", ["native", "tracer"])
def test_a_scripts_own_functions_run_under_the_plugin(address: str, plugin: str) -> None:
    """A script's functions are pickled by value (cloudpickle: their code is named
    <dynamic-code> in the worker); they run there under the plugin all the same."""
    environment = {**os.environ, "PYTHONPATH": str(SCRIPT.parents[2])}
    done = subprocess.run([sys.executable, str(SCRIPT), address, plugin], capture_output=True,
                          text=True, timeout=120, check=False, env=environment)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["results"] == [8, 16, 111] * 2
    if plugin == "tracer":
        assert report["on_workers"] == {"steps": 6, "following": 2 * (8 + 16 + 111)}

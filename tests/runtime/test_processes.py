"""Work started under a plugin in other processes runs there under an equal plugin
(``splice.runtime.processes``): the same results, exceptions and remote tracebacks as
natively, under every start method, and what the plugins' copies collect comes back."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import splice
from splice.plugins import Patch, Tracer
from splice.runtime import registry
from tests.runtime import process_program as program

METHODS = [m for m in ("fork", "spawn", "forkserver")
           if m in multiprocessing.get_all_start_methods()]


@pytest.fixture(scope="module")
def native() -> dict[str, dict[str, Any]]:
    return {}


def native_run(cache: dict[str, dict[str, Any]], method: str) -> dict[str, Any]:
    if method not in cache:
        cache[method] = program.main(method)
    return cache[method]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("make", [splice.Plugin, Tracer, program.Hooked],
                         ids=["identity", "tracer", "hooked"])
def test_results_are_native(native: dict[str, dict[str, Any]], method: str,
                            make: Any) -> None:
    expected = native_run(native, method)
    assert make().run(program.main, method) == expected


@pytest.mark.parametrize("method", METHODS)
def test_the_tracer_gets_the_calls_made_in_workers(method: str) -> None:
    tracer = Tracer()
    tracer.run(program.main, method)
    here = os.getpid()
    remote = [t for t in tracer.threads() if t.pid != here]
    squares = [c for t in remote for c in t.walk() if c.name == "square"]
    assert len(squares) == program.SQUARE_CALLS
    # each call of square records its call of helper, in the same process's tree
    assert all([c.name for c in call.children] == ["helper"] for call in squares)
    assert not [c for t in tracer.threads() if t.pid == here for c in t.walk()
                if c.name == "square"]
    # one track per process in the Chrome trace, each named
    trace = tracer.chrome_trace()["traceEvents"]
    named = {e["pid"] for e in trace if e["name"] == "process_name"}
    assert {t.pid for t in remote} | {here} == named
    assert {e["pid"] for e in trace if e["name"] == "square"} == {t.pid for t in remote}
    assert all(t.label.endswith(f"(pid {t.pid})") for t in remote)


@pytest.mark.parametrize("method", METHODS)
def test_hooked_plugins_report_back(method: str) -> None:
    plugin = program.Hooked()
    plugin.run(program.main, method)
    assert plugin.calls == program.SQUARE_CALLS


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_remote_traceback_is_the_native_one(method: str) -> None:
    expected = program.remote_traceback(method)
    assert "in inner" in expected[2]
    for make in (splice.Plugin, Tracer, program.Hooked):
        assert make().run(program.remote_traceback, method) == expected


def test_a_plugin_that_cannot_be_pickled_fails_where_the_work_is_submitted() -> None:
    with pytest.raises(splice.PluginSendError, match=r"plugin Locked .*TypeError.*lock") as \
            info:
        program.Locked().run(program.main, "fork")
    assert info.value.plugin == "Locked" and isinstance(info.value, TypeError)


def test_follow_processes_false_runs_the_work_natively(
        native: dict[str, dict[str, Any]]) -> None:
    class Native(program.Locked):
        follow_processes = False

    assert Native().run(program.main, "fork") == native_run(native, "fork")


def test_a_worker_that_cannot_make_the_plugin_fails_the_task_with_the_reason() -> None:
    class Local(splice.Plugin):  # pickled by reference, not importable in a worker
        pass

    Local.__qualname__ = "Local"  # so that the parent can pickle it, and spawn cannot

    def run() -> Any:
        import concurrent.futures

        with concurrent.futures.ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn")) as executor:
            return executor.submit(program.square, 3).exception()

    globals()["Local"] = Local
    try:
        error = Local().run(run)
    finally:
        del globals()["Local"]
    assert isinstance(error, splice.PluginSendError)
    assert "Local" in str(error) and "AttributeError" in str(error)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_patch_applies_in_workers(method: str) -> None:
    patch = Patch({program.helper: program.other})
    patched = patch.run(program.main, method)
    assert patched["pool.map"] == [-x * x for x in range(4)]
    assert patched["executor.submit"] == -2 + 5
    assert patched["executor.map"] == [-x * x for x in range(5)]


@pytest.mark.skipif("fork" not in METHODS, reason="the platform has no fork")
def test_a_child_forked_while_a_thread_holds_a_lock_of_splice_goes_on() -> None:
    # the worker's copy of the plugin needs the lock of splice's context registry, which
    # another thread holds when the pool forks (splice/forks.py makes it new in the child)
    plugin = splice.Plugin()
    assert plugin.context is not None  # made before the lock is taken
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with registry._contexts_lock:
            held.set()
            release.wait(60)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    try:
        squares = plugin.run(program.fork_pool_squares)
    finally:
        release.set()
        thread.join()
    assert squares == [0, 1, 4, 9]


def test_a_remote_called_in_its_senders_process_after_its_context_went() -> None:
    import gc

    from splice.runtime import processes

    tracer = Tracer()
    remote = tracer.context.process_channel.remote(program.square)
    del tracer
    gc.collect()
    assert not processes._CHANNELS  # the channel went with its context
    assert remote(4) == 16  # under an equal context, made for the call
    assert (remote.ticket.key, os.getpid()) not in processes._WORKERS


_POOL_PROGRAMS = {
    # the pool used from a function the program calls, and from top-level code
    "in main": "import multiprocessing\n\n"
               "def square(x):\n    return x * x\n\n"
               "def main():\n"
               "    pool = multiprocessing.Pool(2)\n"
               "    print(pool.map(square, range(8)))\n"
               "    pool.close()\n"
               "    pool.join()\n\n"
               "if __name__ == '__main__':\n    main()\n",
    "top level": "import multiprocessing\n\n"
                 "def square(x):\n    return x * x\n\n"
                 "pool = multiprocessing.Pool(2)\n"
                 "print(pool.map(square, range(8)))\n"
                 "pool.close()\n"
                 "pool.join()\n"
                 "print('done')\n",
}


@pytest.mark.parametrize("name", list(_POOL_PROGRAMS))
def test_splice_trace_merges_what_pool_workers_recorded(tmp_path: Path, name: str) -> None:
    """``splice trace prog.py``: the program's top-level calls enter the Tracer without
    ``Context.run``, yet the calls its pool's workers made are in the trace (merged when
    the program ends, and before each top-level call), every time."""
    script = tmp_path / "prog.py"
    script.write_text(_POOL_PROGRAMS[name])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for run in range(3):
        stats = tmp_path / f"stats{run}.txt"
        done = subprocess.run([sys.executable, "-m", "splice", "trace", "-o", str(stats),
                               str(script)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("[0, 1, 4, 9, 16, 25, 36, 49]\n")
        [row] = [line for line in stats.read_text().splitlines() if "(square)" in line]
        assert row.split()[0] == "8", (run, row)  # every call, in the workers

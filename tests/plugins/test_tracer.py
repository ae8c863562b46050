"""splice.plugins.Tracer: the call tree, Chrome trace JSON, the text tree, module filters,
threads, exceptions and generators."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

import splice
from splice.plugins import Call, Tracer
from splice.plugins import tracer as tracer_module
from splice.plugins.tracer_bias import Bias
from tests.plugins import tracee, tracee_lib


@pytest.fixture(autouse=True, params=["c-recorder", "python-recorder"])
def recording(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with the C recorder (splice/plugins/_recorder.c) and with the Python
    form of the recording the Tracer uses without it: the same events either way."""
    if request.param == "python-recorder":
        monkeypatch.setattr(tracer_module, "_Recorder", None)
    elif tracer_module._Recorder is None:
        pytest.fail("splice/plugins/_recorder.c is not built: pip install -e . --no-deps")
    return str(request.param)


def test_the_recorder_in_use_is_the_one_asked_for(recording: str) -> None:
    tracer = Tracer()
    assert (tracer._recorder is not None) == (recording == "c-recorder")
    tracer.run(tracee.main, 2)
    assert only_thread(tracer)[0].name == "main"


def test_the_c_recorders_event_lists_are_not_traversed_by_the_collector(
        recording: str) -> None:
    """A full collection during a long traced run must not visit every event recorded so
    far (the lists hold nothing that could lead back to them); what they hold stays alive
    by reference count."""
    import gc

    tracer = Tracer(returns=True)
    assert tracer.run(tracee.main, 2) == tracee.main(2)
    events = tracer._local.events
    assert events
    assert gc.is_tracked(events) == (recording == "python-recorder")
    gc.collect()
    assert only_thread(tracer)[0].name == "main"


def names(calls: list[Call]) -> list[str]:
    return [c.name for c in calls]


def shape(call: Call) -> tuple[str, list[Any]]:
    """A call tree as nested (name, children) tuples."""
    return call.name, [shape(c) for c in call.children]


def only_thread(tracer: Tracer) -> list[Call]:
    threads = tracer.threads()
    assert len(threads) == 1, threads
    return threads[0].calls


# --- the tree ---------------------------------------------------------------------------------


def test_result_unchanged_and_tree_recorded() -> None:
    tracer = Tracer()
    assert tracer.run(tracee.main, 4) == tracee.main(4)
    [root] = only_thread(tracer)
    assert root.name == "main"
    assert root.info.module == "tests.plugins.tracee"
    assert root.info.filename == tracee.__file__
    assert root.info.lineno == tracee.main.__code__.co_firstlineno
    assert root.code is tracee.main.__code__
    assert names(root.children) == ["Counter.__init__", *["Counter.bump"] * 4, "fib"]
    for bump in root.children[1:5]:
        assert names(bump.children) == ["add"]
    fib = root.children[-1]
    assert shape(fib) == ("fib", [("fib", [("fib", [("fib", []), ("fib", [])]),
                                           ("fib", [])]),
                                  ("fib", [("fib", []), ("fib", [])])])


def test_times_nest() -> None:
    tracer = Tracer()
    tracer.run(tracee.main, 6)
    [root] = only_thread(tracer)
    for call in root.walk():
        assert call.end is not None and call.end >= call.start
        assert call.duration is not None and call.duration >= 0
        self_time = call.self_time
        assert self_time is not None and 0 <= self_time <= call.duration
        for child in call.children:
            assert call.start <= child.start and child.end is not None
            assert child.end <= call.end
        for before, after in zip(call.children, call.children[1:], strict=False):
            assert before.end is not None and before.end <= after.start


def test_counts_reset_and_compiled_code_kept() -> None:
    tracer = Tracer()
    tracer.run(tracee.fib, 5)
    counts = tracer.counts()
    assert counts == {tracee.fib.__code__: 15}
    assert sum(1 for _ in tracer.calls()) == 15
    builds = tracer.context.code.builds
    tracer.reset()
    assert tracer.counts() == {} and tracer.threads() == []
    tracer.run(tracee.fib, 3)
    assert tracer.counts() == {tracee.fib.__code__: 5}
    assert tracer.context.code.builds == builds  # nothing compiled again


def test_nothing_recorded_outside_the_run() -> None:
    tracer = Tracer()
    tracer.run(tracee.fib, 3)
    tracee.fib(10)  # natively
    assert tracer.counts() == {tracee.fib.__code__: 5}


def test_callbacks_through_overlays_are_recorded() -> None:
    tracer = Tracer()
    assert tracer.run(tracee.sorted_by_key, [1, 3, 2]) == [3, 2, 1]
    [root] = only_thread(tracer)
    assert names(root.children) == ["negate"] * 3


def test_arguments_and_returns() -> None:
    tracer = Tracer(args=True, returns=True)
    tracer.run(tracee.main, 2)
    [root] = only_thread(tracer)
    assert root.args == "n=2" and root.result == "(1, 1)"
    init = root.children[0]
    assert init.name == "Counter.__init__" and init.result == "None"
    assert init.args is not None and init.args.startswith("self=<tests.plugins.tracee.Counter")
    add = root.children[1].children[0]
    assert (add.args, add.result) == ("a=0, b=0", "0")
    # summaries are bounded
    tracer.reset()
    tracer.run(tracee.add, "x" * 1000, "y")
    [call] = only_thread(tracer)
    assert call.args is not None and len(call.args) < 200 and "..." in call.args
    assert call.result is not None and len(call.result) < 100


def test_summaries_are_off_by_default() -> None:
    tracer = Tracer()
    tracer.run(tracee.main, 2)
    assert all(c.args is None and c.result is None for c in tracer.calls())


def test_repr_that_fails() -> None:
    class Bad:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    tracer = Tracer(args=True, returns=True)
    bad = Bad()
    assert tracer.run(tracee.identity, bad) is bad
    [call] = only_thread(tracer)
    assert call.args is not None and call.args.startswith("x=<Bad instance at")
    assert call.result is not None and call.result.startswith("<Bad instance at")


# --- exceptions ---------------------------------------------------------------------------------


def test_exception_closes_the_call_and_siblings_stay_siblings() -> None:
    tracer = Tracer()
    assert tracer.run(tracee.catches, [1, -2, 3]) == [1, None, 3]
    [root] = only_thread(tracer)
    assert names(root.children) == ["fail", "add", "fail", "add", "fail", "add"]
    failed = root.children[2]
    assert failed.exception == "ValueError: negative: -2"
    assert failed.end is not None and failed.end <= root.children[3].start
    assert all(c.exception is None for c in root.children if c is not failed)
    assert root.exception is None


def test_exception_propagates_unchanged() -> None:
    tracer = Tracer()
    with pytest.raises(ValueError, match="negative: -1") as native:
        tracee.propagates(-1)
    with pytest.raises(ValueError, match="negative: -1") as traced:
        tracer.run(tracee.propagates, -1)

    def user_frames(tb: Any) -> list[tuple[str, int | None, str]]:
        return [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(tb)
                if "splice" not in Path(f.filename).parts]
    assert user_frames(traced.tb)[-2:] == user_frames(native.tb)[-2:]
    [root] = only_thread(tracer)
    assert root.exception == "ValueError: negative: -1"
    assert root.children[0].exception == "ValueError: negative: -1"
    assert root.end is not None
    # the stack is consistent afterwards: the next run is a new root
    tracer.run(tracee.add, 1, 2)
    assert names(only_thread(tracer)) == ["propagates", "add"]


def test_generators_record_each_resume() -> None:
    tracer = Tracer()
    assert tracer.run(tracee.consume, 3) == [0, 1, 4]
    [root] = only_thread(tracer)
    # three resumes that yield, and the last one that finishes the generator
    assert [shape(c) for c in root.children] == [
        ("squares", [("add", [])]), ("squares", [("add", [])]), ("squares", [("add", [])]),
        ("squares", [])]


def test_generator_closed_and_thrown_into() -> None:
    def driver() -> list[Any]:
        gen = tracee.squares(5)
        first = next(gen)
        gen.close()
        other = tracee.squares(5)
        next(other)
        with pytest.raises(KeyError):
            other.throw(KeyError("k"))
        return [first]

    tracer = Tracer()
    tracer.run(driver)
    squares = [c for c in tracer.calls() if c.name == "squares"]
    assert [c.exception for c in squares] == [None, "GeneratorExit", None, "KeyError: 'k'"]
    assert all(c.end is not None for c in tracer.calls())


def call_edges(calls: list[Call]) -> set[tuple[str, str]]:
    return {(parent.name, child.name) for call in calls for parent in call.walk()
            for child in parent.children}


def cprofile_edges(fn: Any, *args: Any) -> set[tuple[str, str]]:
    """(caller, callee) names of the calls ``cProfile`` records between the functions of
    ``tracee`` running ``fn(*args)`` (builtins in between left out: the Tracer does not
    record them, and a builtin's callee is its caller's, as the Tracer shows it)."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.runcall(fn, *args)
    stats: Any = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    ours = tracee.__file__

    def python_callers(func: Any, seen: frozenset[Any] = frozenset()) -> set[str]:
        found: set[str] = set()
        for caller in stats[func][4]:
            if caller[0] == ours:
                found.add(caller[2])
            elif caller not in seen and caller in stats:
                found |= python_callers(caller, seen | {func})
        return found

    return {(caller, func[2]) for func in stats if func[0] == ours
            for caller in python_callers(func)}


def test_yield_from_resumes_are_spans_of_the_delegating_generators() -> None:
    """Each resume of a subgenerator is inside a span of every generator delegating to it,
    outermost first, as ``cProfile`` records it: the call graph's edges are the same,
    through ``next()``, ``send()``, ``throw()``, ``close()``, a plain loop over another
    generator, an iterator that is not recorded and a recursive delegation."""
    tracer = Tracer()
    assert tracer.run(tracee.drive_delegation, 3) == tracee.drive_delegation(3)
    calls = only_thread(tracer)
    assert all(c.end is not None for c in tracer.calls())
    assert call_edges(calls) == cprofile_edges(tracee.drive_delegation, 3)
    # a subgenerator's resume is its driver's callee only where close() reached it (close
    # does not run the delegating frames: each generator is closed on its own)
    [root] = calls
    assert {c.name for c in root.children} == {"outermost", "flatten", "middle", "innermost"}
    direct = [c for c in root.children if c.name in ("middle", "innermost")]
    assert [(c.name, c.exception) for c in direct] == [("innermost", "GeneratorExit"),
                                                       ("middle", "GeneratorExit")]


def test_a_delegating_generators_time_is_its_subgenerators() -> None:
    tracer = Tracer()
    tracer.run(tracee.consume_delegation, 50)
    [root] = only_thread(tracer)
    spans = [c for c in root.children if c.name == "outermost"]
    inner = [c for c in root.walk() if c.name == "innermost"]
    assert len(inner) == (50 + 1) + (2 + 1)  # each yield's, and the last resume of each
    assert not [c for c in root.children if c.name != "outermost"]
    for span in spans:
        # a span of the delegating generator holds the subgenerators' span it wraps,
        # which starts and ends with it
        for child in span.children:
            assert span.start <= child.start and (child.end or 0) <= (span.end or 0)
    assert sum(c.time or 0 for c in spans) >= sum(c.time or 0 for c in inner)


def test_delegation_survives_a_worker_report() -> None:
    """The marker that announces delegating generators' spans goes through the report a
    worker process sends (splice/runtime/processes.py) and reads back the same."""
    tracer = Tracer()
    tracer.run(tracee.drive_delegation, 2)
    before = [shape(c) for c in only_thread(tracer)]
    report = tracer.worker_report()
    merged = Tracer()
    merged.merge_worker_report(report, 1234)
    [thread] = merged.threads()
    assert [shape(c) for c in thread.calls] == before


# --- filters ----------------------------------------------------------------------------------


def test_exclude_keeps_callbacks_into_included_code() -> None:
    tracer = Tracer(exclude=["tests.plugins.tracee_lib"])
    assert tracer.run(tracee.through_library, [1, 2]) == [2, 3]
    [root] = only_thread(tracer)
    # apply/step are not recorded, but the callbacks they make still are
    assert shape(root) == ("through_library", [("add_one", []), ("add_one", [])])


def test_include_only_the_library() -> None:
    tracer = Tracer(include=["tests.plugins.tracee_lib"])
    tracer.run(tracee.through_library, [1, 2])
    [root] = only_thread(tracer)
    assert shape(root) == ("apply", [("step", []), ("step", [])])


@pytest.mark.parametrize(("module", "patterns", "wanted"), [
    ("pkg", ["pkg"], True), ("pkg.sub", ["pkg"], True), ("pkgx", ["pkg"], False),
    ("pkg.sub.deep", ["pkg.*"], True), ("other", ["pkg", "oth*"], True)])
def test_module_patterns(module: str, patterns: list[str], wanted: bool) -> None:
    assert Tracer(include=patterns).module_wanted(module) is wanted
    assert Tracer(exclude=patterns).module_wanted(module) is not wanted


# --- threads ----------------------------------------------------------------------------------


def test_threads_each_have_their_own_stack() -> None:
    tracer = Tracer()
    barrier = threading.Barrier(3)
    results: dict[str, Any] = {}

    def run(name: str, n: int) -> None:
        barrier.wait()
        results[name] = tracer.run(tracee.main, n)

    threads = [threading.Thread(target=run, args=(f"t{n}", n), name=f"t{n}")
               for n in (3, 4, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {f"t{n}": tracee.main(n) for n in (3, 4, 5)}
    by_name = {t.name: t for t in tracer.threads()}
    assert set(by_name) == {"t3", "t4", "t5"}
    for n in (3, 4, 5):
        [root] = by_name[f"t{n}"].calls
        assert root.name == "main" and root.children[-1].name == "fib"
        assert names(root.children).count("Counter.bump") == n
    native_ids = {t.native_id for t in tracer.threads()}
    assert len(native_ids) == 3


def test_threads_started_under_the_tracer_are_traced() -> None:
    tracer = Tracer(exclude=["threading"])
    assert tracer.run(tracee.in_threads, 2, 4) == [3, 3]
    by_name = {t.name: t for t in tracer.threads()}
    assert {"worker-0", "worker-1"} <= set(by_name)
    for name in ("worker-0", "worker-1"):
        [work] = by_name[name].calls
        assert work.name == "in_threads.<locals>.work"
        assert names(work.children) == ["fib"]


def test_follow_threads_off() -> None:
    tracer = Tracer(exclude=["threading"], follow_threads=False)
    assert tracer.run(tracee.in_threads, 2, 4) == [3, 3]
    assert [t.name for t in tracer.threads()] == [threading.current_thread().name]


# --- output -----------------------------------------------------------------------------------


def test_chrome_trace_json(tmp_path: Path) -> None:
    tracer = Tracer(args=True, returns=True)
    tracer.run(tracee.catches, [1, -1])
    path = tracer.write_chrome_trace(tmp_path / "trace.json", process_name="tests")
    data = json.loads(path.read_text())
    assert set(data) >= {"traceEvents", "displayTimeUnit"}
    events = data["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    complete = [e for e in events if e["ph"] == "X" and e["cat"] != "splice"]
    compiles = [e for e in events if e["ph"] == "X" and e["cat"] == "splice"]
    # the first run compiled catches (before it started), fail and add (inside catches)
    assert compiles and {e["name"] for e in compiles} == {"[splice compile]"}
    assert all(e["ts"] >= 0 and e["dur"] >= 0 for e in compiles)
    assert {e["name"] for e in meta} == {"process_name", "thread_name", "thread_sort_index"}
    assert next(e for e in meta if e["name"] == "process_name")["args"] == {"name": "tests"}
    assert [e["name"] for e in complete] == ["catches", "fail", "add", "fail", "add"]
    for event in events:
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        assert isinstance(event["name"], str) and isinstance(event["args"], dict)
    for event in complete:
        assert set(event) == {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"}
        assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0
        assert isinstance(event["dur"], (int, float)) and event["dur"] >= 0
        assert event["cat"] == "tests.plugins.tracee"
        assert event["args"]["file"] == tracee.__file__
        assert isinstance(event["args"]["line"], int)
        assert event["args"]["qualname"] == f"tests.plugins.tracee.{event['name']}"
    root, *children = complete
    assert root["ts"] >= 0
    for child in children:  # X events nest by time on one thread
        assert root["ts"] <= child["ts"] <= child["ts"] + child["dur"] <= \
            root["ts"] + root["dur"] + 1e-3
    assert complete[3]["args"]["exception"] == "ValueError: negative: -1"
    assert complete[1]["args"]["args"] == "x=1" and complete[1]["args"]["return"] == "1"
    thread_names = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert thread_names[root["tid"]] == threading.current_thread().name


def test_chrome_trace_marks_calls_still_running() -> None:
    tracer = Tracer()
    seen: list[dict[str, Any]] = []

    def snapshot() -> int:
        seen.append(tracer.chrome_trace())
        return 0

    tracer.run(tracee.call, tracee.call, snapshot)
    running = [e for e in seen[0]["traceEvents"] if e["ph"] == "X" and e["cat"] != "splice"]
    assert [e["name"] for e in running] == ["call", "call", "test_chrome_trace_marks_calls_"
                                            "still_running.<locals>.snapshot"]
    assert all(e["args"].get("unfinished") for e in running)


def test_format_tree() -> None:
    tracer = Tracer()
    tracer.run(tracee.main, 3)
    text = tracer.format_tree()
    lines = text.splitlines()
    assert lines[0].startswith(f"{threading.current_thread().name} (thread ")
    assert "1 top-level call(s)" in lines[0]
    assert lines[1].strip().split()[2] == "main"
    bump = next(line for line in lines if "Counter.bump" in line)
    assert "Counter.bump ×3" in bump and "tests/plugins/tracee.py:" in bump
    assert len(bump) - len(bump.lstrip()) > len(lines[1]) - len(lines[1].lstrip())
    assert " ms " in bump and "(self " in bump
    # every call on its own line
    full = tracer.format_tree(aggregate=False, locations=False).splitlines()
    assert sum("Counter.bump" in line for line in full) == 3
    assert not any("tracee.py" in line for line in full)
    # depth cut
    shallow = tracer.format_tree(max_depth=1).splitlines()
    assert len(shallow) == 2


def test_format_tree_shows_exceptions() -> None:
    tracer = Tracer()
    tracer.run(tracee.catches, [-1])
    assert "raised ×1" in tracer.format_tree()
    assert "!! ValueError: negative: -1" in tracer.format_tree(aggregate=False)


def test_print_tree(capsys: pytest.CaptureFixture[str]) -> None:
    tracer = Tracer()
    tracer.run(tracee.fib, 2)
    tracer.print_tree()
    assert "fib" in capsys.readouterr().out
    assert Tracer().format_tree() == "(no calls recorded)"


# --- as a plugin ------------------------------------------------------------------------------


def test_composes_with_other_plugins() -> None:
    seen: list[Any] = []

    class Count(splice.Plugin):
        def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if fn is tracee.add:
                seen.append(args)

    tracer = Tracer()
    assert splice.compose(tracer, Count()).run(tracee.main, 3) == tracee.main(3)
    assert len(seen) == 3
    assert tracer.counts()[tracee.add.__code__] == 3


def test_explain_shows_what_was_traced() -> None:
    tracer = Tracer()
    tracer.run(tracee.main, 2)
    entered = {r.name for r in splice.explain(tracer) if r.entered}
    assert "tests.plugins.tracee.main" in entered
    assert "tests.plugins.tracee.fib" in entered


def test_repr() -> None:
    assert repr(Tracer()) == "Tracer()"
    assert repr(Tracer(include=["a"], args=True)) == "Tracer(include=['a'], args=True)"


def test_library_untouched() -> None:
    assert tracee_lib.apply(tracee.add_one, [1]) == [2]


def test_deep_recursion_prints() -> None:
    def down(n: int) -> int:
        return 0 if n == 0 else down(n - 1) + 1

    limit = sys.getrecursionlimit()
    depth = limit + 100  # deeper than what printing may recurse
    tracer = Tracer()
    sys.setrecursionlimit(depth + 200)
    try:
        assert tracer.run(down, depth) == depth
    finally:
        sys.setrecursionlimit(limit)
    assert len(tracer.format_tree().splitlines()) == depth + 2
    assert len(tracer.format_tree(aggregate=False).splitlines()) == depth + 2
    calls = [e for e in tracer.chrome_trace()["traceEvents"] if e.get("cat") != "splice"]
    assert len(calls) == depth + 1 + 3


def test_implicit_calls_are_recorded_when_asked() -> None:
    class V:
        def __init__(self, x: int) -> None:
            self.x = x

        def __sub__(self, other: V) -> V:
            return V(self.x - other.x)

    def diff() -> int:
        return (V(3) - V(1)).x

    plain = Tracer()
    assert plain.run(diff) == 2
    assert "diff.<locals>.V.__sub__" not in {c.name for c in plain.calls()}
    implicit = Tracer(implicit_calls=True)
    assert implicit.run(diff) == 2
    [root] = only_thread(implicit)
    sub = root.children[-1]
    assert sub.name.endswith("V.__sub__") and sub.children[0].name.endswith("V.__init__")
    assert repr(implicit) == "Tracer(implicit_calls=True)"


def test_exception_messages_run_no_user_code() -> None:
    seen: list[str] = []

    class Loud(Exception):
        def __str__(self) -> str:
            seen.append("str")
            return "loud"

    class Arg:
        def __str__(self) -> str:
            seen.append("arg")
            return "arg"

    def raise_(exc: BaseException) -> None:
        raise exc

    tracer = Tracer()
    for exc in (Loud("x"), ValueError(Arg()), KeyError("k")):
        with pytest.raises(type(exc)):
            tracer.run(raise_, exc)
    assert seen == []
    assert [c.exception for c in tracer.calls()] == [
        f"{__name__}.test_exception_messages_run_no_user_code.<locals>.Loud", "ValueError",
        "KeyError: 'k'"]


# --- splice's compile time ---------------------------------------------------------------------


class _SlowToCompile(Tracer):
    """A Tracer whose compile of each function takes 20 ms more, with code of its own (no
    token: it never reuses what an earlier test compiled)."""

    def cache_token(self) -> None:
        return None

    def lowered(self, ir: Any) -> Any:
        time.sleep(0.02)
        return super().lowered(ir)


def test_compile_time_is_not_the_programs() -> None:
    """The first run compiles every function; that time is recorded apart (compile spans
    of the calls it happened in) and left out of every call's time and self time."""
    tracer = _SlowToCompile()
    tracer.run(tracee.main, 4)
    [thread] = tracer.threads()
    [root] = thread.calls
    compiled = sum(end - start for start, end in thread.compiles) + \
        sum(call.compile_time for call in root.walk())
    assert compiled > 0 and any(call.compiles for call in root.walk())
    for call in root.walk():
        assert call.duration is not None and call.time is not None
        assert call.time == call.duration - sum(c.compile_time for c in call.walk())
        inner = sum(c.duration or 0 for c in call.children)
        assert call.self_time == call.duration - inner - call.compile_time
    # the first run's program time leaves the compile out: each function's compile sleeps
    # 20 ms, far more than the whole program runs, however loaded the machine
    tracer.reset()
    tracer.run(tracee.main, 4)
    [again] = tracer.threads()
    assert again.compiles == [] and not any(c.compiles for c in again.walk())
    assert root.time is not None and again.calls[0].time is not None
    assert root.time < 20_000_000 <= compiled
    tree = Tracer()
    tree.run(tracee.main, 4)
    text = tree.format_tree()
    assert "not counted)" in text.splitlines()[0] and "splice compile" in text


# --- profiles: collapsed stacks and pstats-like stats ------------------------------------------


def test_collapsed_stacks_weigh_each_path_by_self_time() -> None:
    tracer = Tracer()
    tracer.run(tracee.main, 4)
    lines = tracer.collapsed_stacks(corrected=False).splitlines()
    assert lines, "nothing recorded"
    [thread] = tracer.threads()
    # each path's self time summed, then rounded to microseconds
    per_path: dict[tuple[str, ...], int] = {}
    for root in thread.calls:
        work = [(root, (root.name,))]
        while work:
            call, path = work.pop()
            per_path[path] = per_path.get(path, 0) + (call.self_time or 0)
            work.extend((c, (*path, c.name)) for c in call.children)
    total_us = sum(round(ns / 1000) for ns in per_path.values())
    weights = 0
    for line in lines:
        path, weight = line.rsplit(" ", 1)
        frames = path.split(";")
        assert frames[0] == thread.name and frames[1] == "tests.plugins.tracee:main"
        assert all(":" in frame for frame in frames[1:])
        weights += int(weight)
    assert weights == total_us


def test_building_the_calls_pauses_the_collector_and_restores_it() -> None:
    """The reports pause the cyclic collector while they build (nothing they build can be
    a cycle) and leave it as it was, also when they raise."""
    import gc

    tracer = Tracer()
    tracer.run(tracee.fib, 15)  # 1,973 calls: enough objects for collections to start
    seen: list[str] = []
    running = [""]

    def callback(phase: str, info: dict[str, int]) -> None:
        if running[0]:
            seen.append(running[0])

    was = gc.isenabled()
    try:
        gc.enable()
        gc.callbacks.append(callback)
        for report in (tracer.threads, tracer.stats, tracer.format_stats, tracer.format_tree,
                       tracer.collapsed_stacks, tracer.chrome_trace):
            running[0] = report.__name__
            report()
            running[0] = ""
            assert gc.isenabled()
        with pytest.raises(ValueError, match="sort by one of"):
            tracer.format_stats(sort="bogus")
        assert gc.isenabled()
        # (the same build without the pause does start collections: the check can fail)
        running[0] = "unpaused"
        Tracer.threads.__wrapped__(tracer)  # type: ignore[attr-defined]
        running[0] = ""
        assert seen == ["unpaused"] * len(seen) and seen
        seen.clear()
        gc.disable()
        tracer.threads()
        assert not gc.isenabled()
    finally:
        gc.callbacks.remove(callback)
        (gc.enable if was else gc.disable)()
    assert seen == []  # no collection ran while they built


def test_stats_count_calls_and_times_as_pstats_does() -> None:
    tracer = Tracer()
    tracer.run(tracee.fib, 6)
    [fib] = tracer.stats(corrected=False)
    assert fib.info.code is tracee.fib.__code__ and fib.ncalls == 25
    [root] = tracer.roots()
    # cumulative: the outermost call only (recursive calls are inside it)
    assert fib.cumtime == pytest.approx((root.time or 0) / 1e9)
    assert fib.tottime == pytest.approx(sum(c.self_time or 0 for c in root.walk()) / 1e9)
    table = tracer.format_stats(sort="ncalls")
    assert table.splitlines()[0].split() == ["ncalls", "tottime", "percall", "cumtime",
                                             "percall", "filename:lineno(function)"]
    assert "(fib)" in table.splitlines()[1] and table.splitlines()[1].split()[0] == "25"
    with pytest.raises(ValueError, match="sort by one of"):
        tracer.format_stats(sort="bogus")


# --- the Tracer's own cost per call, left out of the times it reports -------------------------

def test_stats_leave_out_the_tracers_cost_per_call() -> None:
    tracer = Tracer()
    tracer.run(tracee.fib, 6)
    [root] = tracer.roots()
    calls = list(root.walk())  # 25 calls: the root and 24 below it
    tracer.bias = Bias(inside=1.0, outside=10.0)
    [fib] = tracer.stats()
    # self: less 1 ns per call, and 10 ns per callee (every call but the root is one)
    raw_self = sum(c.self_time or 0 for c in calls)
    assert fib.tottime * 1e9 == pytest.approx(raw_self - 25 * 1.0 - 24 * 10.0)
    # total (the outermost call): less 1 ns for it and 11 ns per call below it
    assert fib.cumtime * 1e9 == pytest.approx((root.time or 0) - 1.0 - 24 * 11.0)
    # a cost larger than a time leaves zero, never a negative time
    tracer.bias = Bias(inside=1e12, outside=0.0)
    [fib] = tracer.stats()
    assert fib.tottime == 0.0 and fib.cumtime == 0.0
    assert "the Tracer's" in tracer.format_tree().splitlines()[0]
    assert "the Tracer's" not in tracer.format_tree(corrected=False).splitlines()[0]
    with pytest.raises(TypeError, match="Tracer.bias takes"):
        tracer.bias = 3  # type: ignore[assignment]


def test_the_aggregated_tree_leaves_out_the_same_cost_as_stats() -> None:
    tracer = Tracer()
    tracer.run(tracee.fib, 6)
    tracer.bias = Bias(inside=100.0, outside=1000.0)
    [fib] = tracer.stats()
    top = tracer.format_tree(locations=False).splitlines()[1].split()
    # "<total> ms  fib ×1  (self <self> ms)": the outermost fib's total is stats' cumtime
    assert top[2] == "fib" and float(top[0]) == pytest.approx(fib.cumtime * 1e3, abs=1e-3)


def test_the_measured_cost_is_positive_and_kept() -> None:
    tracer = Tracer()
    bias = tracer.bias
    assert bias.inside > 0 and bias.outside >= 0
    assert tracer.bias is bias  # measured once per Tracer
    tracer.run(tracee.fib, 3)
    assert len(tracer.roots()) == 1  # the measuring Tracer recorded nothing into this one


def test_a_generators_resumes_have_the_cost_of_recording_a_resume_left_out() -> None:
    tracer = Tracer()
    tracer.run(tracee.consume, 5)
    [root] = tracer.roots()
    resumes = [c for c in root.children if c.info.generator]
    assert resumes and len(resumes) == len(root.children)
    # a resume's own cost (inside its span, and in its caller's self time per resume), not
    # a call's
    adds = sum(len(c.children) for c in resumes)  # each resume calls add: a call each
    tracer.bias = Bias(inside=1.0, outside=2.0, resume_inside=100.0, resume_outside=1000.0)
    by_name = {e.info.qualname: e for e in tracer.stats()}
    assert by_name["squares"].tottime * 1e9 == pytest.approx(
        sum(c.self_time or 0 for c in resumes) - 100.0 * len(resumes) - 2.0 * adds)
    assert by_name["consume"].tottime * 1e9 == pytest.approx(
        (root.self_time or 0) - 1.0 - 1000.0 * len(resumes))
    # without resume costs, a resume costs a call's
    tracer.bias = Bias(inside=1.0, outside=2.0)
    by_name = {e.info.qualname: e for e in tracer.stats()}
    assert by_name["squares"].tottime * 1e9 == pytest.approx(
        sum(c.self_time or 0 for c in resumes) - 1.0 * len(resumes) - 2.0 * adds)
    # measured: a resume costs something, both ways
    measured = Tracer().bias
    assert measured.resume_inside is not None and measured.resume_inside > 0
    assert measured.resume_outside is not None and measured.resume_outside >= 0


class _TwoArgumentError(Exception):
    def __init__(self, text: str, position: int) -> None:
        super().__init__(text, position)
        self.position = position


@pytest.mark.parametrize("error", [
    ValueError("negative: -1"), _TwoArgumentError("1-2", 0), KeyError("k"), OSError(2, "gone"),
    RuntimeError(), ValueError("x" * 200), ValueError(["not", "builtin"])],
    ids=["one-argument", "two-arguments", "own-str", "c-str", "no-argument", "long", "object"])
def test_a_raised_exception_is_recorded_with_its_message(error: BaseException) -> None:
    tracer = Tracer()
    with pytest.raises(type(error)):
        tracer.run(tracee.call, _raise, error)
    [root] = tracer.roots()
    [raised] = root.children
    name = type(error).__qualname__ if type(error).__module__ == "builtins" else \
        f"{type(error).__module__}.{type(error).__qualname__}"
    message = str(error) if all(type(a) in (str, int) for a in error.args) else ""
    if len(message) > 120:
        message = message[:117] + "..."
    assert raised.exception == (f"{name}: {message}" if message else name)
    assert root.exception == raised.exception


def _raise(error: BaseException) -> None:
    raise error


def test_a_call_an_exception_left_has_the_cost_of_recording_it_left_out() -> None:
    tracer = Tracer()
    tracer.run(tracee.catches, [-1, 2, -3])
    [root] = tracer.roots()
    fails = [c for c in root.children if c.name == "fail"]
    assert [c.exception is not None for c in fails] == [True, False, True]
    tracer.bias = Bias(inside=0.0, outside=0.0, raised=100.0)
    by_name = {e.info.qualname: e for e in tracer.stats()}
    assert by_name["fail"].tottime * 1e9 == pytest.approx(
        sum(c.self_time or 0 for c in fails) - 2 * 100.0)
    assert by_name["catches"].cumtime * 1e9 == pytest.approx((root.time or 0) - 2 * 100.0)
    assert by_name["catches"].tottime * 1e9 == pytest.approx(root.self_time or 0)
    # measured: recording an exception costs something
    assert Tracer().bias.raised > 0


# --- corrected figures keep the invariants of measured ones -----------------------------------

_TREE_LINE = re.compile(r"^(?P<indent> *)(?P<total>-?\d+\.\d+) ms  (?P<name>\S+)"
                        r"(?: ×\d+)?  \(self (?P<self>-?\d+\.\d+) ms")
_HEADER_TOTAL = re.compile(r"top-level call\(s\), (?P<total>-?\d+\.\d+) ms")

#: programs with recursion (direct, through a method, through a generator), exceptions
#: caught and raised through, threads
_PROGRAMS: list[tuple[str, Any, tuple[Any, ...]]] = [
    ("fib", tracee.fib, (14,)),
    ("main", tracee.main, (12,)),
    ("catches", tracee.catches, ([-1, 2, -3, 4] * 20,)),
    ("library", tracee.through_library, (list(range(50)),)),
    ("threads", tracee.in_threads, (3, 12)),
]

#: the measured cost, and costs larger than most calls' self times (so most are clamped)
_BIASES = [None, Bias(inside=500.0, outside=2000.0, raised=1000.0),
           Bias(inside=1e6, outside=0.0), Bias(inside=0.0, outside=1e6)]


def _check_tree(text: str, slack_ms: float) -> int:
    """The text tree's invariants: no negative time, totals at least self times, and a
    line's total its self time plus its children's totals (to the printed rounding); the
    header's total the sum of its top-level lines. Returns how many lines it checked."""
    checked = 0
    threads = []
    for line in text.splitlines():
        header = _HEADER_TOTAL.search(line)
        if header is not None:
            threads.append((float(header["total"]), []))
            continue
        found = _TREE_LINE.match(line)
        assert found is not None, line
        # "  " per level, then the total right-aligned in ten characters
        depth = (len(found["indent"]) + len(found["total"]) - 10) // 2
        total, own = float(found["total"]), float(found["self"])
        assert own >= 0 and total >= own, line
        threads[-1][1].append((depth, total, own))
        checked += 1
    for header_total, rows in threads:
        tops = [total for depth, total, _ in rows if depth == 1]
        assert header_total == pytest.approx(sum(tops), abs=slack_ms * (len(tops) + 1))
        for index, (depth, total, own) in enumerate(rows):
            children = []
            for later in rows[index + 1:]:
                if later[0] <= depth:
                    break
                if later[0] == depth + 1:
                    children.append(later[1])
            assert total == pytest.approx(own + sum(children),
                                          abs=slack_ms * (len(children) + 2)), rows[index]
    return checked


@pytest.mark.parametrize("bias", _BIASES, ids=["measured", "large", "inside", "outside"])
@pytest.mark.parametrize(("name", "fn", "args"), _PROGRAMS, ids=[p[0] for p in _PROGRAMS])
def test_corrected_times_are_never_negative_and_nest(name: str, fn: Any, args: tuple[Any, ...],
                                                     bias: Bias | None) -> None:
    tracer = Tracer()
    tracer.run(fn, *args)
    if bias is not None:
        tracer.bias = bias
    # the tree: self >= 0, total >= self, total = self + children's totals, header = sum
    assert _check_tree(tracer.format_tree(locations=False), 0.0011) > 0
    # stats: tottime >= 0, and cumtime (each call counted in its outermost call of the
    # function) at least tottime, recursive functions included
    stats = tracer.stats()
    assert stats
    for entry in stats:
        assert entry.tottime >= 0 and entry.cumtime >= entry.tottime, entry
    # a root's cumulative time is the sum of every self time below it, as in the tree
    roots = {c.info for c in tracer.calls() if c in tracer.roots()}
    by_info = {e.info: e for e in stats}
    if len(roots) == 1 and len(tracer.threads()) == 1:
        [root] = roots
        assert by_info[root].cumtime == pytest.approx(sum(e.tottime for e in stats),
                                                      rel=1e-9, abs=1e-12)
    # the flame graph's weights are the same self times (rounded to µs, zeros left out)
    weights = [int(line.rsplit(" ", 1)[1]) for line in tracer.collapsed_stacks().splitlines()]
    assert all(w > 0 for w in weights)
    assert sum(weights) == pytest.approx(sum(e.tottime for e in stats) * 1e6,
                                         abs=len(weights) + 1)


def test_examples_fib_has_no_negative_self_time(tmp_path: Path) -> None:
    """``splice trace examples/fib.py 20``: the audit's case, with the measured cost."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    try:
        import fib as example
    finally:
        del sys.path[0]
    tracer = Tracer()
    tracer.run(example.main, 18)
    _check_tree(tracer.format_tree(locations=False), 0.0011)
    [fib] = [e for e in tracer.stats() if e.info.qualname == "fib"]
    assert fib.cumtime >= fib.tottime
    header = tracer.format_tree().splitlines()[0]
    top = tracer.format_tree(locations=False).splitlines()[1]
    assert _HEADER_TOTAL.search(header)["total"] == top.split()[0]  # type: ignore[index]


def test_lambdas_are_recorded_and_behave_natively() -> None:
    tracer = Tracer()
    assert tracer.run(tracee.lambdas) == tracee.lambdas()
    counts: dict[str, int] = {}
    for entry in tracer.stats():  # (one entry per lambda: they share their qualified names)
        counts[entry.info.qualname] = counts.get(entry.info.qualname, 0) + entry.ncalls
    inner = "lambdas.<locals>.<lambda>"
    # add twice, the sort key 3 times, the generator's 2 resumes, nested and its inner
    # lambda, the two frame probes, fail, map's 3, the comprehension's lambda
    assert counts[inner] == 2 + 3 + 2 + 1 + 2 + 1 + 3 + 1
    assert counts[f"{inner}.<locals>.<lambda>"] == 1
    assert counts["Secret.<lambda>"] == 2


def _stats_from_the_tree(tracer: Tracer, bias: Bias) -> dict[Any, tuple[int, float, float]]:
    """``Tracer.stats`` computed the long way: the call trees, their corrected times, and
    a walk that counts a recursive function's cumulative time in its outermost call."""
    found: dict[Any, list[Any]] = {}
    for thread in tracer.threads():
        times = tracer_module._corrected_times(thread.calls, bias)
        work: list[tuple[Call, frozenset[Any]]] = [(c, frozenset()) for c in thread.calls]
        while work:
            call, above = work.pop()
            entry = found.setdefault(call.info, [0, 0.0, 0.0])
            own, total = times[id(call)]
            entry[0] += 1
            entry[1] += own / 1e9
            if call.info not in above:
                entry[2] += total / 1e9
            work.extend((child, above | {call.info}) for child in call.children)
    return {info: (n, own, max(total, own)) for info, (n, own, total) in found.items()}


def _mixed_program() -> list[Any]:
    """Recursion, generators resumed from callers, exceptions caught at several depths,
    lambdas and a mutual recursion: every kind of call the stats count."""
    out: list[Any] = [tracee.fib(7), tracee.consume(4), tracee.catches([1, -1, 2, -3])]
    out.append(sorted(range(5), key=lambda x: -x))

    def even(n: int) -> bool:
        return True if n == 0 else odd(n - 1)

    def odd(n: int) -> bool:
        return False if n == 0 else even(n - 1)
    out.append(even(9))
    try:
        tracee.propagates(-5)
    except ValueError as exc:
        out.append(str(exc))
    return out


@pytest.mark.parametrize("bias", [Bias(0.0, 0.0), Bias(3.0, 7.0, raised=11.0),
                                  Bias(2.0, 5.0, resume_inside=1.0, resume_outside=4.0),
                                  Bias(1e6, 1e6)], ids=["raw", "raised", "resumes", "huge"])
def test_stats_equal_the_call_trees_times(bias: Bias) -> None:
    tracer = Tracer()
    tracer.run(_mixed_program)
    tracer.run(tracee.in_threads, 3, 5)  # and calls of other threads
    tracer.bias = bias
    fast = {e.info: (e.ncalls, e.tottime, e.cumtime) for e in tracer.stats()}
    slow = _stats_from_the_tree(tracer, bias)
    assert fast.keys() == slow.keys()
    for info, (ncalls, tottime, cumtime) in slow.items():
        assert fast[info][0] == ncalls, info
        assert fast[info][1] == pytest.approx(tottime, rel=1e-9, abs=1e-15), info
        assert fast[info][2] == pytest.approx(cumtime, rel=1e-9, abs=1e-15), info

"""splice plugin benchmarks (issue 3, point 5): what running a call graph under plugins costs,
against native CPython, measured in the same run.

    python benchmarks/plugins.py                   # full run (about five minutes)
    python benchmarks/plugins.py --quick           # a smoke run (small n, 2 repeats)
    python benchmarks/plugins.py --programs nbody,text --json out.json
    python benchmarks/plugins.py --markdown        # print the tables as Markdown

Each program of ``benchmarks/programs/`` is measured in a fresh interpreter (what one program
leaves in memory cannot slow the next one's garbage collections), loaded once per variant as
a fresh module object (so a program's own caches, such as a memo table, are the variant's):

* ``native``: ``main(n)``;
* ``identity``: ``Identity().run(main, n)``, a plugin without hooks that recurses everywhere;
* ``nested``: ``a.run(b.run, main, n)`` with two identity plugins;
* ``intercept``: a plugin with one ``@splice.intercept(target)`` method, for a target deep in
  the program's call graph (``INTERCEPTS`` says which, and how often it is called); the method
  counts its calls and goes on with ``self.recurse_call(target, ...)``, so results stay equal;
* ``dynamic``: the same plugin with ``dynamic_scope = True`` (``splice.runtime.dynamic``):
  nothing is transformed, only the target's calls pay (not for generator functions: none
  for ``generators``); it must intercept as many calls per run as ``intercept``;
* ``monkeypatch``: no splice: for the run, ``unittest.mock.patch.object`` replaces the target
  where the program looks it up (its module or class) with a wrapper of the intercepting
  method's shape (``*args, **kwargs``, a counter, the original called): the floor a hand-made
  patch sets, which changes global state; it must count as many calls as ``intercept``;
* ``tracer``: ``splice.plugins.Tracer`` (or, before it existed, ``HookTracer``: a call tree
  built by ``prehook``/``posthook``);
* ``setprofile``: ``ProfileTracer``, a call tree with call counts and wall times built from
  ``sys.setprofile`` 'call'/'return' events: the way such a tracer is written without splice.

The first six run with the program's ``N``; native, tracer and setprofile run together on a
quarter of the work (``TRACE_N``), since tracing costs 3-20x. Within each group, after a
warm-up run of every variant (which also compiles the code under the plugins), the variants
run interleaved, the order rotating each repeat, with a garbage collection before each run.
Every result, warm-up and timed, must equal native's. A variant's ratio is its minimum time
over native's minimum time (the median of the per-repeat ratios is shown too); overhead is
ratio - 1; summaries are geometric means over the programs. A program where some variant
left a Python function untransformed (``splice.explain``), or where the intercepted target
was not called, is starred and left out of the headline mean.

First-call latency: a fresh module (new code objects, nothing cached; splice's parse cache is
cleared too) runs under a fresh identity plugin, first cold and then warm, and so does a fresh
native copy, with the program's quick n; the first-call overhead is
``(plugin first - plugin warm) - (native first - native warm)``, so a program's own first-run
effects (a memo table filling up) cancel out. Per function, the call of the plugin's code
cache (``plugin.context.code.get``) that built its code is timed: lowering, the plugins'
stages, call-site routing and compilation. Median of 3 cold starts; reported per program:
functions built, their total, median, p95 and max, and the first-call overhead.

Shapes (``shapes.py``): what one operation costs natively and what each plugin adds to it
(nanoseconds, best of 7), to tell which call shapes the programs' overhead comes from.
"""

from __future__ import annotations

import argparse
import functools
import gc
import inspect
import math
import os
import platform
import statistics
import sys
import time
import types
from collections.abc import Callable
from typing import Any
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (ROOT, HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from run import geomean, load, percentile, program_paths  # noqa: E402

import splice  # noqa: E402

RECURSION_LIMIT = 10_000
TARGETS = {"identity": 1.3, "intercept": 1.1, "tracer_vs_setprofile": 0.5, "nested_vs_one": 1.2}


# ------------------------------------------------------------------------------- plugins

class Identity(splice.Plugin):
    """No hooks: every callee is entered (``recurse`` is the default, True)."""


def cell(fn: types.FunctionType, name: str) -> Any:
    """The value of the closure variable ``name`` of ``fn``."""
    assert fn.__closure__ is not None
    return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents


#: program -> (what is intercepted and why, how to find it in a loaded copy of the program).
#: Each target is reached only through other entered functions (deep in the call graph);
#: some are called rarely, some often, to show both costs.
INTERCEPTS: dict[str, tuple[str, Callable[[types.ModuleType], Any]]] = {
    "closures": (
        "collatz_length (memoize's wrapper), the key function of max(): reached through "
        "the overlay of max, once per number", lambda m: m.collatz_length),
    "dicts": ("bfs: a leaf called n/3 times from main", lambda m: m.bfs),
    "exceptions": ("safe_div: a leaf inside a with block, once per parsed pair",
                   lambda m: m.safe_div),
    "generators": ("running_mean: a generator created once and driven by send()",
                   lambda m: m.running_mean),
    "nbody": ("energy: a leaf called twice", lambda m: m.energy),
    "raytrace": ("Sphere.normal: a method called through Scene.trace (thing.normal), once "
                 "per hit", lambda m: m.Sphere.normal),
    "recursion": ("queens: called once, its closure place() recurses under it",
                  lambda m: m.queens),
    "scheduler": ("Device.handle: a method called through Task.run, once per io packet",
                  lambda m: m.Device.handle),
    "spectral_norm": ("eval_at_times_u: called 20 times from eval_ata_times_u",
                      lambda m: m.eval_at_times_u),
    "text": ("title_case: a leaf called once per wrapped line", lambda m: m.title_case),
}


def intercepting(target: Any, *, dynamic: bool = False) -> splice.Plugin:
    """A plugin intercepting ``target``: counts the calls, then runs the original
    (``dynamic``: in a dynamic scope, ``Plugin.dynamic_scope``)."""

    class Intercept(splice.Plugin):
        hits = 0
        dynamic_scope = dynamic

        @splice.intercept(target)
        def intercepted(self, *args: Any, **kwargs: Any) -> Any:
            self.hits += 1
            return self.recurse_call(target, *args, **kwargs)

    return Intercept()


class Monkeypatch:
    """The hand-made way to intercept ``target`` in ``module``'s program: for ``run``, the
    name the program looks it up by (in the module or a class of it) is patched with a
    wrapper that counts the calls and calls the original."""

    def __init__(self, module: types.ModuleType, target: Any) -> None:
        self.owner, self.name = where_bound(module, target)
        self.hits = 0

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.hits += 1
            return target(*args, **kwargs)
        self.wrapper = wrapper

    def run(self, fn: Callable[..., Any], /, *args: Any) -> Any:
        with mock.patch.object(self.owner, self.name, self.wrapper):
            return fn(*args)


def where_bound(module: types.ModuleType, target: Any) -> tuple[Any, str]:
    """The module or class of ``module`` that binds ``target``, and the name."""
    for name, value in vars(module).items():
        if value is target:
            return module, name
        if isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in vars(value).items():
                if member is target:
                    return value, attr
    raise LookupError(f"{target!r} is bound nowhere in {module.__name__}")


class Node:
    """One node of a call tree: a callee under a path of callers."""

    __slots__ = ("children", "calls", "seconds")

    def __init__(self) -> None:
        self.children: dict[Any, Node] = {}
        self.calls = 0
        self.seconds = 0.0


def tree_counts(node: Node, out: dict[Any, int] | None = None) -> dict[Any, int]:
    """Calls per code object over the whole tree."""
    out = {} if out is None else out
    for code, child in node.children.items():
        out[code] = out.get(code, 0) + child.calls
        tree_counts(child, out)
    return out


class HookTracer(splice.Plugin):
    """A call tree (calls and wall time per path of Python functions) from prehook/posthook:
    the stand-in for ``splice.plugins.Tracer`` while it does not exist.

    ``kwargs`` is a new dict for every call and the same object in both hooks, so a posthook
    finds its own prehook's entry even when calls below it raised (their entries are closed
    with it; a call that raises gets no posthook)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.root = Node()
        self.stack: list[tuple[Node, Any, float]] = [(self.root, None, 0.0)]

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if type(fn) is types.FunctionType:
            code = fn.__code__
            children = self.stack[-1][0].children
            node = children.get(code)
            if node is None:
                node = children[code] = Node()
            self.stack.append((node, kwargs, time.perf_counter()))

    def posthook(self, result: Any, fn: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        if type(fn) is types.FunctionType:
            now = time.perf_counter()
            stack = self.stack
            while len(stack) > 1:
                node, key, start = stack.pop()
                node.calls += 1
                node.seconds += now - start
                if key is kwargs:
                    break

    def counts(self) -> dict[Any, int]:
        return tree_counts(self.root)


class ProfileTracer:
    """The same call tree from ``sys.setprofile`` 'call'/'return' events (Python frames;
    C calls are ignored)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.root = Node()

    def run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        perf_counter = time.perf_counter
        stack: list[tuple[Node, float]] = [(self.root, 0.0)]

        def profile(frame: types.FrameType, event: str, arg: Any) -> None:
            if event == "call":
                code = frame.f_code
                children = stack[-1][0].children
                node = children.get(code)
                if node is None:
                    node = children[code] = Node()
                stack.append((node, perf_counter()))
            elif event == "return" and len(stack) > 1:
                now = perf_counter()
                node, start = stack.pop()
                node.calls += 1
                node.seconds += now - start

        sys.setprofile(profile)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.setprofile(None)

    def counts(self) -> dict[Any, int]:
        return tree_counts(self.root)


def splice_tracer() -> type[splice.Plugin] | None:
    """``splice.plugins.Tracer``, if it exists yet."""
    try:
        from splice.plugins import Tracer  # type: ignore[attr-defined]
    except ImportError:
        return None
    return Tracer  # type: ignore[no-any-return]


def reset_tracer(tracer: Any) -> None:
    """Drop what a tracer recorded (between runs, untimed), keeping its compiled code."""
    for name in ("reset", "clear"):
        method = getattr(tracer, name, None)
        if callable(method):
            method()
            return


def tracer_calls(tracer: Any) -> int | None:
    """Python function calls the tracer recorded (for the JSON; None if unknown)."""
    counts = getattr(tracer, "counts", None)
    if callable(counts):
        return sum(counts().values())
    return None


# ------------------------------------------------------------------------------- speed

def quick_n(module: types.ModuleType) -> int:
    return getattr(module, "QUICK", max(1, module.N // 20))


def timed(fn: Callable[[int], Any], n: int) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = fn(n)
    return time.perf_counter() - start, result


#: the tracing variants cost 5-20x native: they run on a quarter of the work (``N // 4``,
#: or the n given here where the work does not grow linearly with n), with their own
#: native runs
TRACE_N = {"recursion": 27}


def trace_n(name: str, module: types.ModuleType, quick: bool) -> int:
    if quick:
        return quick_n(module)
    return TRACE_N.get(name, max(1, module.N // 4))


def measure(name: str, variants: dict[str, Callable[[int], Any]], n: int, repeats: int,
            resets: dict[str, Callable[[], Any]],
            after_warmup: Callable[[], Any] | None = None
            ) -> tuple[dict[str, list[float]], Any]:
    """Times per variant (``native`` first in ``variants``) of ``repeats`` interleaved
    runs after a warm-up; every result must equal native's. Returns the times and the
    result."""
    def run(label: str) -> float:
        reset = resets.get(label)
        if reset is not None:
            reset()
        seconds, got = timed(variants[label], n)
        if got != expected:
            raise AssertionError(f"{name}: {label} returned {got!r}, native {expected!r}")
        return seconds

    _, expected = timed(variants["native"], n)
    for label in variants:  # warm-up (compiles the code under each plugin)
        run(label)
    if after_warmup is not None:
        after_warmup()
    labels = list(variants)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for i in range(repeats):
        shift = i % len(labels)
        order = labels[shift:] + labels[:shift]
        if i // len(labels) % 2:
            order.reverse()
        for label in order:
            times[label].append(run(label))
    return times, expected


def ratios_of(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    native = times["native"]
    out = {}
    for label, values in times.items():
        if label != "native":
            per_repeat = [t / nat for t, nat in zip(values, native, strict=True)]
            out[label] = {"min": min(values) / min(native),
                          "median": statistics.median(per_repeat)}
    return out


def bench_program(path: str, *, repeats: int, quick: bool,
                  tracer_class: type[splice.Plugin] | None) -> dict[str, Any]:
    name = os.path.basename(path)[:-3]
    copies = {v: load(path, f"plugins_{v}") for v in
              ("native", "identity", "nested", "intercept", "dynamic", "monkeypatch",
               "tracer", "setprofile")}
    try:
        return _bench_program(name, copies, repeats=repeats, quick=quick,
                              tracer_class=tracer_class)
    finally:
        for module in copies.values():  # let them (and what splice keeps for them) go
            sys.modules.pop(module.__name__, None)


def _bench_program(name: str, copies: dict[str, types.ModuleType], *, repeats: int,
                   quick: bool, tracer_class: type[splice.Plugin] | None) -> dict[str, Any]:
    native = copies["native"]
    n = quick_n(native) if quick else native.N

    identity = Identity()
    outer, inner = Identity(), Identity()
    target_doc, find_target = INTERCEPTS.get(name, (None, None))
    interceptor = intercepting(find_target(copies["intercept"])) if find_target else None
    dynamic_target = find_target(copies["dynamic"]) if find_target else None
    # a dynamic scope patches a plain Python function's code (not a generator function's)
    scoped = intercepting(dynamic_target, dynamic=True) if \
        isinstance(dynamic_target, types.FunctionType) and \
        not inspect.isgeneratorfunction(dynamic_target) else None
    speed: dict[str, Callable[[int], Any]] = {
        "native": native.main,
        "identity": lambda n: identity.run(copies["identity"].main, n),
        "nested": lambda n: outer.run(inner.run, copies["nested"].main, n),
    }
    if interceptor is not None:
        speed["intercept"] = lambda n: interceptor.run(copies["intercept"].main, n)
    if scoped is not None:
        speed["dynamic"] = lambda n: scoped.run(copies["dynamic"].main, n)
    patched = Monkeypatch(copies["monkeypatch"], find_target(copies["monkeypatch"])) \
        if find_target else None
    if patched is not None:
        speed["monkeypatch"] = lambda n: patched.run(copies["monkeypatch"].main, n)
    counters: dict[str, Any] = {label: p for label, p in
                                [("intercept", interceptor), ("dynamic", scoped),
                                 ("monkeypatch", patched)] if p is not None}
    warm_hits: dict[str, int] = {}
    times, _ = measure(name, speed, n, repeats, {}, after_warmup=lambda: warm_hits.update(
        {label: p.hits for label, p in counters.items()}))
    per_run = {label: (p.hits - warm_hits[label]) // repeats for label, p in counters.items()}
    hits = per_run.get("intercept", 0)
    for label, count in per_run.items():
        if count != hits:
            raise AssertionError(f"{name}: {label} intercepted {count} calls per run, the "
                                 f"transformed context {hits}")

    tracer: Any = (tracer_class or HookTracer)()
    profiler = ProfileTracer()
    tracing: dict[str, Callable[[int], Any]] = {
        "native": native.main,
        "tracer": lambda n: tracer.run(copies["tracer"].main, n),
        "setprofile": lambda n: profiler.run(copies["setprofile"].main, n),
    }
    n_trace = trace_n(name, native, quick)
    trace_times, _ = measure(name, tracing, n_trace, repeats,
                             {"tracer": lambda: reset_tracer(tracer),
                              "setprofile": profiler.reset})
    calls = {"tracer": tracer_calls(tracer), "setprofile": tracer_calls(profiler)}

    entered = [r for r in splice.explain(identity) if r.entered]
    missed = {label: ran_natively(plugin) for label, plugin in
              [("identity", identity), ("nested", splice.compose(outer, inner)),
               ("intercept", interceptor), ("tracer", tracer)]}
    complete = {
        "speed": not (missed["identity"] or missed["nested"] or missed["intercept"]
                      or not hits),
        "tracer": not missed["tracer"],
    }
    return {
        "program": name,
        "n": n,
        "native_min_s": min(times["native"]),
        "ratios": {**ratios_of(times), **ratios_of(trace_times)},
        "times_s": times,
        "trace_n": n_trace,
        "trace_native_min_s": min(trace_times["native"]),
        "trace_times_s": trace_times,
        "entered": len(entered),
        "intercept": {"target": target_doc, "calls_per_run": hits},
        "tracer": f"{type(tracer).__module__}.{type(tracer).__qualname__}",
        "calls_recorded": calls,
        "ran_natively": missed,
        "complete": complete,
    }


#: reasons of ``splice.explain`` that are no limitation of splice: C code, an intercepted
#: target, the plugin's own choice (the Tracer runs its recording helpers natively)
NOT_MISSED = ("not Python code", "intercepted", "recurse returned False")


def ran_natively(plugin: Any) -> list[str]:
    """Python functions reached under ``plugin`` that were not transformed, with why
    (``NOT_MISSED`` reasons are not counted)."""
    if not isinstance(plugin, splice.Plugin):
        return []
    return [f"{r.name}: {r.reason}" for r in splice.explain(plugin)
            if not r.entered and not r.reason.startswith(NOT_MISSED)]


#: below this overhead, a ratio of overheads would only measure noise
NOISE = 0.05


def overhead_ratio(numerator: float, denominator: float) -> float:
    """(numerator - 1) / (denominator - 1), the ratio of two overheads (nan when the
    denominator's overhead is under ``NOISE``)."""
    return (numerator - 1) / (denominator - 1) if denominator - 1 >= NOISE else math.nan


# ----------------------------------------------------------------------------- latency

def clear_parse_cache() -> None:
    """Forget parsed source files, so the first call parses as in a fresh process."""
    from splice.ir import source

    parsed = getattr(source, "_parsed", None)
    if isinstance(parsed, dict):
        parsed.clear()


def first_call(path: str, n: int, tag: str) -> dict[str, Any]:
    """One cold start of the program under a fresh identity plugin (see the docstring)."""
    clear_parse_cache()
    native = load(path, f"latency_native_{tag}")
    module = load(path, f"latency_plugin_{tag}")
    plugin = Identity()
    cache = plugin.context.code
    original_get = cache.get
    built: list[float] = []

    def get(function: types.FunctionType, build: Callable[..., Any], *rest: Any) -> Any:
        before = cache.builds
        start = time.perf_counter()
        try:
            return original_get(function, build, *rest)
        finally:
            if cache.builds != before:
                built.append(time.perf_counter() - start)

    cache.get = get  # type: ignore[method-assign]
    try:
        native_first, expected = timed(native.main, n)
        native_warm, _ = timed(native.main, n)
        plugin_first, got = timed(lambda n: plugin.run(module.main, n), n)
        plugin_warm, again = timed(lambda n: plugin.run(module.main, n), n)
    finally:
        del cache.get
    if not expected == got == again:
        raise AssertionError(f"{path}: under a fresh plugin returned {got!r} then {again!r}, "
                             f"native {expected!r}")
    return {"builds_s": built, "ran_natively": ran_natively(plugin),
            "first_call_s": (plugin_first - plugin_warm) - (native_first - native_warm)}


def bench_latency(path: str, *, repeats: int, quick: bool) -> dict[str, Any]:
    probe = load(path, "latency_probe")
    n = quick_n(probe)
    runs = [first_call(path, n, str(i)) for i in range(repeats)]
    # per function (in build order, the same each run): the median over the runs
    counts = {len(r["builds_s"]) for r in runs}
    if len(counts) == 1:
        per_function = [statistics.median(values)
                        for values in zip(*(r["builds_s"] for r in runs), strict=True)]
    else:  # should not happen; pool them
        per_function = [t for r in runs for t in r["builds_s"]]
    return {
        "program": os.path.basename(path)[:-3],
        "n": n,
        "complete": {"latency": not runs[0]["ran_natively"]},
        "ran_natively": runs[0]["ran_natively"],
        "functions": len(per_function),
        "total_ms": sum(per_function) * 1e3,
        "median_ms": statistics.median(per_function) * 1e3 if per_function else math.nan,
        "p95_ms": percentile(per_function, 95) * 1e3,
        "max_ms": max(per_function, default=math.nan) * 1e3,
        "first_call_ms": statistics.median(r["first_call_s"] for r in runs) * 1e3,
        "per_function_ms": [t * 1e3 for t in per_function],
    }


# ------------------------------------------------------------------------------ shapes

class EmptyPrehook(splice.Plugin):
    """The cheapest plugin with a per-call hook (what every hooked call pays)."""

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pass


def bench_shapes(*, repeats: int, quick: bool) -> dict[str, Any]:
    """ns per operation of each kernel of ``shapes.py``: native, and what each plugin adds."""
    module = load(os.path.join(HERE, "shapes.py"), "shapes")
    n = module.N // 20 if quick else module.N
    plugins: dict[str, Any] = {"identity": Identity(), "prehook": EmptyPrehook(),
                               "intercept f": intercepting(module.f),
                               "dynamic f": intercepting(module.f, dynamic=True)}
    kernels = {"loop": module.loop, **module.KERNELS}
    best: dict[str, dict[str, float]] = {label: {} for label in ["native", *plugins]}
    for label, kernel in kernels.items():
        runs: dict[str, Callable[[int], Any]] = {"native": kernel}
        for name, plugin in plugins.items():
            runs[name] = functools.partial(plugin.run, kernel)
        for run in runs.values():
            run(n)  # warm-up (and compilation under the plugins)
        for i in range(repeats):
            for name in (list(runs) if i % 2 else list(reversed(runs))):
                seconds, _ = timed(runs[name], n)
                best[name][label] = min(best[name].get(label, math.inf), seconds)
    ns = {name: {label: (t - times["loop"]) / n * 1e9 for label, t in times.items()
                 if label != "loop"} for name, times in best.items()}
    return {"n": n, "native_ns": ns["native"],
            "added_ns": {name: {label: ns[name][label] - ns["native"][label]
                                for label in module.KERNELS} for name in plugins}}


def shape_rows(shapes: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    added = shapes["added_ns"]
    header = ["operation", "native ns", *(f"+{name} ns" for name in added)]
    rows = [[label, f"{native:.0f}", *(f"{added[name][label]:+.0f}" for name in added)]
            for label, native in shapes["native_ns"].items()]
    return header, rows


# ---------------------------------------------------------------------------- reporting

SPEED_COLUMNS = ("identity", "nested", "intercept", "dynamic", "monkeypatch")


def mark(r: dict[str, Any], group: str) -> str:
    """The program's name, starred when some variant of the table missed part of its call
    graph (left out of the headline geometric mean)."""
    return r["program"] + ("" if r["complete"][group] else " *")


def speed_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = ["program", "native ms", "identity", "(median)", "nested", "(median)",
              "nested/one overhead", "intercept", "(median)", "dynamic scope", "(median)",
              "monkeypatch", "(median)", "intercepted calls/run"]
    rows = []
    for r in results:
        q = r["ratios"]
        row = [mark(r, "speed"), f"{r['native_min_s'] * 1e3:.1f}"]
        for label in SPEED_COLUMNS:
            row += [f"{q[label]['min']:.3f}", f"{q[label]['median']:.3f}"] if label in q \
                else ["", ""]
            if label == "nested":
                row.append(fmt(overhead_ratio(q["nested"]["min"], q["identity"]["min"])))
        row.append(str(r["intercept"]["calls_per_run"]) if "intercept" in q else "")
        rows.append(row)
    for title, s in summaries(results):
        rows.append([title, "",
                     f"{s['identity']['geomean_ratio']:.3f}",
                     f"{s['identity']['geomean_median_ratio']:.3f}",
                     f"{s['nested']['geomean_ratio']:.3f}",
                     f"{s['nested']['geomean_median_ratio']:.3f}",
                     fmt(s["nested_vs_one_overhead"]),
                     f"{s['intercept']['geomean_ratio']:.3f}",
                     f"{s['intercept']['geomean_median_ratio']:.3f}",
                     f"{s['dynamic']['geomean_ratio']:.3f}",
                     f"{s['dynamic']['geomean_median_ratio']:.3f}",
                     f"{s['monkeypatch']['geomean_ratio']:.3f}",
                     f"{s['monkeypatch']['geomean_median_ratio']:.3f}", ""])
    return header, rows


def tracer_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = ["program", "n", "native ms", "setprofile", "(median)", "tracer", "(median)",
              "tracer/setprofile overhead", "calls/run (profile / tracer)"]
    rows = []
    for r in results:
        q = r["ratios"]
        calls = r["calls_recorded"]
        rows.append([mark(r, "tracer"), str(r["trace_n"]),
                     f"{r['trace_native_min_s'] * 1e3:.1f}",
                     f"{q['setprofile']['min']:.2f}", f"{q['setprofile']['median']:.2f}",
                     f"{q['tracer']['min']:.2f}", f"{q['tracer']['median']:.2f}",
                     fmt(overhead_ratio(q["tracer"]["min"], q["setprofile"]["min"])),
                     f"{calls['setprofile']} / {calls['tracer']}"])
    for title, s in summaries(results):
        rows.append([title, "", "",
                     f"{s['setprofile']['geomean_ratio']:.2f}",
                     f"{s['setprofile']['geomean_median_ratio']:.2f}",
                     f"{s['tracer']['geomean_ratio']:.2f}",
                     f"{s['tracer']['geomean_median_ratio']:.2f}",
                     fmt(s["tracer_vs_setprofile_overhead"]), ""])
    return header, rows


def summaries(results: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The geometric-mean rows: over complete programs, and over all if some are not."""
    rows = [("geometric mean", summarize(results))]
    if not all(all(r["complete"].values()) for r in results):
        rows[0] = ("geometric mean (no *)", rows[0][1])
        rows.append(("geometric mean (all)", summarize(results, everything=True)))
    return rows


def latency_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = ["program", "functions", "build total ms", "median ms", "p95 ms", "max ms",
              "first-call overhead ms"]
    rows = [[mark(r, "latency"), str(r["functions"]), f"{r['total_ms']:.1f}",
             f"{r['median_ms']:.2f}", f"{r['p95_ms']:.2f}", f"{r['max_ms']:.2f}",
             f"{r['first_call_ms']:.1f}"] for r in results]
    return header, rows


def fmt(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"


def print_table(header: list[str], rows: list[list[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header))]
    line = "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in
                     enumerate(zip(header, widths, strict=True)))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                        enumerate(zip(row, widths, strict=True))))


GROUP = {"identity": "speed", "nested": "speed", "intercept": "speed", "dynamic": "speed",
         "monkeypatch": "speed", "tracer": "tracer", "setprofile": "tracer"}


def summarize(results: list[dict[str, Any]], *, everything: bool = False) -> dict[str, Any]:
    """Geometric means over the programs where every variant of the table reached its whole
    call graph (``everything``: over all programs)."""
    def gm(label: str, kind: str = "min") -> float:
        values = [r["ratios"][label][kind] for r in results if label in r["ratios"]
                  and (everything or r["complete"][GROUP[label]])]
        return geomean(values) if values else math.nan

    summary: dict[str, Any] = {}
    for label in GROUP:
        summary[label] = {"geomean_ratio": gm(label), "geomean_median_ratio": gm(label, "median")}
    summary["nested_vs_one_overhead"] = overhead_ratio(summary["nested"]["geomean_ratio"],
                                                       summary["identity"]["geomean_ratio"])
    summary["tracer_vs_setprofile_overhead"] = overhead_ratio(
        summary["tracer"]["geomean_ratio"], summary["setprofile"]["geomean_ratio"])
    return summary


def git_revision() -> str:
    """The checkout's commit (with ``-dirty`` for uncommitted changes under splice/), or
    ``$SPLICE_REVISION`` (for a copy outside git, such as a ``git archive`` export)."""
    import subprocess

    if os.environ.get("SPLICE_REVISION"):
        return os.environ["SPLICE_REVISION"]

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "splice"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "(unknown revision)"
    return head + ("-dirty" if dirty else "")


def worker(args: argparse.Namespace, repeats: int, latency_repeats: int) -> dict[str, Any]:
    """One program's measurements (or the shapes'), in this process."""
    # an intercepted call runs through several frames of splice's (closures' memoized
    # recursion, intercepted, goes deeper than the default limit of 1000); native code and
    # the timings are not affected by the limit
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    if args.worker == "shapes":
        return {"shapes": bench_shapes(repeats=repeats + 2, quick=args.quick)}
    (path,) = program_paths([args.worker])
    out: dict[str, Any] = {"program": bench_program(path, repeats=repeats, quick=args.quick,
                                                    tracer_class=splice_tracer())}
    if not args.no_latency:
        out["latency"] = bench_latency(path, repeats=latency_repeats, quick=args.quick)
    return out


def in_subprocess(name: str, argv: list[str]) -> dict[str, Any]:
    """``worker`` for ``name`` in a fresh interpreter: programs do not share a heap (what
    one leaves behind cannot slow the next one's garbage collections) or warm caches."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        done = subprocess.run([sys.executable, os.path.abspath(__file__), *argv,
                               "--worker", name, "--worker-out", out],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stdout)
            raise SystemExit(f"benchmarks/plugins.py: {name} failed (exit {done.returncode})")
        with open(out) as f:
            return json.load(f)  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small inputs, 2 repeats, one latency run (a smoke run)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per variant (default 5)")
    parser.add_argument("--latency-repeats", type=int, default=None,
                        help="cold starts per program for the latency (default 3)")
    parser.add_argument("--programs", help="comma-separated program names (default: all)")
    parser.add_argument("--no-latency", action="store_true", help="skip first-call latency")
    parser.add_argument("--no-shapes", action="store_true",
                        help="skip the per-operation costs (shapes.py)")
    parser.add_argument("--json", metavar="OUT", help="write the results as JSON")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    repeats = args.repeats or (2 if args.quick else 5)
    latency_repeats = args.latency_repeats or (1 if args.quick else 3)
    if args.worker:
        import json

        with open(args.worker_out, "w") as f:
            json.dump(worker(args, repeats, latency_repeats), f)
        return 0

    selected = args.programs.split(",") if args.programs else None
    paths = program_paths(selected)
    if not paths:
        parser.error(f"no such programs: {args.programs}")
    passed = [a for a in argv if a in ("--quick", "--no-latency")]
    passed += ["--repeats", str(repeats), "--latency-repeats", str(latency_repeats)]
    tracer_class = splice_tracer()
    tracer_name = (f"{tracer_class.__module__}.{tracer_class.__qualname__}" if tracer_class
                   else "HookTracer (splice.plugins.Tracer does not exist yet)")
    revision = git_revision()
    print(f"splice plugin benchmarks: Python {platform.python_version()} "
          f"({platform.python_implementation()}), splice {revision}, {repeats} repeats"
          + (", quick" if args.quick else "") + f"; tracer: {tracer_name}")
    started = time.perf_counter()

    results = []
    latency: list[dict[str, Any]] = []
    for path in paths:
        name = os.path.basename(path)[:-3]
        found = in_subprocess(name, passed)
        results.append(found["program"])
        if "latency" in found:
            latency.append(found["latency"])
        print(f"  {name} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    summary = summarize(results)
    summary_all = summarize(results, everything=True)

    print("\nratio to native (min of the runs; median of per-repeat ratios in parentheses):")
    print_table(*speed_rows(results), args.markdown)
    print(f"targets: identity <= {TARGETS['identity']}, intercept <= {TARGETS['intercept']}, "
          f"nested overhead <= {TARGETS['nested_vs_one']} x one's "
          f"(n/a: one's overhead under {NOISE:.0%}, within noise)")

    print("\ntracing a call tree (Python calls, wall times): ratio to native")
    print_table(*tracer_rows(results), args.markdown)
    print(f"target: tracer overhead <= {TARGETS['tracer_vs_setprofile']} x setprofile's")
    for r in results:
        for label, missed in r["ran_natively"].items():
            for line in missed:
                print(f"  * {r['program']}: not entered under {label}: {line}")
        if not r["intercept"]["calls_per_run"]:
            print(f"  * {r['program']}: the intercepted target was not called in the timed runs")

    if latency:
        every = [t for r in latency for t in r["per_function_ms"]]
        print(f"\nfirst-call latency under a fresh identity plugin (median of "
              f"{latency_repeats} cold starts):")
        header, rows = latency_rows(latency)
        rows.append(["all", str(len(every)), f"{sum(every):.1f}",
                     f"{statistics.median(every):.2f}", f"{percentile(every, 95):.2f}",
                     f"{max(every):.2f}",
                     f"{sum(r['first_call_ms'] for r in latency):.1f}"])
        print_table(header, rows, args.markdown)
        summary["latency"] = {"functions": len(every), "median_ms": statistics.median(every),
                              "p95_ms": percentile(every, 95), "total_ms": sum(every)}

    shapes: dict[str, Any] | None = None
    if not args.no_shapes:
        shapes = in_subprocess("shapes", passed)["shapes"]
        print(f"\ncost of one operation (shapes.py, n={shapes['n']}, best of {repeats + 2}; "
              f"native, then what each plugin adds):")
        print_table(*shape_rows(shapes), args.markdown)

    print(f"\n({time.perf_counter() - started:.0f} s)")
    if args.json:
        import json

        out = {"python": platform.python_version(), "splice": revision, "repeats": repeats,
               "quick": args.quick, "tracer": tracer_name, "targets": TARGETS,
               "summary": summary, "summary_all_programs": summary_all,
               "programs": results, "latency": latency, "shapes": shapes}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Real libraries' own test suites, natively and with every test under a plugin, compared
test by test (issue 14, "How it is shown").

Usage::

    python -m splice.tools.libsuites                          # every library, every mode
    python -m splice.tools.libsuites --libs toolz,inflection --modes identity,hooked
    python -m splice.tools.libsuites --jobs 2 --timeout 900 --logdir runs --json out.json
    python -m splice.tools.libsuites --report runs            # that run's report again

The libraries
-------------
:data:`LIBRARIES`: pure-Python libraries of different kinds with long suites of their own,
each pinned to one version. Nothing is vendored: the first run downloads each one's sdist
from PyPI with pip (``pip download --no-deps --no-binary DIST DIST==VERSION``; only the
library itself from source, its build backend as a wheel) and unpacks it in a cache
directory (``--cache``, ``$SPLICE_LIBSUITES_CACHE``, default ``splice-libsuites`` under the
temp dir; one lock per library, so parallel runs share it). Each run copies the unpacked
sdist to a directory of its own and runs the suite there, as its authors do from a
checkout: the sdist's packages (first on the path; the child records where the library
was imported from), its ``tests``, conftest files, data files and pytest configuration;
the copy is the working directory (relative paths in tests, files a test writes), with a
private temp dir beside it. What a suite needs beyond pytest and hypothesis (splice's
test extra) is installed with ``pip install --no-deps --target`` into the library's cache
directory (``Library.deps``, pinned). Tests left out (``Library.args``) say why.

Modes
-----
Each library runs natively and in each mode asked for (``--modes``, default all), each run
in a fresh subprocess (``python -m splice.tools.libsuites --child ...``) with pytest
(``pytest.main``), ``PYTHONHASHSEED=0``, the suite's ``addopts`` dropped (coverage,
xdist) and hypothesis in a fixed profile (see :func:`hypothesis_profile`; the same in
every run):

* ``native``: the suite as its authors run it;
* ``identity``: each test's call runs under ``splice.Plugin()``: the function the test item
  calls (a test function with its fixture values, or a ``unittest.TestCase`` method) is
  called as ``plugin.run(test, **funcargs)``, so the test's body and everything it reaches
  (the library, the standard library) run transformed; collection, fixtures,
  ``setUp``/``tearDown`` and pytest itself stay native. For a hypothesis ``@given`` test
  the engine stays native too and each example's call of the test's own function runs
  under the plugin (through ``test.hypothesis.inner_test``, hypothesis' handle for
  wrapping it: its generated wrapper has no source, so splice would run it natively).
  One plugin instance serves the whole session, so its code cache is shared by the tests;
* ``hooked``: the same under a plugin with no-op ``prehook``/``posthook`` (the per-call
  path: implicit calls of operators and attribute access routed, docs/runtime.md);
* ``typed``: the same under a plugin with a no-op ``typed(ir)`` stage, so every function
  reached is inferred and runs its code instance for its arguments' classes
  (docs/instances.md, "Wiring into contexts").

The test item's ``obj`` is replaced for the call by a wrapper (a ``pytest_runtest_call``
hook wrapper, innermost), which is what both pytest's ``pytest_pyfunc_call`` and its
unittest runner call; the wrapper counts its calls, and after the session
``splice.explain(plugin)`` says whether each test function was entered (transformed) or ran
natively, and why. A run whose tests were not entered would compare nothing: the report
gives both figures per run.

Comparison
----------
Every run records, per pytest node id, the test's outcome (``passed``, ``failed``,
``skipped``, ``xfailed``, ``xpassed``, ``error`` for a setup error; a failing teardown and a
collection error are events of their own) and every subtest's (``id [msg] (params)``), with
memory addresses and the run's directories blurred; each test's events are also streamed
to a file as it ends. A mode agrees with the native run when the *multisets* of
(kind, id, outcome) are equal. ``--timeout`` is a deadline: no test starts after it (a
typed-stage run infers every function it reaches, which a long suite does not finish in
the time), and a run stopped so, or killed a while later, is ``partial``: the tests that
both runs finished are compared, and the report says how many of the suite's that is.
A difference is explained only by an entry of :data:`EXPECTED`, which names the mode, the
library and the exact test ids (no patterns) with a :data:`REASONS` key: an expected limit
of running under a plugin (documented in docs/runtime.md) or a known bug with its repro.
Anything else is UNEXPLAINED and makes the command exit with 1. ``--jobs`` runs go in
parallel (default 2), the longest first; the report gives per library and mode the tests
and subtests compared, how many ids are the same and how many differ (unexplained), the
tests entered under the plugin out of those called, and both runs' times. ``--report
LOGDIR`` prints it again from a run's logs, with the current ``EXPECTED``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fcntl
import functools
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

import splice
from splice.tools.cpython_tests import (
    HookedIdentityPlugin,
    IdentityPlugin,
    Reason,
    denoise,
    load_object,
)

# --------------------------------------------------------------------------- the libraries


@dataclass(frozen=True)
class Library:
    """A pure-Python library whose own test suite runs from its sdist."""

    #: the name on the command line
    name: str
    #: its distribution on PyPI, and the version pinned
    dist: str
    version: str
    #: what kind of library it is (the selection covers several)
    kind: str
    #: its top-level import names (checked to come from the sdist)
    packages: tuple[str, ...]
    #: the test files and directories run, relative to the sdist's root
    tests: tuple[str, ...]
    #: the directory of its packages, relative to the sdist's root
    src: str = "."
    #: pinned requirements of the suite beyond pytest and hypothesis (installed for it alone)
    deps: tuple[str, ...] = ()
    #: more pytest arguments (tests left out, each with its reason in a comment)
    args: tuple[str, ...] = ()
    #: markers to register (the suite's configuration expects a plugin not installed)
    markers: tuple[str, ...] = ()
    #: about how many seconds the suite takes natively (long runs are started first)
    seconds: float = 3.0

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"


LIBRARIES: dict[str, Library] = {lib.name: lib for lib in [
    Library("inflection", "inflection", "0.5.1", "text (word inflections)",
            ("inflection",), ("test_inflection.py",)),
    Library("six", "six", "1.17.0", "compatibility layer (module and attribute proxies)",
            ("six",), ("test_six.py",)),
    Library("toolz", "toolz", "1.2.0", "functional utilities",
            ("toolz", "tlz"), ("toolz/tests", "toolz/sandbox/tests")),
    Library("more-itertools", "more-itertools", "11.2.1", "functional utilities (iterators)",
            ("more_itertools",), ("tests",), seconds=30),
    Library("cachetools", "cachetools", "8.0.2", "data structures (caches)",
            ("cachetools",), ("tests",), src="src", seconds=4),
    Library("boltons", "boltons", "26.2.0", "data structures and utilities",
            ("boltons",), ("tests",)),
    Library("parse", "parse", "1.22.4", "parsing (format strings, in reverse)",
            ("parse",), ("tests",)),
    Library("pyparsing", "pyparsing", "3.3.3", "parsing (PEG combinators)",
            ("pyparsing",), ("tests",),
            # railroad diagrams need the "diagrams" extra (railroad-diagrams, jinja2 and
            # markupsafe's C speedups): not part of the pure-Python selection
            args=("--ignore=tests/test_diagram.py",
                  "--deselect=tests/test_examples.py::TestExamples::test_range_check"),
            seconds=90),
    Library("dateutil", "python-dateutil", "4.0.0", "date/time",
            ("dateutil",), ("tests",), src="src",
            deps=("tzdata==2026.6", "freezegun==1.5.5", "attrs==26.1.0"),
            # tests/conftest.py marks xfail tests for pytest-cov, which is not installed
            markers=("no_cover: left out of coverage (pytest-cov)",), seconds=40),
    Library("attrs", "attrs", "26.1.0", "class generation (methods made by exec)",
            ("attr", "attrs"), ("tests",), src="src", deps=("cloudpickle==3.1.3",),
            # the packaging tests read the installed distribution's metadata (the suite
            # runs from the unpacked sdist); test_wrapped_annotation fails natively here
            args=("--ignore=tests/test_packaging.py",
                  "--deselect=tests/test_converters.py::TestPipe::test_wrapped_annotation"),
            seconds=30),
    Library("jinja2", "jinja2", "3.1.6", "templates (compiled to Python code)",
            ("jinja2",), ("tests",), src="src",
            deps=("markupsafe==3.0.4", "trio==0.35.0", "outcome==1.3.0.post0",
                  "sniffio==1.3.1", "sortedcontainers==2.4.0", "idna==3.20",
                  "attrs==26.1.0"), seconds=10),
    Library("tomlkit", "tomlkit", "0.15.2", "parsing (TOML, style-preserving documents)",
            ("tomlkit",), ("tests",), seconds=10),
    Library("markdown", "markdown", "3.11.3", "text (Markdown to HTML)",
            ("markdown",),
            # test_syntax first: a module there imports unittest's TestSuite, which pytest
            # warns about when it collects it, and test_legacy turns every warning into an
            # error when it is imported (the authors run the suite with unittest)
            ("tests/test_syntax", "tests/test_apis.py", "tests/test_extensions.py",
             "tests/test_legacy.py", "tests/test_meta.py"), seconds=10),
    Library("lark", "lark", "1.3.1", "parsing (Earley and LALR grammars)",
            ("lark",), ("tests",), seconds=30),
]}

#: the modes compared with the native run
MODES = ("identity", "hooked", "typed")
OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed", "error")
HASHSEED = "0"


def default_cache() -> str:
    """Where sdists are unpacked: ``$SPLICE_LIBSUITES_CACHE`` or the temp dir's
    ``splice-libsuites``."""
    return os.environ.get("SPLICE_LIBSUITES_CACHE") or os.path.join(
        tempfile.gettempdir(), "splice-libsuites")


class FetchError(Exception):
    """pip could not bring a library or its suite's requirements."""


def _pip(args: Sequence[str], timeout: float) -> None:
    cmd = [sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "-q"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)
    if proc.returncode:
        raise FetchError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                         f"{(proc.stdout + proc.stderr)[-3000:]}")


def _extract(archive: str, into: str) -> None:
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):  # 3.11.4+: no links or paths out of ``into``
            tar.extractall(into, filter="data")
        else:  # pragma: no cover - an older 3.11
            tar.extractall(into)  # noqa: S202 - an sdist from PyPI, pinned


def prepare(lib: Library, cache: str | None = None, timeout: float = 600.0) -> str:
    """The unpacked sdist of ``lib`` (its root directory), downloaded and set up on first
    use; the suite's requirements are in ``<root>/../deps``. Safe to call from parallel
    processes (a lock file per library)."""
    base = os.path.join(cache or default_cache(), f"{lib.dist}-{lib.version}")
    root = os.path.join(base, "sdist")
    ready = os.path.join(base, "ready.json")
    stamp = {"requirement": lib.requirement, "deps": list(lib.deps)}
    os.makedirs(base, exist_ok=True)
    with open(os.path.join(base, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(ready, encoding="utf-8") as f:
                if json.load(f) == stamp:
                    return root
        except (OSError, ValueError):
            pass
        for stale in ("download", "unpacked", "sdist", "deps"):
            shutil.rmtree(os.path.join(base, stale), ignore_errors=True)
        download = os.path.join(base, "download")
        _pip(["download", "--no-deps", "--no-binary", lib.dist, "-d", download,
              lib.requirement], timeout)
        archives = [name for name in os.listdir(download) if name.endswith(".tar.gz")]
        if len(archives) != 1:
            raise FetchError(f"expected one sdist of {lib.requirement}, got {archives}")
        unpacked = os.path.join(base, "unpacked")
        _extract(os.path.join(download, archives[0]), unpacked)
        (top,) = os.listdir(unpacked)
        os.rename(os.path.join(unpacked, top), root)
        os.rmdir(unpacked)
        if lib.deps:
            _pip(["install", "--no-deps", "--target", os.path.join(base, "deps"),
                  *lib.deps], timeout)
        with open(ready, "w", encoding="utf-8") as f:
            json.dump(stamp, f)
    return root


# --------------------------------------------------------------------------- child side


class TypedPlugin(splice.Plugin):
    """``typed`` mode: a no-op typed stage (every function inferred, run as code instances)."""

    def typed(self, ir: Any) -> None:
        return None


#: identity and hooked: the plugins of splice.tools.cpython_tests' modes of those names
PLUGINS: dict[str, type[splice.Plugin]] = {"identity": IdentityPlugin,
                                           "hooked": HookedIdentityPlugin, "typed": TypedPlugin}


def hypothesis_profile() -> None:
    """The same hypothesis settings in every run: examples derandomized (a property test
    draws the same examples natively and under a plugin), no deadline and no health check
    on speed (code under a plugin is slower, which is not what is compared), no example
    database (each run starts from nothing)."""
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:  # pragma: no cover - part of the test extra
        return
    settings.register_profile(
        "splice-libsuites", derandomize=True, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much])
    settings.load_profile("splice-libsuites")


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)


def _name(fn: Any) -> str:
    """``module.qualname`` of a test function, as ``splice.explain`` names callees."""
    fn = getattr(fn, "__func__", fn)
    return f"{getattr(fn, '__module__', None)}.{getattr(fn, '__qualname__', repr(fn))}"


#: an outcome event: (kind, id, outcome, detail, the test's node id); kind is "test",
#: "subtest" (id: the node id, then ``[msg] (params)``), "teardown" (a failing teardown) or
#: "collect" (a collection error)
Event = tuple[str, str, str, str, str]


class Harness:
    """The pytest plugin of a child run: records every outcome and, under a plugin, runs
    each test's call with ``plugin.run``. Events are also appended to ``stream`` (JSON
    lines) as each test ends, with its subtests, so a run stopped by its timeout still
    shows the tests it finished."""

    def __init__(self, lib: Library, plugin: splice.Plugin | None, stream: Any = None
                 ) -> None:
        self.lib = lib
        self.plugin = plugin
        self.stream = stream
        self.events: list[Event] = []
        #: subtest events of the test running (written with the test's own event)
        self.pending: list[Event] = []
        #: node id -> the test function's name, for the tests whose call entered the wrapper
        self.called: dict[str, str] = {}
        #: ``time.perf_counter()`` after which no test starts (0: none)
        self.deadline = 0.0
        self.stopped = ""
        #: (path, name): paths of this run blurred in ids and details (its working and
        #: temp directories, which differ from run to run)
        self.blurs: list[tuple[str, str]] = []
        self.session: Any = None

    def pytest_sessionstart(self, session: Any) -> None:
        self.session = session

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        if self.deadline and not self.stopped and time.perf_counter() > self.deadline:
            self.stopped = f"stopped at its deadline after {nodeid}"
            self.session.shouldstop = self.stopped

    def _blur(self, text: str) -> str:
        for path, name in self.blurs:
            text = text.replace(path, name)
        return denoise(text)

    def _emit(self, *events: Event) -> None:
        events = tuple((kind, self._blur(tid), outcome, self._blur(detail), self._blur(test))
                       for kind, tid, outcome, detail, test in events)
        self.events.extend(events)
        if self.stream is not None:
            for event in events:
                self.stream.write(json.dumps(event) + "\n")
            self.stream.flush()

    def pytest_configure(self, config: Any) -> None:
        hypothesis_profile()  # here: importing hypothesis before pytest warns
        for marker in self.lib.markers:
            config.addinivalue_line("markers", marker)

    @staticmethod
    def _detail(report: Any) -> str:
        if not report.failed:
            return str(report.longrepr[2]) if report.skipped and isinstance(
                report.longrepr, tuple) else ""
        text = report.longreprtext.strip().splitlines()
        return denoise(text[-1][:300]) if text else ""

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            nodeid = denoise(report.nodeid)
            self._emit(("collect", nodeid, "error", self._detail(report), nodeid))

    def pytest_runtest_logreport(self, report: Any) -> None:
        nodeid = denoise(report.nodeid)
        context = getattr(report, "context", None)
        if context is not None:  # a subtest (pytest's subtests, unittest's subTest)
            parts = [f"[{context.msg}]"] if context.msg is not None else []
            if context.kwargs:
                parts.append("(" + ", ".join(f"{k}={v}" for k, v in context.kwargs.items())
                             + ")")
            sid = denoise(f"{nodeid} {' '.join(parts) or '(<subtest>)'}")
            self.pending.append(("subtest", sid, report.outcome, self._detail(report),
                                 nodeid))
            return
        xfail = hasattr(report, "wasxfail")
        if report.when == "setup":
            if report.failed:
                outcome = "error"
            elif report.skipped:
                outcome = "xfailed" if xfail else "skipped"
            else:
                return
        elif report.when == "call":
            outcome = ("xfailed" if report.skipped else "xpassed") if xfail else \
                report.outcome
        else:
            if report.failed:
                self._emit(("teardown", nodeid, "error", self._detail(report), nodeid))
            return
        self._emit(*self.pending, ("test", nodeid, outcome, self._detail(report), nodeid))
        self.pending = []

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_call(self, item: Any) -> Generator[None, Any, Any]:
        plugin = self.plugin
        fn = getattr(item, "obj", None)
        if plugin is None or not callable(fn) or _is_async(fn):
            return (yield)
        called = self.called
        nodeid = denoise(item.nodeid)
        handle: Any = getattr(fn, "hypothesis", None)
        inner = getattr(handle, "inner_test", None)
        owner: Any
        if callable(inner) and not _is_async(inner):
            # a @given test: hypothesis' engine stays native (as fixtures do) and each
            # example runs the test's own function under the plugin, through the handle
            # hypothesis provides for wrapping it (its generated wrapper has no source)
            owner, attribute, target = handle, "inner_test", inner
        else:
            owner, attribute, target = item, "obj", fn
        name = _name(target)

        @functools.wraps(target)
        def under_plugin(*args: Any, **kwargs: Any) -> Any:
            called[nodeid] = name
            return plugin.run(target, *args, **kwargs)

        setattr(owner, attribute, under_plugin)
        try:
            return (yield)
        finally:
            setattr(owner, attribute, target)

    def summary(self) -> dict[str, Any]:
        """What ``splice.explain`` says: the tests whose function ran transformed, those
        that ran natively (and why), and the callees reached per group."""
        if self.plugin is None:
            return {}
        reached = {r.name: r for r in splice.explain(self.plugin)}
        entered = 0
        native: list[tuple[str, str]] = []
        test_modules = {name.rsplit(".", 1)[0] for name in self.called.values()}
        for nodeid, name in self.called.items():
            found = reached.get(name)
            if found is not None and found.entered:
                entered += 1
            else:
                native.append((nodeid, found.reason if found else "not reached"))
        groups: dict[str, Counter[str]] = {"entered": Counter(), "native": Counter()}
        reasons: Counter[str] = Counter()
        for r in reached.values():
            module = r.name.split(".")[0]
            group = ("tests" if any(r.name.startswith(m + ".") for m in test_modules) else
                     "library" if module in self.lib.packages else "other")
            groups["entered" if r.entered else "native"][group] += 1
            if not r.entered:
                reasons[re.sub(r"'[^']*'|\"[^\"]*\"|<[^>]*>", "…", denoise(r.reason))[:120]] \
                    += 1
        return {"called": len(self.called), "entered": entered, "native_tests": native[:200],
                "callees": {k: dict(v) for k, v in groups.items()},
                "native_reasons": dict(reasons.most_common(30))}


def _origins(lib: Library) -> dict[str, str]:
    """Where each of the library's packages was imported from (those imported)."""
    return {name: str(getattr(sys.modules[name], "__file__", None))
            for name in lib.packages if name in sys.modules}


def child(lib: Library, mode: str, root: str, out: str, plugin_class: str | None = None,
          deadline: float = 0.0, blur: str = "") -> int:
    """Run ``lib``'s suite in this process (``mode`` "native" or one of :data:`MODES`) and
    write the outcome as JSON to ``out`` (each test's events to ``out + ".events"`` as it
    ends). With a ``deadline`` (seconds), no test starts after it: the tests finished are
    reported (``stopped``)."""
    plugin = None
    if mode != "native":
        plugin = (load_object(plugin_class) if plugin_class else PLUGINS[mode])()
    args = [os.path.join(root, t) for t in lib.tests]
    # splice is imported before pytest: its entry-point plugin cannot be assertion-rewritten,
    # a warning that a suite's "filterwarnings = error" would make fatal
    args += ["--rootdir", root, "-o", "addopts=", "-p", "no:cacheprovider", "-q",
             "--tb=short", "-W", "ignore::pytest.PytestAssertRewriteWarning",
             *lib.args]
    start = time.perf_counter()
    with open(out + ".events", "w", encoding="utf-8") as stream:
        harness = Harness(lib, plugin, stream)
        if blur:
            harness.blurs = [(os.path.join(blur, "tmp"), "$TMPDIR"),
                             (os.path.join(blur, "lib"), "$LIB"), (blur, "$RUN")]
        if deadline > 0:
            harness.deadline = start + deadline
        code = pytest.main(args, plugins=[harness])
    data = {"lib": lib.name, "mode": mode, "exit": int(code), "events": harness.events,
            "seconds": time.perf_counter() - start, "explain": harness.summary(),
            "origins": {k: harness._blur(v) for k, v in _origins(lib).items()},
            "stopped": harness.stopped}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return 0


# --------------------------------------------------------------------------- parent side


@dataclass
class Run:
    """One subprocess run of one library's suite."""

    lib: str
    mode: str
    #: "ran"; "partial" (stopped at its deadline, or killed at its timeout: the tests it
    #: finished are compared); "crashed", "fetch error", "collected no tests"
    status: str
    detail: str = ""
    events: list[Event] = field(default_factory=list)
    seconds: float = 0.0
    exit: int = 0
    log: str = ""
    #: under a plugin: :meth:`Harness.summary`
    explain: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        return self.status in ("ran", "partial")

    def finished(self) -> set[str]:
        """Node ids of the tests that ended."""
        return {e[4] for e in self.events if e[0] == "test"}

    def counts(self) -> Counter[str]:
        """Outcomes of whole tests."""
        return Counter(e[2] for e in self.events if e[0] == "test")

    def tests(self) -> int:
        return sum(self.counts().values())

    def subtests(self) -> int:
        return sum(1 for e in self.events if e[0] == "subtest")

    def called(self) -> int:
        """Under a plugin: tests whose call went through ``plugin.run``."""
        return int(self.explain.get("called", 0))

    def entered(self) -> int:
        """Under a plugin: tests whose function ran transformed (``splice.explain``)."""
        return int(self.explain.get("entered", 0))


def run_one(lib: Library, mode: str, *, cache: str | None = None, timeout: float = 1800.0,
            logdir: str | None = None, plugin: str | None = None) -> Run:
    """Run ``lib``'s suite in a fresh subprocess (``mode``: "native" or one of
    :data:`MODES`; ``plugin``: a plugin class ``"module:Class"`` or ``"file.py:Class"``
    instead of the mode's, to check that the harness sees divergences)."""
    try:
        root = prepare(lib, cache)
    except (FetchError, OSError, subprocess.TimeoutExpired) as exc:
        return Run(lib.name, mode, "fetch error", str(exc))
    logdir = logdir or tempfile.mkdtemp(prefix="splice-libsuites-")
    os.makedirs(logdir, exist_ok=True)
    log = os.path.join(logdir, f"{lib.name}.{mode}.log")
    out = os.path.join(logdir, f"{lib.name}.{mode}.json")
    with contextlib.suppress(FileNotFoundError):
        os.remove(out)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    env["PYTHONHASHSEED"] = HASHSEED
    # no test starts after ``timeout``; the one running then may go on for a while
    hard = timeout + max(120.0, timeout / 4)
    start = time.perf_counter()
    killed = False
    with tempfile.TemporaryDirectory(prefix=f"{lib.name}-{mode}-") as run_dir, \
            open(log, "w", encoding="utf-8") as logf:
        # the run's own copy of the sdist is its working directory (the suite's relative
        # paths: data files, --ignore; files a test writes stay in it), with a private temp
        # dir (fixed names under it); both blurred in ids and details
        copy = os.path.join(run_dir, "lib")
        shutil.copytree(root, copy, symlinks=True)
        env["TMPDIR"] = os.path.join(run_dir, "tmp")
        os.mkdir(env["TMPDIR"])
        paths = [os.path.normpath(os.path.join(copy, lib.src))]
        if lib.deps:
            paths.append(os.path.join(os.path.dirname(root), "deps"))
        paths.append(repo)
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        cmd = [sys.executable, "-X", "faulthandler", "-m", "splice.tools.libsuites",
               "--child", lib.name, mode, out, "--root", copy, "--deadline", str(timeout),
               "--blur", run_dir]
        if plugin:
            cmd += ["--plugin", plugin]
        try:
            returncode = subprocess.run(cmd, cwd=copy, env=env, stdin=subprocess.DEVNULL,
                                        stdout=logf, stderr=subprocess.STDOUT, timeout=hard,
                                        check=False).returncode
        except subprocess.TimeoutExpired:
            killed, returncode = True, -9
    seconds = time.perf_counter() - start
    what = f"killed after {hard:g} s" if killed else f"exit code {returncode}"
    return load_run(lib.name, mode, out, log, what, seconds)


def _as_events(rows: list[list[str]]) -> list[Event]:
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def load_run(lib: str, mode: str, out: str, log: str, what: str = "",
             seconds: float = 0.0) -> Run:
    """The run whose child wrote ``out`` (its JSON, or only its events if it was killed
    or crashed: ``what`` says how it ended)."""
    if not os.path.exists(out):
        events: list[list[str]] = []
        with contextlib.suppress(OSError, ValueError), open(out + ".events",
                                                            encoding="utf-8") as f:
            events = [json.loads(line) for line in f if line.endswith("\n")]
        killed = what.startswith("killed")
        return Run(lib, mode, "partial" if killed and events else "crashed",
                   f"{what}: {_log_tail(log)}", _as_events(events),
                   seconds, -9 if killed else 1, log)
    with open(out, encoding="utf-8") as f:
        data = json.load(f)
    ran = _as_events(data["events"])
    if data["exit"] in _NOTHING_RAN and not any(e[0] == "test" for e in ran):
        # a collection error, a usage error or an empty selection: a run without tests
        # compares nothing, and must not read as identical
        return Run(lib, mode, "collected no tests",
                   f"pytest exit status {data['exit']}: {_log_tail(log)}", ran,
                   seconds or data["seconds"], data["exit"], log)
    return Run(lib, mode, "partial" if data["stopped"] else "ran", data["stopped"], ran,
               seconds or data["seconds"], data["exit"], log, data["explain"],
               data["origins"])


def _log_tail(log: str) -> str:
    """The end of a run's log (what says why it ended), or "" if there is none."""
    with contextlib.suppress(OSError), open(log, encoding="utf-8", errors="replace") as f:
        return f.read()[-1500:]
    return ""


#: pytest's exit statuses of a session that ran no test: interrupted (a collection error),
#: internal error, usage error, no tests collected
_NOTHING_RAN = frozenset({2, 3, 4, 5})


def load_runs(libs: Sequence[Library], modes: Sequence[str], logdir: str
              ) -> list[Comparison]:
    """The comparisons of a finished run whose results are in ``logdir`` (to report them
    again, with the current :data:`EXPECTED`)."""
    def load(lib: Library, mode: str) -> Run:
        base = os.path.join(logdir, f"{lib.name}.{mode}")
        return load_run(lib.name, mode, base + ".json", base + ".log", "killed")
    return [Comparison(lib.name, load(lib, "native"), load(lib, mode))
            for lib in libs for mode in modes]


# --------------------------------------------------------------------------- comparison


REASONS: dict[str, Reason] = {
    # -------------------------------------------------------------- runtime bugs (repros)
    "sweep-race": Reason("bug", (
        "a full garbage collection sweeps the dispatch tables (a gc callback, in whichever "
        "thread collects) while another thread running under the plugin adds a call site "
        "for the same callee: the sweep's iteration of the callee's WeakSet of sites "
        "raises RuntimeError: Set changed size during iteration, reported as an unraisable "
        "exception in the test that was running (toolz's test_fold, whose "
        "multiprocessing pool threads run under the plugin); a race, seen once, without a "
        "deterministic repro (a bounded stress of three threads rebinding a global "
        "function while the main thread collects did not show it in 8 s)")),
    # ------------------------------------------------------------------ expected limits
    "timing": Reason("limit", (
        "the test races a thread it started: it expects the thread to have run a few "
        "statements (raised, or called back) before the test's next line, which the "
        "thread does first natively; under a plugin the thread's target is compiled (with "
        "typed stages: inferred) at its first call, so the test's line comes first")),
}

#: differences that come and go from run to run (a race): their entries are not stale when
#: the difference does not show
FLAKY = {"timing", "sweep-race"}

BOTH = ("identity", "hooked")
HOOKED = ("hooked",)
#: (modes, library, exact test ids, reason): the differences from the native run that are
#: explained. Found by running every library in every mode (README, "Corpora"); each entry
#: must still match a difference when its library runs in its mode (``stale_entries``;
#: tests/tools/test_libsuites.py checks the libraries it runs).
EXPECTED: list[tuple[tuple[str, ...], str, tuple[str, ...], str]] = [
    # an unraisable RuntimeError from the gc callback while the pool's threads run
    (HOOKED, 'toolz', (
        'toolz/sandbox/tests/test_parallel.py::test_fold',
    ), 'sweep-race'),
    # callback_iter: the thread must have raised before `it.result`
    (('typed',), 'more-itertools', (
        'tests/test_more.py::CallbackIterTests::test_exception',
    ), 'timing'),
]


@dataclass
class Comparison:
    """A library's suite run natively and in another mode."""

    lib: str
    native: Run
    other: Run

    @property
    def mode(self) -> str:
        return self.other.mode

    @property
    def complete(self) -> bool:
        """Both runs ran every test."""
        return self.native.status == self.other.status == "ran"

    def scope(self) -> set[str] | None:
        """The node ids of the tests compared: all (None) when both runs are complete, else
        those that both finished (a run stopped at its deadline)."""
        if self.complete:
            return None
        if not (self.native.usable and self.other.usable):
            return set()
        return self.native.finished() & self.other.finished()

    def _events(self, run: Run) -> list[Event]:
        scope = self.scope()
        return run.events if scope is None else [e for e in run.events if e[4] in scope]

    def tests(self) -> int:
        """Tests compared (those of the native run in scope)."""
        return sum(1 for e in self._events(self.native) if e[0] == "test")

    def subtests(self) -> int:
        return sum(1 for e in self._events(self.native) if e[0] == "subtest")

    def ids(self) -> set[str]:
        """The ids of the tests and subtests compared."""
        return {e[1] for run in (self.native, self.other) for e in self._events(run)
                if e[0] in ("test", "subtest")}

    @property
    def identical(self) -> bool:
        return self.complete and not self.differing()

    def differing(self) -> dict[tuple[str, str], tuple[list[str], list[tuple[str, str]]]]:
        """(kind, id) -> (native outcomes, the other run's (outcome, detail)s) where the two
        runs differ (over the tests compared)."""
        native: dict[tuple[str, str], list[str]] = {}
        other: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for kind, tid, outcome, _, _ in self._events(self.native):
            native.setdefault((kind, tid), []).append(outcome)
        for kind, tid, outcome, detail, _ in self._events(self.other):
            other.setdefault((kind, tid), []).append((outcome, detail))
        out = {}
        for key in sorted(set(native) | set(other)):
            a = sorted(native.get(key, []))
            b = sorted(o for o, _ in other.get(key, []))
            if a != b:
                out[key] = (a, other.get(key, []))
        return out

    def explained(self) -> dict[str, str | None]:
        """Each differing id ("<run>" when a run gave nothing to compare) -> the reason key
        of the entry of EXPECTED that names it, or None."""
        if not (self.native.usable and self.other.usable):
            return {"<run>": None}
        ids = list(dict.fromkeys(tid for _, tid in self.differing()))
        known = {tid: reason for modes, lib, tids, reason in EXPECTED
                 if lib == self.lib and self.mode in modes for tid in tids}
        return {tid: known.get(tid) for tid in ids}

    def unexplained(self) -> list[str]:
        return [tid for tid, reason in self.explained().items() if reason is None]

    def stale_entries(self) -> list[str]:
        """Ids of EXPECTED for this library and mode, among the tests compared, that differ
        no more (remove them)."""
        if not (self.native.usable and self.other.usable):
            return []
        found, compared = self.explained(), self.ids()
        return [tid for modes, lib, tids, reason in EXPECTED if lib == self.lib
                and self.mode in modes and reason not in FLAKY for tid in tids
                if tid not in found and tid in compared]

    def rows(self) -> list[tuple[str, str]]:
        """(id, text) per difference: both outcomes and the other run's detail."""
        if not (self.native.usable and self.other.usable):
            return [("<run>", f"native {self.native.status} {self.native.detail[-300:]!r}; "
                              f"{self.mode} {self.other.status} "
                              f"{self.other.detail[-300:]!r}")]
        out = []
        for (kind, tid), (a, found) in self.differing().items():
            b = sorted(o for o, _ in found)
            detail = next((d for o, d in found if o not in a and d), "")
            out.append((tid, f"{tid}{'' if kind == 'test' else f' ({kind})'}: native "
                             f"{a or ['absent']}, {self.mode} {b or ['absent']}"
                             + (f" — {detail}" if detail else "")))
        return out

    def differences(self, limit: int = 20) -> list[str]:
        """Differing ids with both outcomes and the other run's detail."""
        out = [text for _, text in self.rows()]
        return out[:limit] + ([f"... {len(out) - limit} more"] if len(out) > limit else [])


def run_many(libs: Sequence[Library], modes: Sequence[str] = MODES, *, jobs: int = 2,
             cache: str | None = None, timeout: float = 1800.0, logdir: str | None = None,
             on_done: Callable[[Run], None] | None = None) -> list[Comparison]:
    """Every library natively and in each of ``modes``, over ``jobs`` processes (the sdists
    fetched first); one comparison per library and mode."""
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown}; modes: {', '.join(MODES)}")
    logdir = logdir or tempfile.mkdtemp(prefix="splice-libsuites-")
    fetch_errors: dict[str, str] = {}
    for lib in libs:
        try:
            prepare(lib, cache)
        except (FetchError, OSError, subprocess.TimeoutExpired) as exc:
            fetch_errors[lib.name] = str(exc)
    runs: dict[tuple[str, str], Run] = {}
    # the longest suites first, so the pool does not end on one long run
    order = sorted(((lib, mode) for lib in libs for mode in ("native", *modes)),
                   key=lambda pair: -pair[0].seconds * (1 if pair[1] == "native" else 4))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(run_one, lib, mode, cache=cache, timeout=timeout,
                               logdir=logdir): (lib.name, mode)
                   for lib, mode in order if lib.name not in fetch_errors}
        for name, error in fetch_errors.items():
            for mode in ("native", *modes):
                runs[(name, mode)] = Run(name, mode, "fetch error", error)
        for future in concurrent.futures.as_completed(futures):
            run = future.result()
            runs[futures[future]] = run
            if on_done is not None:
                on_done(run)
    return [Comparison(lib.name, runs[(lib.name, "native")], runs[(lib.name, mode)])
            for lib in libs for mode in modes]


def _status(run: Run, total: int) -> str:
    if run.status == "partial":
        return f"{run.mode} partial: {run.tests()} of {total} tests ({run.detail[:60]})"
    return "" if run.status == "ran" else f"{run.mode} {run.status}"


def format_report(comparisons: Sequence[Comparison]) -> str:
    """One line per library and mode (tests compared, same, different, unexplained, the
    tests entered under the plugin, times), then every difference: unexplained ones, the
    explained ones counted per reason; the tests whose function ran natively."""
    lines = [f"{'library':15} {'mode':8} {'tests':>6} {'subtests':>8} {'same':>6} "
             f"{'differ':>6} {'unexpl':>6} {'entered':>11} {'native s':>8} {'mode s':>7}  "
             "notes"]
    used: set[str] = set()
    for c in comparisons:
        if not (c.native.usable and c.other.usable):
            bad = c.native if not c.native.usable else c.other
            lines.append(f"{c.lib:15} {c.mode:8} {bad.mode} run {bad.status}: "
                         f"{bad.detail[-200:]!r}")
            continue
        differing = {tid for _, tid in c.differing()}
        notes = "; ".join(n for n in (_status(c.native, c.native.tests()),
                                      _status(c.other, c.native.tests())) if n)
        lines.append(f"{c.lib:15} {c.mode:8} {c.tests():6} {c.subtests():8} "
                     f"{len(c.ids() - differing):6} {len(differing):6} "
                     f"{len(c.unexplained()):6} "
                     f"{f'{c.other.entered()}/{c.other.called()}':>11} "
                     f"{c.native.seconds:8.1f} {c.other.seconds:7.1f}  {notes}")
    natives = {c.lib: c.native.counts() for c in comparisons}
    lines.append("native outcomes: " + "; ".join(
        f"{lib} " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])
        for lib, counts in natives.items()))
    for c in comparisons:
        if not c.differing() and c.native.usable and c.other.usable:
            continue
        found = c.explained()
        lines.append(f"\n{c.lib} [{c.mode}]: outcomes differ (logs: {c.native.log}, "
                     f"{c.other.log})")
        unexplained = [text for tid, text in c.rows() if found.get(tid, "") is None]
        lines += ["  UNEXPLAINED " + text for text in unexplained[:40]]
        if len(unexplained) > 40:
            lines.append(f"  ... {len(unexplained) - 40} more unexplained")
        per_reason: Counter[str] = Counter(r for r in found.values() if r)
        used.update(per_reason)
        lines += [f"  {k:4} explained by {key}" for key, k in per_reason.items()]
    for c in comparisons:
        lines += [f"  stale entry of EXPECTED: {c.mode} {c.lib} {tid}"
                  for tid in c.stale_entries()]
    natives_run = [(c, tid, why) for c in comparisons
                   for tid, why in c.other.explain.get("native_tests", [])]
    if natives_run:
        lines.append("\ntests whose function ran natively under the plugin:")
        lines += [f"  {c.lib} [{c.mode}] {tid}: {why}" for c, tid, why in natives_run[:40]]
    if used:
        lines.append("\nreasons:")
        lines += [f"  {key} ({REASONS[key].kind}): {REASONS[key].text}" for key in REASONS
                  if key in used]
    return "\n".join(lines)


def totals(comparisons: Sequence[Comparison]) -> str:
    """One line per mode: libraries, tests compared, differences (unexplained)."""
    out = []
    for mode in dict.fromkeys(c.mode for c in comparisons):
        group = [c for c in comparisons if c.mode == mode]
        out.append(f"{mode}: {sum(c.identical for c in group)} of {len(group)} libraries "
                   f"identical; {sum(c.tests() for c in group)} tests and "
                   f"{sum(c.subtests() for c in group)} subtests compared; "
                   f"{sum(len(c.differing()) for c in group)} differ, "
                   f"{sum(len(c.unexplained()) for c in group)} unexplained")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m splice.tools.libsuites",
        description="Run real libraries' own test suites natively and with every test "
                    "under a plugin; compare every test's outcome.")
    parser.add_argument("--libs", default="",
                        help=f"comma-separated (default all: {', '.join(LIBRARIES)})")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated, each compared with native: {', '.join(MODES)}")
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds per run: no test starts after them (a run stopped "
                             "so compares the tests it finished)")
    parser.add_argument("--cache", default=None,
                        help=f"where sdists are unpacked (default {default_cache()})")
    parser.add_argument("--logdir", default=None, help="logs and results of each run")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    parser.add_argument("--report", metavar="LOGDIR",
                        help="run nothing: report the results a run left in its --logdir")
    parser.add_argument("--child", nargs=3, metavar=("LIB", "MODE", "OUT"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--plugin", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--blur", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        name, mode, out = args.child
        return child(LIBRARIES[name], mode, args.root, out, args.plugin, args.deadline,
                     args.blur)
    names = [n for n in args.libs.split(",") if n] or list(LIBRARIES)
    modes = [m for m in args.modes.split(",") if m]
    if any(n not in LIBRARIES for n in names):
        parser.error(f"--libs takes {', '.join(LIBRARIES)}")
    if not modes or any(m not in MODES for m in modes):
        parser.error(f"--modes takes {', '.join(MODES)}")
    libs = [LIBRARIES[n] for n in names]
    tty = sys.stdout.isatty()
    done = [0]

    def progress(run: Run) -> None:
        done[0] += 1
        if tty:
            print(f"\r[{done[0]}/{(1 + len(modes)) * len(libs)}] {run.lib} {run.mode} "
                  f"{run.status} {run.seconds:.0f} s{' ' * 20}", end="", flush=True)

    start = time.perf_counter()
    if args.report:
        comparisons = load_runs(libs, modes, args.report)
    else:
        comparisons = run_many(libs, modes, jobs=args.jobs, cache=args.cache,
                               timeout=args.timeout, logdir=args.logdir, on_done=progress)
    if tty:
        print("\r" + " " * 70 + "\r", end="")
    print(format_report(comparisons))
    print(totals(comparisons))
    print("libraries: " + ", ".join(f"{lib.requirement}" for lib in libs))
    if args.report:
        print(f"modes: {', '.join(modes)}; reported from {args.report} (times: the runs' "
              "pytest sessions)")
    else:
        print(f"modes: {', '.join(modes)}; {args.jobs} jobs; wall time "
              f"{time.perf_counter() - start:.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{"lib": c.lib, "mode": c.mode, "identical": c.identical,
                        "explained": c.explained(), "differences": c.differences(10_000),
                        "native": {"status": c.native.status, "counts": c.native.counts(),
                                   "subtests": c.native.subtests(),
                                   "seconds": c.native.seconds},
                        c.mode: {"status": c.other.status, "counts": c.other.counts(),
                                 "subtests": c.other.subtests(),
                                 "seconds": c.other.seconds, "explain": c.other.explain}}
                       for c in comparisons], f, indent=1)
    return 0 if all(not c.unexplained() for c in comparisons) else 1


if __name__ == "__main__":
    sys.exit(main())

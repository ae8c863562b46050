"""Run CPython's own test modules natively and with the module under test rebuilt through
splice's round trip, and compare the outcome of every test.

Usage::

    python -m splice.tools.cpython_tests                     # the default list
    python -m splice.tools.cpython_tests test_json test_enum --jobs 2 --timeout 600
    python -m splice.tools.cpython_tests --literal --json out.json

Mechanism
---------
Each test module runs twice, each time in a fresh subprocess (``python -m
splice.tools.cpython_tests --child ...``), in its own empty temporary working directory and
with the same ``PYTHONHASHSEED``:

* ``native``: the modules under test are imported, then the test module is imported and run;
* ``rebuilt``: the modules under test are imported and rebuilt in place with
  :func:`splice.tools.rebuild.rebuild_modules` (every function and method replaced by
  ``splice.ir.roundtrip``), *before* the test module is imported, then it is imported and run.

Fresh copies: many test modules test a pure-Python copy of their module made with
``test.support.import_helper.import_fresh_module`` (``py_heapq = import_fresh_module('heapq',
blocked=['_heapq'])``, likewise for bisect, json, functools, statistics, operator, ...). In
the rebuilt run ``import_fresh_module`` is wrapped before the test module is imported: every
module it returns whose name is one of the modules under test is rebuilt too, together with
its submodules under test reachable as attributes (the fresh ``json`` brings its fresh
``json.decoder``, ``json.scanner``, ``json.encoder``). The C-accelerated copies are rebuilt the
same way (their remaining pure-Python functions are replaced; C functions are not functions of
the module and are left alone).

Which modules are under test: :data:`TARGETS` (``test_json`` -> ``json`` and its
submodules, ``test_tomllib`` -> ``tomllib`` and its submodules, ...), otherwise the name
without ``test_``.

Tests run with unittest's loader (``load_tests`` protocol honoured, so doctest suites and
test packages work) and a result object that records every outcome: ``pass``, ``fail``,
``error``, ``skip``, ``xfail``, ``xpass`` per test id, and ``pass``/``fail``/``error`` per
subtest (ids with memory addresses blurred). The two runs agree when the *multisets* of
``(test id, outcome)`` are equal, not just the counts. ``test.support.use_resources`` is ``[]``
(like ``regrtest`` without ``-u``: tests needing ``network``, ``cpu``, ``largefile``, ...
are skipped the same way in both runs); ``--use`` changes it; ``support.verbose`` is 0.

Runs go over ``--jobs`` worker processes (default 2), each with a timeout (``--timeout``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import importlib
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
import types
import unittest
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: the modules a test module exercises (rebuilt before it runs); default: name minus "test_"
TARGETS: dict[str, list[str]] = {
    "test_json": ["json", "json.decoder", "json.encoder", "json.scanner", "json.tool"],
    "test_tomllib": ["tomllib", "tomllib._parser", "tomllib._re", "tomllib._types"],
    "test_html": ["html"],
    "test_htmlparser": ["html.parser"],
    "test_urlparse": ["urllib.parse"],
    "test_weakset": ["_weakrefset"],
    "test_abc": ["abc", "_py_abc"],
    "test_ordered_dict": ["collections"],
    "test_collections": ["collections"],
    "test_minidom": ["xml.dom.minidom"],
    "test_pulldom": ["xml.dom.pulldom"],
    "test_http_cookies": ["http.cookies"],
    "test_datetime": ["datetime", "_strptime"],
    "test_decimal": ["decimal", "_pydecimal"],
    "test_sax": ["xml.sax", "xml.sax.saxutils", "xml.sax.handler", "xml.sax.xmlreader",
                 "xml.sax.expatreader", "xml.sax._exceptions"],
    "test_xml_etree": ["xml.etree.ElementTree", "xml.etree.ElementPath",
                       "xml.etree.ElementInclude"],
    "test_zoneinfo": ["zoneinfo", "zoneinfo._common", "zoneinfo._tzpath", "zoneinfo._zoneinfo"],
    "test_contextlib_async": ["contextlib"],
    "test_email": ["email", "email._parseaddr", "email._policybase", "email.base64mime",
                   "email.charset", "email.encoders", "email.errors", "email.feedparser",
                   "email.generator", "email.header", "email.headerregistry",
                   "email.iterators", "email.message", "email.parser", "email.policy",
                   "email.quoprimime", "email.utils", "email._header_value_parser",
                   "email.contentmanager", "email._encoded_words"],
}

#: the modules run by default (and by the test suite): each gives identical outcome sets
#: natively and rebuilt, rebuilds at least one function, and runs in a few seconds
DEFAULT = [
    # the list of the issue
    "test_textwrap", "test_difflib", "test_shlex", "test_fractions", "test_statistics",
    "test_heapq", "test_bisect", "test_colorsys", "test_string", "test_pprint", "test_json",
    "test_functools", "test_dataclasses", "test_enum", "test_argparse", "test_configparser",
    "test_ipaddress", "test_calendar",
    # more
    "test_glob", "test_fnmatch", "test_base64", "test_quopri", "test_html", "test_csv",
    "test_ntpath", "test_posixpath", "test_getopt", "test_optparse", "test_tomllib",
    "test_graphlib", "test_operator", "test_copy", "test_pickle", "test_collections",
    "test_ordered_dict", "test_contextlib", "test_contextlib_async", "test_abc",
    "test_random", "test_uuid", "test_urlparse", "test_weakset", "test_reprlib",
    "test_gettext", "test_mimetypes", "test_plistlib", "test_sched", "test_tabnanny",
    "test_zipapp", "test_wave", "test_netrc", "test_cmd", "test_code", "test_codeop",
    "test_tokenize", "test_locale", "test_datetime", "test_decimal", "test_secrets",
    "test_stat", "test_typing", "test_inspect", "test_ast", "test_dis", "test_types",
    "test_traceback", "test_warnings", "test_timeit", "test_gzip", "test_bz2", "test_lzma",
    "test_email", "test_http_cookies", "test_minidom", "test_pulldom", "test_sax",
    "test_xml_etree", "test_htmlparser", "test_filecmp", "test_fileinput", "test_shutil",
    "test_tempfile", "test_pathlib", "test_linecache", "test_pkgutil", "test_runpy",
    "test_copyreg", "test_shelve", "test_dbm", "test_codecs", "test_hmac", "test_getpass",
    "test_rlcompleter", "test_zoneinfo",
]

#: identical too, but slow (over 5 s) or timing-sensitive: run with ``--all``
EXTRA = ["test_queue", "test_selectors", "test_logging", "test_threading", "test_tarfile",
         "test_zipfile", "test_weakref", "test_pydoc"]

OUTCOMES = ("pass", "fail", "error", "skip", "xfail", "xpass")
HASHSEED = "0"
TEMP = re.escape(tempfile.gettempdir())
#: parts of test ids and messages that differ from run to run whatever the code does
NOISE = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),  # memory addresses
    (re.compile(r"\bid='?\d+'?"), "id=…"),  # reprs of mocks
    (re.compile(TEMP + r"/[^/'\"\s),\]]+"), tempfile.gettempdir() + "/…"),  # temp dirs
    (re.compile(r"\btmp[a-z0-9_]{8}"), "tmp…"),  # tempfile names
    (re.compile(r"@test_\d+_tmp"), "@test_…_tmp"),  # support.os_helper.TESTFN (pid)
]


def denoise(text: str) -> str:
    """``text`` with run-specific parts (addresses, temp paths, pids) blurred."""
    for pattern, replacement in NOISE:
        text = pattern.sub(replacement, text)
    return text


def targets_of(test: str) -> list[str]:
    """The modules ``test`` exercises."""
    if test in TARGETS:
        return list(TARGETS[test])
    return [test.removeprefix("test_")]


# --------------------------------------------------------------------------- child side


class RecordingResult(unittest.TestResult):
    """A result that records every outcome by test id (and by subtest)."""

    def __init__(self) -> None:
        super().__init__()
        #: (kind, id, outcome, detail); kind is "test" or "subtest"
        self.events: list[tuple[str, str, str, str]] = []

    @staticmethod
    def _id(test: unittest.TestCase) -> str:
        return denoise(test.id())

    def _err(self, err: Any) -> str:
        try:
            lines = traceback.format_exception_only(err[0], err[1])
            return "".join(lines).strip()[-400:]
        except Exception:  # noqa: BLE001 - a broken exception repr
            return repr(err[0])

    def _add(self, kind: str, test: unittest.TestCase, outcome: str, detail: str = "") -> None:
        self.events.append((kind, self._id(test), outcome, denoise(detail)))

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self._add("test", test, "pass")

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self._add("test", test, "fail", self._err(err))

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        self._add("test", test, "error", self._err(err))

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self._add("test", test, "skip", reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._add("test", test, "xfail")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self._add("test", test, "xpass")

    def addSubTest(self, test: unittest.TestCase, subtest: unittest.TestCase,
                   err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is None:
            self._add("subtest", subtest, "pass")
        elif issubclass(err[0], test.failureException):
            self._add("subtest", subtest, "fail", self._err(err))
        else:
            self._add("subtest", subtest, "error", self._err(err))


def load_roundtrip(spec: str) -> Callable[..., types.FunctionType]:
    """``"module:function"`` or ``"path/to/file.py:function"``: a stand-in for
    ``splice.ir.roundtrip`` (used to check that the harness sees divergences)."""
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):
        module_spec = importlib.util.spec_from_file_location("_splice_roundtrip", where)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    fn: Callable[..., types.FunctionType] = getattr(module, attr)
    return fn


def _child(test: str, mode: str, out: str, renest: bool, resources: list[str],
           roundtrip: str | None = None) -> int:
    """Run ``test`` in this process (``mode`` "native" or "rebuilt") and write the outcome
    as JSON to ``out``."""
    support: Any = importlib.import_module("test.support")
    import_helper: Any = importlib.import_module("test.support.import_helper")

    support.use_resources = resources
    support.verbose = 0
    data: dict[str, Any] = {"test": test, "mode": mode, "renest": renest, "rebuilds": [],
                            "events": [], "status": "ran", "detail": ""}
    start = time.perf_counter()
    targets = targets_of(test)
    modules: list[types.ModuleType] = []
    for name in targets:
        try:
            modules.append(importlib.import_module(name))
        except Exception as exc:  # noqa: BLE001 - reported
            data["rebuilds"].append({"modules": [name], "import_error": repr(exc)})
    if mode == "rebuilt":
        from splice.tools.rebuild import rebuild_modules

        stand_in = load_roundtrip(roundtrip) if roundtrip else None
        restore = rebuild_modules(modules, renest=renest, roundtrip=stand_in)
        data["rebuilds"].append(restore.stats.as_dict())
        original = import_helper.import_fresh_module
        done = {id(m) for m in modules}

        def import_fresh_module(name: str, *args: Any, **kwargs: Any) -> Any:
            module = original(name, *args, **kwargs)
            if module is None:
                return None
            # the fresh module if it is under test, and the fresh modules under test it
            # holds (a package's submodules; test.datetimetester's datetime_module)
            candidates = [module, *vars(module).values()]
            group = [m for m in candidates if isinstance(m, types.ModuleType)
                     and m.__name__ in targets and id(m) not in done]
            group = list({id(m): m for m in group}.values())
            if group:
                done.update(id(m) for m in group)
                stats = rebuild_modules(group, renest=renest, roundtrip=stand_in,
                                        scope=modules).stats.as_dict()
                stats["fresh"] = True
                data["rebuilds"].append(stats)
            return module

        import_helper.import_fresh_module = import_fresh_module
    data["setup_seconds"] = time.perf_counter() - start
    random.seed(0)  # tests that sample at random (test_tokenize) pick the same in both runs
    result = RecordingResult()
    try:
        module = importlib.import_module("test." + test)
        suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    except unittest.SkipTest as exc:
        data["status"] = "skipped"
        data["detail"] = str(exc)
    except BaseException as exc:  # noqa: BLE001 - reported as the module's outcome
        data["status"] = "import error"
        data["detail"] = "".join(traceback.format_exception(exc))[-2000:]
    else:
        suite.run(result)
    data["events"] = result.events
    data["tests_run"] = result.testsRun
    data["seconds"] = time.perf_counter() - start
    with open(out, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return 0


# --------------------------------------------------------------------------- parent side


@dataclass
class Run:
    """One subprocess run of one test module."""

    test: str
    mode: str
    status: str  # "ran", "skipped", "import error", "timeout", "crashed"
    detail: str = ""
    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    rebuilds: list[dict[str, Any]] = field(default_factory=list)
    tests_run: int = 0
    seconds: float = 0.0
    log: str = ""

    def counts(self) -> Counter[str]:
        """Outcomes of whole tests (subtests not included)."""
        return Counter(outcome for kind, _, outcome, _ in self.events if kind == "test")

    def subtest_counts(self) -> Counter[str]:
        return Counter(outcome for kind, _, outcome, _ in self.events if kind == "subtest")

    def outcome_set(self) -> Counter[tuple[str, str, str]]:
        """The multiset of (kind, test id, outcome)."""
        return Counter((kind, tid, outcome) for kind, tid, outcome, _ in self.events)

    def replaced(self) -> int:
        return sum(r.get("replaced", 0) for r in self.rebuilds)

    def unsupported(self) -> list[tuple[str, str]]:
        return [tuple(u) for r in self.rebuilds for u in r.get("unsupported", [])]

    def failed(self) -> list[tuple[str, str]]:
        return [tuple(u) for r in self.rebuilds for u in r.get("failed", [])]


def run_one(test: str, mode: str, *, renest: bool = True, timeout: float = 600.0,
            resources: Sequence[str] = (), logdir: str | None = None,
            roundtrip: str | None = None) -> Run:
    """Run ``test`` in a fresh subprocess (``mode``: "native" or "rebuilt"; ``roundtrip``:
    a stand-in for ``splice.ir.roundtrip``, see :func:`load_roundtrip`)."""
    logdir = logdir or tempfile.mkdtemp(prefix="splice-cpython-tests-")
    log = os.path.join(logdir, f"{test}.{mode}.log")
    out = os.path.join(logdir, f"{test}.{mode}.json")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = HASHSEED
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                else "")
    env.pop("PYTHONWARNINGS", None)
    cmd = [sys.executable, "-X", "faulthandler", "-m", "splice.tools.cpython_tests",
           "--child", mode, test, out, "--use", ",".join(resources)]
    if not renest:
        cmd.append("--literal")
    if roundtrip:
        cmd += ["--roundtrip", roundtrip]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"{test}-{mode}-") as cwd, \
            open(log, "w", encoding="utf-8") as logf:
        # A private temp dir: some tests (test_filecmp) use fixed names under
        # gettempdir(), so parallel children would otherwise share and clobber them.
        # Test ids that name a temp path (test_zoneinfo's subtests) then differ between
        # the two runs only by that path, so it is replaced by "$TMPDIR" below.
        private_tmp = env["TMPDIR"] = os.path.join(cwd, "tmp")
        os.mkdir(private_tmp)
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                  stdout=logf, stderr=subprocess.STDOUT, timeout=timeout,
                                  check=False)
        except subprocess.TimeoutExpired:
            return Run(test, mode, "timeout", f"no result after {timeout:g} s",
                       seconds=time.perf_counter() - start, log=log)
    seconds = time.perf_counter() - start
    if not os.path.exists(out):
        tail = ""
        with contextlib.suppress(OSError), open(log, encoding="utf-8",
                                                errors="replace") as f:
            tail = f.read()[-1500:]
        return Run(test, mode, "crashed", f"exit code {proc.returncode}: {tail}",
                   seconds=seconds, log=log)
    with open(out, encoding="utf-8") as f:
        data = json.load(f)
    return Run(test, mode, data["status"], data.get("detail", ""),
               [(e[0], e[1].replace(private_tmp, "$TMPDIR"), e[2], e[3])
                for e in data["events"]],
               data["rebuilds"], data.get("tests_run", 0), seconds, log)


@dataclass
class Comparison:
    """A test module run natively and rebuilt."""

    test: str
    native: Run
    rebuilt: Run

    @property
    def identical(self) -> bool:
        """Same module status ("ran", or "skipped" at import in both) and the same multiset
        of (test id, outcome)."""
        return (self.native.status == self.rebuilt.status in ("ran", "skipped")
                and self.native.outcome_set() == self.rebuilt.outcome_set())

    def differences(self, limit: int = 20) -> list[str]:
        """Test ids whose outcome differs, with both outcomes and the rebuilt detail."""
        if self.native.status != self.rebuilt.status or self.native.status != "ran":
            if self.identical:
                return []
            return [(f"native {self.native.status} {self.native.detail[-300:]!r}; "
                     f"rebuilt {self.rebuilt.status} {self.rebuilt.detail[-300:]!r}")]
        native: dict[tuple[str, str], list[str]] = {}
        rebuilt: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for kind, tid, outcome, _ in self.native.events:
            native.setdefault((kind, tid), []).append(outcome)
        for kind, tid, outcome, detail in self.rebuilt.events:
            rebuilt.setdefault((kind, tid), []).append((outcome, detail))
        out = []
        for key in sorted(set(native) | set(rebuilt)):
            a = sorted(native.get(key, []))
            b = sorted(o for o, _ in rebuilt.get(key, []))
            if a != b:
                detail = next((d for o, d in rebuilt.get(key, []) if o not in a and d), "")
                out.append(f"{key[1]}: native {a or ['absent']}, rebuilt {b or ['absent']}"
                           + (f" — {detail.splitlines()[-1][:300]}" if detail else ""))
        return out[:limit] + ([f"... {len(out) - limit} more"] if len(out) > limit else [])


def run_many(tests: Sequence[str], *, jobs: int = 2, renest: bool = True,
             timeout: float = 600.0, resources: Sequence[str] = (),
             logdir: str | None = None,
             on_done: Callable[[Run], None] | None = None) -> list[Comparison]:
    """Run every test natively and rebuilt over ``jobs`` processes."""
    logdir = logdir or tempfile.mkdtemp(prefix="splice-cpython-tests-")
    runs: dict[tuple[str, str], Run] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(run_one, test, mode, renest=renest, timeout=timeout,
                               resources=resources, logdir=logdir): (test, mode)
                   for test in tests for mode in ("native", "rebuilt")}
        for future in concurrent.futures.as_completed(futures):
            run = future.result()
            runs[futures[future]] = run
            if on_done is not None:
                on_done(run)
    return [Comparison(t, runs[(t, "native")], runs[(t, "rebuilt")]) for t in tests]


def _counts_text(run: Run) -> str:
    if run.status != "ran":
        return run.status
    c = run.counts()
    text = f"{c['pass']:5} {c['fail']:4} {c['error']:4} {c['skip']:4}"
    extra = c["xfail"] + c["xpass"]
    sub = sum(run.subtest_counts().values())
    return text + (f" x{extra}" if extra else "") + (f" +{sub}sub" if sub else "")


def format_table(comparisons: Sequence[Comparison]) -> str:
    """The report table."""
    lines = [
        (f"{'test module':22} {'native: pass fail err skip':34} "
         f"{'rebuilt: pass fail err skip':34} {'same':5} {'replaced':>8} {'unsup':>5} "
         f"{'failed':>6} {'native s':>8} {'rebuilt s':>9}"),
    ]
    for c in comparisons:
        lines.append(
            f"{c.test:22} {_counts_text(c.native):34} {_counts_text(c.rebuilt):34} "
            f"{'yes' if c.identical else 'NO':5} {c.rebuilt.replaced():8} "
            f"{len(c.rebuilt.unsupported()):5} {len(c.rebuilt.failed()):6} "
            f"{c.native.seconds:8.1f} {c.rebuilt.seconds:9.1f}")
    same = sum(c.identical for c in comparisons)
    lines.append(f"{same} of {len(comparisons)} test modules give identical outcome sets "
                 "natively and rebuilt")
    for c in comparisons:
        if not c.identical:
            lines.append(f"\n{c.test}: outcomes differ (logs: {c.native.log}, {c.rebuilt.log})")
            lines += ["  " + d for d in c.differences()]
        for name, error in c.rebuilt.failed():
            lines.append(f"  {c.test}: rebuild failed for {name}: {error}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m splice.tools.cpython_tests",
        description="Run CPython test modules natively and with their module rebuilt "
                    "through splice's round trip; compare every test's outcome.")
    parser.add_argument("tests", nargs="*",
                        help=f"test modules (default: the {len(DEFAULT)} of DEFAULT)")
    parser.add_argument("--all", action="store_true",
                        help=f"DEFAULT and the {len(EXTRA)} slower modules of EXTRA")
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--literal", action="store_true", help="round trip with renest=False")
    parser.add_argument("--use", default="", help="test resources to enable (comma-separated)")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    parser.add_argument("--roundtrip", help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=3, metavar=("MODE", "TEST", "OUT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    resources = [r for r in args.use.split(",") if r]
    if args.child:
        mode, test, out = args.child
        return _child(test, mode, out, not args.literal, resources, args.roundtrip)
    tests = args.tests or (DEFAULT + EXTRA if args.all else DEFAULT)
    tty = sys.stdout.isatty()
    done = [0]

    def progress(run: Run) -> None:
        done[0] += 1
        if tty:
            print(f"\r[{done[0]}/{2 * len(tests)}] {run.test} {run.mode} {run.status}"
                  f"{' ' * 20}", end="", flush=True)

    start = time.perf_counter()
    comparisons = run_many(tests, jobs=args.jobs, renest=not args.literal,
                           timeout=args.timeout, resources=resources, on_done=progress)
    if tty:
        print("\r" + " " * 70 + "\r", end="")
    print(format_table(comparisons))
    print(f"\nmode: {'literal (renest=False)' if args.literal else 'renest'}; "
          f"{args.jobs} jobs; wall time {time.perf_counter() - start:.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{"test": c.test, "identical": c.identical,
                        "differences": c.differences(1000),
                        "native": {"status": c.native.status, "counts": c.native.counts(),
                                   "subtests": c.native.subtest_counts(),
                                   "seconds": c.native.seconds},
                        "rebuilt": {"status": c.rebuilt.status, "counts": c.rebuilt.counts(),
                                    "subtests": c.rebuilt.subtest_counts(),
                                    "seconds": c.rebuilt.seconds,
                                    "rebuilds": c.rebuilt.rebuilds}}
                       for c in comparisons], f, indent=1)
    return 0 if all(c.identical for c in comparisons) else 1


if __name__ == "__main__":
    sys.exit(main())

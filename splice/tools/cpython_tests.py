"""Run CPython's own test modules natively and with the module under test rebuilt through
splice's round trip, or with every test run under an identity plugin, and compare the
outcome of every test.

Usage::

    python -m splice.tools.cpython_tests                     # the default list, rebuilt
    python -m splice.tools.cpython_tests test_json test_enum --jobs 2 --timeout 600
    python -m splice.tools.cpython_tests --literal --json out.json
    python -m splice.tools.cpython_tests --mode context,hooked   # under identity plugins
    python -m splice.tools.cpython_tests --mode oracle test_json    # the soundness oracle

Mechanism
---------
Each test module runs natively and in each mode asked for (``--mode``, default
``rebuilt``), each time in a fresh subprocess (``python -m splice.tools.cpython_tests
--child ...``), in its own empty temporary working directory and with the same
``PYTHONHASHSEED``:

* ``native``: the modules under test are imported, then the test module is imported and run;
* ``rebuilt``: the modules under test are imported and rebuilt in place with
  :func:`splice.tools.rebuild.rebuild_modules` (every function and method replaced by
  ``splice.ir.roundtrip``), *before* the test module is imported, then it is imported and run;
* ``context``: the test module is imported natively and the whole run of its suite is made
  under an identity plugin that recurses everywhere, ``plugin.run(suite.run, result)``:
  unittest's suite and case machinery, module and class fixtures (``setUpModule``,
  ``setUpClass``), ``setUp``/``tearDown``, cleanups, every test method and everything they
  call (the modules under test included) run transformed, reached through the plugin's
  dispatch like any call graph. Only the result object (splice's own code) stays native. This
  is simpler and reaches further than wrapping each test method: fixtures, ``subTest`` and
  the assertion helpers are covered too, and a test is entered exactly as unittest calls it;
* ``hooked``: the same with no-op ``prehook``/``posthook`` on every call (the per-call path:
  the hooks run from C, with no frame of splice's on the program's stack
  (splice/runtime/_hooks.c), implicit calls of operators routed);
* ``oracle``: the modules under test are rebuilt as in ``rebuilt``, but each function is
  replaced by one that the soundness oracle checks (``splice.infer.oracle.LiveOracle``):
  every call is checked against the function's inference for its arguments' exact classes
  (inferred on first use, with a time budget of ``ORACLE_BUDGET``), every temp it assigns
  against its abstract value. The report adds the functions instrumented and called, the
  specialisations inferred, the values checked and every violation (one line per
  function, line and abstract value, with how many values); values outside their abstract
  value while a definition the inference relied on has changed (a test patching a global,
  a method, a callee's code) are counted as stale, not as violations. The outcomes are
  compared with the native run as in the other modes (the checks change nothing). The
  exit status is 1 if there is a violation.

In the context modes the child also reports what ``splice.explain(plugin)`` said: how many
distinct callees ran transformed and natively, per group (the modules under test, the test
modules, the rest), and the reasons of the native ones. Differences from the native run are
matched against :data:`EXPECTED`, which explains each one by a :data:`REASONS` entry: an
expected limit (documented, or inherent to running transformed copies) or a known bug of
splice's runtime (each with a minimal repro in tests/tools/test_context_findings.py). A module
is "yes" (identical), "limit", "bug" or "NO" (something unexplained).

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

import splice
from splice.compat import TYPE_PARAMETER_SYNTAX, VERSION
from splice.runtime.native import BESIDE, CONSTRUCTOR

#: 3.11 without the C constructor entry: a class's constructor is compiled Python code
_COMPILED_CONSTRUCTORS = VERSION < (3, 12) and CONSTRUCTOR is None
#: without the C extensions the implicit calls' protocols and attribute checks that per-call
#: hooks route run in Python frames of splice's that count against the recursion limit
_PROTOCOL_FRAMES = BESIDE is None

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
    # the syntax of the running version
    *(["test_type_params", "test_type_aliases"] if TYPE_PARAMETER_SYNTAX else []),
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


class IdentityPlugin(splice.Plugin):
    """``context`` mode (``identity`` in splice.tools.libsuites): recurses into everything
    and changes nothing."""


class HookedIdentityPlugin(splice.Plugin):
    """``hooked`` mode (of both tools): the same, with no-op hooks around every call (the
    per-call path)."""

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pass

    def posthook(self, result: Any, fn: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        pass


#: the modes whose child runs the tests under an identity plugin
PLUGINS: dict[str, type[splice.Plugin]] = {"context": IdentityPlugin,
                                           "hooked": HookedIdentityPlugin}
CONTEXT_MODES = tuple(PLUGINS)
#: every mode a test module can run in (each compared with ``native``)
MODES = ("native", "rebuilt", *CONTEXT_MODES, "oracle")


def live_oracle() -> Any:
    """``oracle`` mode: a ``splice.infer.oracle.LiveOracle`` whose specialisations are
    checked against the guards of what their inference relied on (a test that patches a
    global, a method or a callee's code makes them stale, not wrong)."""
    from splice.compiler.pipeline import edge_guards
    from splice.infer import InferenceParams
    from splice.infer.oracle import LiveOracle

    def snapshot(inference: Any) -> Callable[[], bool]:
        guards = edge_guards(inference.all_edges(), inference.function)
        return lambda: all(guard.holds() for guard in guards)
    # a smaller time budget than the default 2 s: thousands of specialisations are inferred
    return LiveOracle(snapshot=snapshot, params=InferenceParams(time_budget=ORACLE_BUDGET))


#: ``oracle`` mode: seconds to infer one specialisation (beyond: ``Any``)
ORACLE_BUDGET = 0.5


def oracle_summary(oracle: Any) -> dict[str, Any]:
    """What the oracle of a run found (JSON-ready)."""
    report = oracle.report
    return {"instrumented": report.instrumented, "entered": len(oracle.entered),
            "specializations": sum(len(v) for v in oracle.inferences.values()),
            "checks": report.checks, "stale": oracle.stale,
            "violations": [{"function": v.function, "line": v.line, "value": v.value,
                            "abstract": v.abstract,
                            "count": oracle.counts.get((v.function.split("(")[0], v.line,
                                                        v.abstract), 1)}
                           for v in report.violations],
            "errors": len(oracle.errors), "error_examples": oracle.errors[:20]}


@dataclass(frozen=True)
class Reason:
    """Why a test's outcome differs under a plugin."""

    #: "limit": documented (docs/runtime.md) or inherent to running transformed copies of the
    #: code, expected; "bug": a bug of splice's runtime, with a minimal repro in
    #: tests/tools/test_context_findings.py (remove the entries when it is fixed)
    kind: str
    text: str


REASONS: dict[str, Reason] = {
    # ------------------------------------------------------------------ expected limits
    **({"hooked-frames": Reason("limit", (
        "without the C extensions, with per-call hooks the protocols of implicit calls "
        "(splice/runtime/implicit.py, attributes.py) run in Python frames of splice's "
        "between the program's, which count against the recursion limit: the test nests "
        "TOML to within a few units of the limit it sets, and under hooks its deepest "
        "level raises RecursionError"))} if _PROTOCOL_FRAMES else {}),
    # 3.11 only in a full run: on 3.12+ the table test passes once the array test ran
    # before it in the same context (unittest's order); run alone it fails there too.
    # Only without the C extensions: the C constructor entry makes the object from C
    **({"recursion-edge": Reason("limit", (
        "the test parses a table nested to within a frame of a recursion limit it sets "
        "itself: at the innermost table the compiled constructor of a class with a Python "
        "__init__ (the pure-Python form, without splice/runtime/_hooks.c) calls "
        "object.__new__ from its own frame, and on 3.11 a builtin's call spends a unit of "
        "the limit (natively type.__call__ calls the slot), so the deepest table raises "
        "RecursionError"))}
       if _COMPILED_CONSTRUCTORS else {}),
    "quickening": Reason("limit", (
        "a function called under the plugin runs its transformed copy: the original code "
        "object never runs, so CPython never specialises it (dis(adaptive=True))")),
    "transformed-code": Reason("limit", (
        "code run under the plugin is splice's transformed code, so dis of what holds it "
        "shows splice's bytecode: a coroutine created under the plugin (docs/runtime.md, No "
        "leaks), a traceback's frame under hooks (attribute reads are guarded there)")),
    "hidden-names": Reason("limit", (
        "frame locals show splice's hidden names under a context (docs/runtime.md: the "
        "dispatch table and its helpers are hidden cells @name, temporaries %n): "
        "traceback's capture_locals, inspect.getgeneratorlocals; the cells' prologue "
        "(COPY_FREE_VARS) leaves instruction 0 without a position")),
    "overlay-class": Reason("limit", (
        "with per-call hooks map() enters int as a hooks wrapper, so the map object is of "
        "a subclass of map that shows int (docs/runtime.md, Overlays: its __reduce__, "
        "pickle and copy give what a native map gives): type(obj) is map is false")),
    # 3.11 only: from 3.12 on the checks' calls leave tomllib's recursion tests passing
    **({"oracle-frames": Reason("limit", (
        "oracle mode: each check is a call, so a test that measures how much recursion "
        "depth is left sees less, and a parser it drives to the limit fails earlier"))}
       if VERSION < (3, 12) else {}),
    "oracle-instrumented": Reason("limit", (
        "oracle mode: the functions checked are instrumented copies: their code shows the "
        "checks (dis.code_info), the oracle holds references (sys.getrefcount), and "
        "doctest does not collect a docstring example of a function it replaced")),
}

BOTH = ("context", "hooked")
HOOKED = ("hooked",)
ORACLE = ("oracle",)
_TOMLLIB = "test.test_tomllib.test_misc.TestMiscellaneous."
#: the recursion limit test_tomllib's recursion tests set (support.infinite_recursion: the
#: depth the tool's child runs them at, plus 100), part of their subtests' ids
_TOMLLIB_LIMIT = 121 if VERSION < (3, 12) else 116
_ARRAY_LIMIT = f"{_TOMLLIB}test_inline_array_recursion_limit"
_TABLE_LIMIT = f"{_TOMLLIB}test_inline_table_recursion_limit"
_ARRAY_LIMIT_SUBTEST = f"{_ARRAY_LIMIT} (limit={_TOMLLIB_LIMIT}, available=99, nest_count=47)"
_TABLE_LIMIT_SUBTEST = f"{_TABLE_LIMIT} (limit={_TOMLLIB_LIMIT}, available=99, nest_count=32)"
_QUICKENED = "[quickened=True, adaptive=True]"
_COMPAT_PICKLE = ("CPicklerTests", "DumpPickle_CLoadPickle", "InMemoryPickleTests")
#: (modes, test module, test ids, reason): the differences from the native run that are
#: explained, each named by its exact id: a test's (``unittest``'s ``test.id()``), a
#: subtest's (the test's id, then its description: ``[msg]``, ``(params)``), or
#: "<module>" for a run that did not finish; no patterns (a test whose subtest failed or
#: erred is not reported itself: its id differs too, and is named with the subtest's). An
#: id is named by one entry per mode. The entries were found by running every module of
#: DEFAULT in each mode (README, "Corpora"), their ids by running each entry's module in
#: its modes on each supported version, hence the ids that hold on some versions only;
#: every id must still differ when its module runs in its mode (``stale_entries``:
#: tests/tools/test_cpython_context.py checks the modules it runs, and that every id is
#: one of the module's tests).
EXPECTED: list[tuple[tuple[str, ...], str, tuple[str, ...], str]] = [
    *([(ORACLE, "test_tomllib", (_ARRAY_LIMIT, _ARRAY_LIMIT_SUBTEST, _TABLE_LIMIT,
                                 _TABLE_LIMIT_SUBTEST), "oracle-frames"),
       (ORACLE, "test_xml_etree", ("test.test_xml_etree.BugsTest.test_bug_xmltoolkit63",),
        "oracle-instrumented")]
      if VERSION < (3, 12) else []),
    (ORACLE, "test_dis", ("test.test_dis.BytecodeTests.test_info",
                          "test.test_dis.CodeInfoTests.test_code_info",
                          "test.test_dis.CodeInfoTests.test_show_code"), "oracle-instrumented"),
    # a doctest of typing's, which 3.13's typing does not have
    *([(ORACLE, "test_typing", ("typing._collect_parameters",), "oracle-instrumented")]
      if VERSION < (3, 13) else []),
    (BOTH, "test_dis", ("test.test_dis.DisTests.test_loop_quicken",
                        "test.test_dis.DisWithFileTests.test_loop_quicken",
                        # (on 3.12 these pass under both plugins)
                        *(("test.test_dis.DisTests.test_super_instructions",
                           "test.test_dis.DisWithFileTests.test_super_instructions")
                          if VERSION[:2] != (3, 12) else ()),
                        # 3.11: the subtest with adaptive=True fails (and so the test is
                        # not reported); from 3.12 on they pass under both plugins
                        *(("test.test_dis.DisTests.test_show_caches",
                           f"test.test_dis.DisTests.test_show_caches {_QUICKENED}",
                           "test.test_dis.DisWithFileTests.test_show_caches",
                           f"test.test_dis.DisWithFileTests.test_show_caches {_QUICKENED}")
                          if VERSION < (3, 12) else ())), "quickening"),
    (HOOKED, "test_dis", ("test.test_dis.BytecodeTests.test_from_traceback_dis",
                          "test.test_dis.TestDisTraceback.test_distb_explicit_arg",
                          "test.test_dis.TestDisTraceback.test_distb_last_traceback",
                          "test.test_dis.TestDisTracebackWithFile.test_distb_explicit_arg",
                          "test.test_dis.TestDisTracebackWithFile.test_distb_last_traceback"),
     "transformed-code"),
    (BOTH, "test_dis", ("test.test_dis.DisTests.test_disassemble_coroutine",
                        "test.test_dis.DisWithFileTests.test_disassemble_coroutine"),
     "transformed-code"),
    (HOOKED, "test_inspect", (
        "test.test_inspect.test_inspect.TestGetGeneratorState.test_getgeneratorlocals",
        *(("test.test_inspect.test_inspect.TestGetAsyncGenState.test_getasyncgenlocals",)
          if VERSION >= (3, 12) else ())), "hidden-names"),  # the async test: 3.12 on
    # the subtests that pickle a map object with protocols 0 to 2; the test of the other
    # two classes (PyPicklerTests, CDumpPickle_LoadPickle) passes under hooks
    (HOOKED, "test_pickle", tuple(
        tid for cls in _COMPAT_PICKLE for tid in (
            f"test.test_pickle.{cls}.test_compat_pickle",
            *(f"test.test_pickle.{cls}.test_compat_pickle (type=<class 'map'>, proto={p})"
              for p in range(3)))), "overlay-class"),
    *([(("context",), "test_tomllib", (_TABLE_LIMIT, _TABLE_LIMIT_SUBTEST), "recursion-edge")]
      if _COMPILED_CONSTRUCTORS else []),
    *([(HOOKED, "test_tomllib", (_ARRAY_LIMIT, _ARRAY_LIMIT_SUBTEST, _TABLE_LIMIT,
                                 _TABLE_LIMIT_SUBTEST), "hooked-frames")]
      if _PROTOCOL_FRAMES else []),
    (BOTH, "test_traceback", (
        "test.test_traceback.CExcReportingTests.test_KeyboardInterrupt_at_first_line_of_frame",
        "test.test_traceback.PyExcReportingTests.test_KeyboardInterrupt_at_first_line_of_frame",
        "test.test_traceback.TestStack.test_extract_stackup_deferred_lookup_lines",
        "test.test_traceback.TestStack.test_format_locals",
        "test.test_traceback.TestTracebackException.test_comparison_params_variations"),
     "hidden-names"),
    (HOOKED if VERSION >= (3, 12) else BOTH, "test_traceback", (
        "test.test_traceback.TestTracebackException.test_print",), "hidden-names"),
    (HOOKED, "test_traceback", (
        "test.test_traceback.TestTracebackException.test_from_exception",), "hidden-names"),
]


def _entries(c: Comparison) -> list[tuple[int, tuple[str, ...], str]]:
    """(index in EXPECTED, test ids, reason) of the entries for ``c``'s mode and module."""
    return [(i, tids, reason) for i, (modes, test, tids, reason) in enumerate(EXPECTED)
            if c.mode in modes and test == c.test]


def explained(c: Comparison) -> dict[str, tuple[int, str] | None]:
    """Each differing test id of ``c`` ("<module>" if a run did not finish) -> (index in
    EXPECTED, reason key) of the entry that names it, or None."""
    if c.identical:
        return {}
    if c.native.status != "ran" or c.other.status != "ran":
        tids = ["<module>"]
    else:
        tids = [tid for _, tid in c.differing()]
    known = {tid: (i, reason) for i, entry_tids, reason in _entries(c) for tid in entry_tids}
    return {tid: known.get(tid) for tid in tids}


def verdict(c: Comparison) -> str:
    """"yes" (identical), "limit" (differs only by expected limits), "bug" (differs by known
    runtime bugs, maybe limits too) or "NO" (some difference is not explained)."""
    if c.identical:
        return "yes"
    found = explained(c).values()
    if any(f is None for f in found):
        return "NO"
    return "bug" if any(REASONS[f[1]].kind == "bug" for f in found if f) else "limit"


def stale_entries(c: Comparison) -> list[str]:
    """The test ids of EXPECTED's entries for ``c``'s mode and module that do not differ
    (the difference is gone, or the id is not the test's any more: remove or correct it),
    once both runs finished."""
    if c.native.status != "ran" or c.other.status != "ran":
        return []
    found = explained(c)
    return [f"{c.mode} {c.test} {tid} ({reason})" for _, tids, reason in _entries(c)
            for tid in tids if tid not in found]


def expected_differences(c: Comparison) -> dict[str, str]:
    """The explained differences of ``c``: test id -> "kind: reason key"."""
    return {tid: f"{REASONS[f[1]].kind}: {f[1]}" for tid, f in explained(c).items() if f}


def _group(name: str, targets: Sequence[str]) -> str:
    """Which part of the program a callee named ``module.qualname`` belongs to."""
    if any(name.startswith(t + ".") for t in targets):
        return "under test"
    if name.startswith("test."):
        return "tests"
    return "other"


def explain_summary(plugin: splice.Plugin, targets: Sequence[str]) -> dict[str, Any]:
    """What ``splice.explain(plugin)`` says about the callees reached (distinct names): how
    many ran transformed and natively, per group (the modules under test, the test
    modules, the rest: unittest, the standard library), and why the native ones did."""
    entered: Counter[str] = Counter()
    native: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    natives: list[tuple[str, str]] = []
    for reached in splice.explain(plugin):
        group = _group(reached.name, targets)
        if reached.entered:
            entered[group] += 1
        else:
            native[group] += 1
            reasons[reason_kind(reached.reason)] += 1
            natives.append((reached.name, reached.reason))
    return {"entered": dict(entered), "native": dict(native), "reasons": dict(reasons),
            "natives": sorted(natives)[:500]}


def reason_kind(reason: str) -> str:
    """A reason why a callee ran natively, without the callee's specifics (for counting)."""
    reason = denoise(reason)
    return re.sub(r"'[^']*'|\"[^\"]*\"|<[^>]*>", "…", reason)[:120]


def load_roundtrip(spec: str) -> Callable[..., types.FunctionType]:
    """``"module:function"`` or ``"path/to/file.py:function"``: a stand-in for
    ``splice.ir.roundtrip`` (used to check that the harness sees divergences)."""
    fn: Callable[..., types.FunctionType] = load_object(spec)
    return fn


def load_object(spec: str) -> Any:
    """The object named by ``"module:name"`` or ``"path/to/file.py:name"``."""
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):
        module_spec = importlib.util.spec_from_file_location("_splice_roundtrip", where)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    return getattr(module, attr)


def _child(test: str, mode: str, out: str, renest: bool, resources: list[str],
           roundtrip: str | None = None, plugin_class: str | None = None) -> int:
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
    oracle = live_oracle() if mode == "oracle" else None
    if mode in ("rebuilt", "oracle"):
        from splice.tools.rebuild import rebuild_modules

        # oracle: the functions under test replaced by instrumented ones (whose code
        # differs from the original's by the checks: no dis-level comparison)
        stand_in = oracle.instrument if oracle is not None else \
            load_roundtrip(roundtrip) if roundtrip else None
        check = oracle is None
        restore = rebuild_modules(modules, renest=renest, roundtrip=stand_in, check=check)
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
                                        scope=modules, check=check).stats.as_dict()
                stats["fresh"] = True
                data["rebuilds"].append(stats)
            return module

        import_helper.import_fresh_module = import_fresh_module
    data["setup_seconds"] = time.perf_counter() - start
    random.seed(0)  # tests that sample at random (test_tokenize) pick the same in both runs
    result = RecordingResult()
    plugin = None
    if mode in CONTEXT_MODES:
        plugin = (load_object(plugin_class) if plugin_class else PLUGINS[mode])()
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
        if plugin is None:
            suite.run(result)
        else:
            # the whole run under the plugin: unittest's suite and case machinery,
            # module and class fixtures, setUp/tearDown, cleanups, the test methods and
            # everything they call (the result object is splice's code: it stays native)
            plugin.run(suite.run, result)
    if plugin is not None:
        data["explain"] = explain_summary(plugin, targets)
    if oracle is not None:
        data["oracle"] = oracle_summary(oracle)
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
    #: context modes: :func:`explain_summary` of the plugin after the run
    explain: dict[str, Any] = field(default_factory=dict)
    #: oracle mode: :func:`oracle_summary` after the run
    oracle: dict[str, Any] = field(default_factory=dict)

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

    def entered(self) -> int:
        """Context modes: distinct callees that ran transformed under the plugin."""
        return sum(self.explain.get("entered", {}).values())

    def ran_native(self) -> int:
        """Context modes: distinct callees reached that ran natively (with a reason)."""
        return sum(self.explain.get("native", {}).values())


def run_one(test: str, mode: str, *, renest: bool = True, timeout: float = 600.0,
            resources: Sequence[str] = (), logdir: str | None = None,
            roundtrip: str | None = None, plugin: str | None = None) -> Run:
    """Run ``test`` in a fresh subprocess (``mode``: one of :data:`MODES`; ``roundtrip``:
    a stand-in for ``splice.ir.roundtrip``, see :func:`load_roundtrip`; ``plugin``: a
    plugin class for the context modes, ``"module:Class"`` or ``"file.py:Class"``, instead
    of the identity plugins, to check that the harness sees divergences)."""
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
    if plugin:
        cmd += ["--plugin", plugin]
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
               data["rebuilds"], data.get("tests_run", 0), seconds, log,
               data.get("explain", {}), data.get("oracle", {}))


@dataclass
class Comparison:
    """A test module run natively and in another mode (``rebuilt``, ``context``,
    ``hooked``)."""

    test: str
    native: Run
    other: Run

    @property
    def mode(self) -> str:
        return self.other.mode

    @property
    def rebuilt(self) -> Run:
        """The run compared with the native one (the name of the first mode)."""
        return self.other

    @property
    def identical(self) -> bool:
        """Same module status ("ran", or "skipped" at import in both) and the same multiset
        of (test id, outcome)."""
        return (self.native.status == self.other.status in ("ran", "skipped")
                and self.native.outcome_set() == self.other.outcome_set())

    def differing(self) -> dict[tuple[str, str], tuple[list[str], list[tuple[str, str]]]]:
        """(kind, test id) -> (native outcomes, other (outcome, detail)s) where they differ."""
        native: dict[tuple[str, str], list[str]] = {}
        other: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for kind, tid, outcome, _ in self.native.events:
            native.setdefault((kind, tid), []).append(outcome)
        for kind, tid, outcome, detail in self.other.events:
            other.setdefault((kind, tid), []).append((outcome, detail))
        out = {}
        for key in sorted(set(native) | set(other)):
            a = sorted(native.get(key, []))
            b = sorted(o for o, _ in other.get(key, []))
            if a != b:
                out[key] = (a, other.get(key, []))
        return out

    def differences(self, limit: int = 20) -> list[str]:
        """Test ids whose outcome differs, with both outcomes and the other run's detail."""
        mode = self.other.mode
        if self.native.status != self.other.status or self.native.status != "ran":
            if self.identical:
                return []
            return [(f"native {self.native.status} {self.native.detail[-300:]!r}; "
                     f"{mode} {self.other.status} {self.other.detail[-300:]!r}")]
        out = []
        for (_, tid), (a, found) in self.differing().items():
            b = sorted(o for o, _ in found)
            detail = next((d for o, d in found if o not in a and d), "")
            out.append(f"{tid}: native {a or ['absent']}, {mode} {b or ['absent']}"
                       + (f" — {detail.splitlines()[-1][:300]}" if detail else ""))
        return out[:limit] + ([f"... {len(out) - limit} more"] if len(out) > limit else [])


def run_many(tests: Sequence[str], *, jobs: int = 2, renest: bool = True,
             timeout: float = 600.0, resources: Sequence[str] = (),
             logdir: str | None = None, modes: Sequence[str] = ("rebuilt",),
             on_done: Callable[[Run], None] | None = None) -> list[Comparison]:
    """Run every test natively and in each of ``modes`` over ``jobs`` processes; one
    comparison per test and mode (tests first, then modes, in the given orders)."""
    logdir = logdir or tempfile.mkdtemp(prefix="splice-cpython-tests-")
    unknown = [m for m in modes if m not in MODES or m == "native"]
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown}; modes: {MODES[1:]}")
    runs: dict[tuple[str, str], Run] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(run_one, test, mode, renest=renest, timeout=timeout,
                               resources=resources, logdir=logdir): (test, mode)
                   for test in tests for mode in ("native", *modes)}
        for future in concurrent.futures.as_completed(futures):
            run = future.result()
            runs[futures[future]] = run
            if on_done is not None:
                on_done(run)
    return [Comparison(t, runs[(t, "native")], runs[(t, m)]) for t in tests for m in modes]


def _counts_text(run: Run) -> str:
    if run.status != "ran":
        return run.status
    c = run.counts()
    text = f"{c['pass']:5} {c['fail']:4} {c['error']:4} {c['skip']:4}"
    extra = c["xfail"] + c["xpass"]
    sub = sum(run.subtest_counts().values())
    return text + (f" x{extra}" if extra else "") + (f" +{sub}sub" if sub else "")


def format_table(comparisons: Sequence[Comparison]) -> str:
    """The report: one table per mode; the differences of each module that differs,
    unexplained ones first, explained ones counted per reason (:data:`EXPECTED`); for the
    context modes what ``splice.explain`` said; the reasons used."""
    lines: list[str] = []
    used: set[str] = set()
    for mode in dict.fromkeys(c.mode for c in comparisons):
        group = [c for c in comparisons if c.mode == mode]
        context = mode in CONTEXT_MODES
        extra = (f"{'entered':>7} {'native':>6}" if context else
                 f"{'instr':>5} {'called':>6} {'checks':>9} {'viol':>4}" if mode == "oracle"
                 else f"{'replaced':>8} {'unsup':>5} {'failed':>6}")
        lines.append(f"{'test module':22} {'native: pass fail err skip':34} "
                     f"{mode + ': pass fail err skip':34} {'same':5} {extra} "
                     f"{'native s':>8} {mode + ' s':>9}")
        verdicts: Counter[str] = Counter()
        for c in group:
            v = verdict(c)
            verdicts[v] += 1
            o = c.other.oracle
            extra = (f"{c.other.entered():7} {c.other.ran_native():6}" if context else
                     f"{o.get('instrumented', 0):5} {o.get('entered', 0):6} "
                     f"{o.get('checks', 0):9} {len(o.get('violations', [])):4}"
                     if mode == "oracle" else
                     f"{c.other.replaced():8} {len(c.other.unsupported()):5} "
                     f"{len(c.other.failed()):6}")
            lines.append(f"{c.test:22} {_counts_text(c.native):34} {_counts_text(c.other):34} "
                         f"{v:5} {extra} {c.native.seconds:8.1f} {c.other.seconds:9.1f}")
        lines.append(f"{mode}: {verdicts['yes']} of {len(group)} test modules give identical "
                     f"outcome sets natively and {mode}"
                     + (f"; {verdicts['limit']} differ only by expected limits, "
                        f"{verdicts['bug']} by known runtime bugs, {verdicts['NO']} "
                        "by unexplained differences" if len(group) > verdicts["yes"] else ""))
        lines.append(_totals(group))
        for c in group:
            if not c.identical:
                lines.append(f"\n{c.test} [{mode}]: outcomes differ ({verdict(c)}; logs: "
                             f"{c.native.log}, {c.other.log})")
                lines += ["  " + line for line in _difference_lines(c)]
                used.update(f[1] for f in explained(c).values() if f)
            lines += [f"  stale entry of EXPECTED: {e}" for e in stale_entries(c)
                      if c.native.status == "ran"]
            for name, error in c.other.failed():
                lines.append(f"  {c.test}: rebuild failed for {name}: {error}")
        if context:
            lines.append(_explain_text(group))
        if mode == "oracle":
            lines.append(_oracle_text(group))
        lines.append("")
    if used:
        lines.append("reasons:")
        lines += [f"  {key} ({REASONS[key].kind}): {REASONS[key].text}" for key in REASONS
                  if key in used]
    return "\n".join(lines)


def _difference_lines(c: Comparison, limit: int = 20) -> list[str]:
    """The unexplained differences of ``c`` (up to ``limit``), then the explained ones
    counted per reason with an example."""
    found = explained(c)
    unexplained = [d for d in c.differences(limit=100_000)
                   if found.get(d.split(": native ")[0], True) is None
                   or (d.startswith("native ") and found.get("<module>") is None)]
    lines = ["UNEXPLAINED " + d for d in unexplained[:limit]]
    if len(unexplained) > limit:
        lines.append(f"... {len(unexplained) - limit} more unexplained")
    per_reason: dict[str, list[str]] = {}
    for tid, f in found.items():
        if f is not None:
            per_reason.setdefault(f[1], []).append(tid)
    for key, tids in per_reason.items():
        lines.append(f"{len(tids):4} explained by {key} ({REASONS[key].kind}), e.g. {tids[0]}")
    return lines


def _totals(group: Sequence[Comparison]) -> str:
    """Tests and subtests run per mode, summed over the modules."""
    def total(runs: Sequence[Run]) -> str:
        tests = sum(sum(r.counts().values()) for r in runs)
        subtests = sum(sum(r.subtest_counts().values()) for r in runs)
        passed = sum(r.counts()["pass"] for r in runs)
        return f"{tests} tests ({passed} passed), {subtests} subtests"
    mode = group[0].mode if group else "?"
    return (f"totals: native {total([c.native for c in group])}; "
            f"{mode} {total([c.other for c in group])}")


def _oracle_text(group: Sequence[Comparison]) -> str:
    """The oracle's figures summed over the modules, and every violation."""
    def total(key: str) -> int:
        return sum(int(c.other.oracle.get(key, 0)) for c in group)
    violations = [(c.test, v) for c in group for v in c.other.oracle.get("violations", [])]
    lines = [f"oracle: {len(group)} test modules, {total('instrumented')} functions "
             f"instrumented, {total('entered')} called and checked "
             f"({total('specializations')} specialisations inferred), {total('checks')} "
             f"values checked, {len(violations)} violations "
             f"({sum(v['count'] for _, v in violations)} values), {total('stale')} stale "
             f"values (a definition changed since inference), {total('errors')} oracle "
             "errors"]
    lines += [f"  VIOLATION [{test}] {v['function']}:{v['line']}: {v['value']} not in "
              f"{v['abstract']} (x{v['count']})" for test, v in violations]
    for c in group:
        lines += [f"  oracle error [{c.test}] {e}"
                  for e in c.other.oracle.get("error_examples", [])[:5]]
    return "\n".join(lines)


def _explain_text(group: Sequence[Comparison]) -> str:
    """What ``splice.explain`` said, summed over the modules: callees that ran transformed
    and natively (distinct per module), per group, and the reasons for native ones."""
    entered: Counter[str] = Counter()
    native: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for c in group:
        entered.update(c.other.explain.get("entered", {}))
        native.update(c.other.explain.get("native", {}))
        reasons.update(c.other.explain.get("reasons", {}))
    groups = ("under test", "tests", "other")
    lines = [f"splice.explain (distinct callees per module, summed): "
             f"{sum(entered.values())} ran transformed, {sum(native.values())} natively",
             "  " + "; ".join(f"{g}: {entered[g]} transformed, {native[g]} native"
                              for g in groups)]
    lines += [f"  native: {n:6} {reason}" for reason, n in reasons.most_common(25)]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m splice.tools.cpython_tests",
        description="Run CPython test modules natively and with their module rebuilt "
                    "through splice's round trip (or every test under an identity plugin); "
                    "compare every test's outcome.")
    parser.add_argument("tests", nargs="*",
                        help=f"test modules (default: the {len(DEFAULT)} of DEFAULT)")
    parser.add_argument("--all", action="store_true",
                        help=f"DEFAULT and the {len(EXTRA)} slower modules of EXTRA")
    parser.add_argument("--mode", default="rebuilt",
                        help="what to compare with the native run, comma-separated: "
                             f"{', '.join(MODES[1:])} (default: rebuilt)")
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--literal", action="store_true", help="round trip with renest=False")
    parser.add_argument("--use", default="", help="test resources to enable (comma-separated)")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    parser.add_argument("--roundtrip", help=argparse.SUPPRESS)
    parser.add_argument("--plugin", help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=3, metavar=("MODE", "TEST", "OUT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    resources = [r for r in args.use.split(",") if r]
    if args.child:
        mode, test, out = args.child
        return _child(test, mode, out, not args.literal, resources, args.roundtrip,
                      args.plugin)
    tests = args.tests or (DEFAULT + EXTRA if args.all else DEFAULT)
    modes = [m for m in args.mode.split(",") if m]
    if not modes or any(m not in MODES[1:] for m in modes):
        parser.error(f"--mode takes {', '.join(MODES[1:])} (comma-separated)")
    tty = sys.stdout.isatty()
    done = [0]

    def progress(run: Run) -> None:
        done[0] += 1
        if tty:
            print(f"\r[{done[0]}/{(1 + len(modes)) * len(tests)}] {run.test} {run.mode} "
                  f"{run.status}{' ' * 20}", end="", flush=True)

    start = time.perf_counter()
    comparisons = run_many(tests, jobs=args.jobs, renest=not args.literal, modes=modes,
                           timeout=args.timeout, resources=resources, on_done=progress)
    if tty:
        print("\r" + " " * 70 + "\r", end="")
    print(format_table(comparisons))
    print(f"modes: {', '.join(modes)}"
          + (f" ({'literal, renest=False' if args.literal else 'renest'})"
             if "rebuilt" in modes else "")
          + f"; {args.jobs} jobs; wall time {time.perf_counter() - start:.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{"test": c.test, "mode": c.mode, "identical": c.identical,
                        "verdict": verdict(c), "explained": expected_differences(c),
                        "differences": c.differences(1000),
                        "native": {"status": c.native.status, "counts": c.native.counts(),
                                   "subtests": c.native.subtest_counts(),
                                   "seconds": c.native.seconds},
                        c.mode: {"status": c.other.status, "counts": c.other.counts(),
                                 "subtests": c.other.subtest_counts(),
                                 "seconds": c.other.seconds,
                                 "rebuilds": c.other.rebuilds, "explain": c.other.explain,
                                 "oracle": c.other.oracle}}
                       for c in comparisons], f, indent=1)
    violations = sum(len(c.other.oracle.get("violations", [])) for c in comparisons)
    return 0 if all(verdict(c) != "NO" for c in comparisons) and not violations else 1


if __name__ == "__main__":
    sys.exit(main())

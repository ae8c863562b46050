"""The standard library corpus: every function of the pure-Python standard library, through
lower -> verify -> print -> generate -> round trip, with a report.

Usage::

    python -m splice.tools.corpus                      # the whole standard library
    python -m splice.tools.corpus --sample 20 --seed 1 # 20 modules picked at random
    python -m splice.tools.corpus --modules textwrap,json.decoder --timings
    python -m splice.tools.corpus --literal --json corpus.json

What is covered
---------------
Modules: every name of ``sys.stdlib_module_names`` (which already leaves out the ``test``
package) and, for packages, their submodules
(found with ``pkgutil.iter_modules`` on the package directory, without importing anything
first). Skipped, and listed in the report with the reason: GUI packages (``tkinter``,
``turtle``, ``idlelib``, ``turtledemo``), test packages and modules (``test``, ``*.test``,
``*.tests``, ``idlelib.idle_test``, the frozen test modules ``__hello__``/``__phello__``),
modules that act on import (``antigravity``, ``this``, every ``__main__``), modules that are
not pure Python (built-in or C extension), modules not present on this platform, and modules
that fail to import here.

Functions: the module's dict is walked — functions, classes (recursively, nested classes
included), ``staticmethod``/``classmethod``/``property`` (``fget``/``fset``/``fdel``)/
``functools.cached_property``/``partialmethod``/``singledispatchmethod``, bound methods,
``functools.partial``, ``__wrapped__`` chains (``functools.wraps``, ``lru_cache``,
``contextmanager``), ``singledispatch`` registries, and the functions held in lists, tuples
and dicts of the module or class dicts (dispatch tables). A function counts as the module's
when ``fn.__module__ == module.__name__`` *and* its code's ``co_filename`` is the module's
file; functions with the module's name but another file (made by ``exec``, such as
``dataclasses``' generated methods, or wrappers copied by ``functools.wraps`` from another
module) are counted separately and not round-tripped here (they have no source here). Each code
object is round-tripped once, whichever name reaches it.

Nested code objects (nested functions, lambdas, comprehensions, generator expressions,
classes defined in functions) are lowered as part of their enclosing function and counted as
covered by its round trip.

Shadowed definitions: after the walk, the module's source is compiled and every function
definition at module or class level that no live function reached (a pure-Python fallback
replaced by a C accelerator, such as ``heapq.heappush`` before ``from _heapq import *``, a
definition in a branch for another platform, a helper deleted after use) is recovered as a
function object over the module's globals (``types.FunctionType(code, module.__dict__)``, free
variables given fresh cells) and round-tripped too. They are reported as their own line;
``--live-only`` leaves them out.

Per function, in order: ``splice.ir.lower``, ``splice.ir.verify``, ``str(ir)``,
``splice.ir.generate``, ``splice.ir.roundtrip``, then a comparison of ``dis``-level facts of
the original and the round-tripped code (see :func:`compare_facts`). ``UnsupportedError`` at
any stage classifies the function as unsupported (grouped by reason); any other exception, a
timeout, or a facts mismatch is a failure (an internal error), grouped by exception type,
normalised message and the innermost splice source location.

Timings (``--timings``): per function, ``lower`` + ``generate`` and the full ``roundtrip``
(lower + generate + compile + assemble), both with the source file already parsed (splice
parses a file once and caches it; each file is parsed, timed, before its functions run); the
parse per file; and lower + generate per function with its file's parse shared out among the
file's functions.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import importlib
import importlib.machinery
import importlib.util
import io
import json
import linecache
import os
import pkgutil
import random
import re
import statistics
import sys
import sysconfig
import time
import traceback
import types
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import splice
import splice.ir
from splice.errors import UnsupportedError
from splice.tools.common import module_filenames, time_limit

STDLIB_DIR = os.path.realpath(sysconfig.get_paths()["stdlib"])
SPLICE_DIR = os.path.dirname(os.path.realpath(splice.__file__))

GUI = {"tkinter", "turtle", "idlelib", "turtledemo"}
SIDE_EFFECTS = {"antigravity": "opens a web browser on import",
                "this": "prints the Zen of Python on import"}
TEST_MODULES = {"test", "__hello__", "__phello__", "__hello_alias__", "__phello_alias__",
                "__hello_only__", "_testcapi", "_testinternalcapi", "_testbuffer",
                "_testimportmultiple", "_testmultiphase", "_xxtestfuzz", "xxsubtype",
                "xxlimited", "xxlimited_35", "_ctypes_test", "_testclinic"}
TEST_PARTS = {"test", "tests", "idle_test"}

# code flags whose equality the facts check requires
CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08
CO_GENERATOR = 0x20
CO_COROUTINE = 0x80
CO_ITERABLE_COROUTINE = 0x100
CO_ASYNC_GENERATOR = 0x200
FUTURE_FLAGS = 0
for _feature in __import__("__future__").all_feature_names:
    FUTURE_FLAGS |= getattr(__import__("__future__"), _feature).compiler_flag
CO_NESTED = 0x10  # nested_scopes' flag: set on any code compiled inside a function, no effect
FLAGS_MASK = (CO_VARARGS | CO_VARKEYWORDS | CO_GENERATOR | CO_COROUTINE
              | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR | FUTURE_FLAGS) & ~CO_NESTED
CO_OPTIMIZED = 0x01
COMPREHENSIONS = {"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"}

TIMEOUT_SECONDS = 30.0


# --------------------------------------------------------------------------- modules


@dataclass(frozen=True)
class Skip:
    """A module left out of the corpus, and why."""

    module: str
    category: str
    detail: str = ""


def skip_reason(name: str) -> tuple[str, str] | None:
    """Why ``name`` is left out by rule (before looking at the module), or None."""
    parts = name.split(".")
    if parts[0] in GUI:
        return "GUI package", ""
    if name in TEST_MODULES or parts[0] in TEST_MODULES or any(p in TEST_PARTS for p in parts):
        return "test package or module", ""
    if name in SIDE_EFFECTS:
        return "acts on import", SIDE_EFFECTS[name]
    if parts[-1] == "__main__":
        return "acts on import", "a __main__ module runs its program when imported"
    return None


def _is_python_spec(spec: importlib.machinery.ModuleSpec) -> bool:
    origin = spec.origin or ""
    if origin.endswith(".py"):
        return True
    if origin == "frozen":  # frozen stdlib modules keep their source beside the frozen code
        base = os.path.join(STDLIB_DIR, *spec.name.split("."))
        return os.path.exists(base + ".py") or os.path.exists(os.path.join(base, "__init__.py"))
    return False


def enumerate_modules() -> tuple[list[str], list[Skip]]:
    """Every pure-Python standard library module name that the corpus covers, and the ones it
    leaves out with their reason (import failures are found later, by :func:`import_module`)."""
    names: list[str] = []
    skipped: list[Skip] = []

    def visit_package(name: str, paths: Sequence[str]) -> None:
        for info in sorted(pkgutil.iter_modules(list(paths), prefix=name + "."),
                           key=lambda i: i.name):
            sub = info.name
            rule = skip_reason(sub)
            if rule is not None:
                skipped.append(Skip(sub, *rule))
                continue
            finder = info.module_finder
            spec = None
            with contextlib.suppress(Exception):
                spec = finder.find_spec(sub)  # type: ignore[call-arg]
            if spec is None or not _is_python_spec(spec):
                skipped.append(Skip(sub, "not pure Python", "built-in or C extension"))
                continue
            names.append(sub)
            if spec.submodule_search_locations:
                visit_package(sub, spec.submodule_search_locations)

    for top in sorted(sys.stdlib_module_names):
        rule = skip_reason(top)
        if rule is not None:
            skipped.append(Skip(top, *rule))
            continue
        try:
            spec = importlib.util.find_spec(top)
        except Exception as exc:  # noqa: BLE001 - reported
            skipped.append(Skip(top, "does not import here", f"{type(exc).__name__}: {exc}"))
            continue
        if spec is None:
            skipped.append(Skip(top, "not on this platform", ""))
            continue
        if not _is_python_spec(spec):
            skipped.append(Skip(top, "not pure Python", "built-in or C extension"))
            continue
        names.append(top)
        if spec.submodule_search_locations:
            visit_package(top, spec.submodule_search_locations)
    return names, skipped


def import_module(name: str) -> types.ModuleType:
    """Import ``name`` quietly (warnings and output of the import are swallowed)."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return importlib.import_module(name)


# --------------------------------------------------------------------------- functions


@dataclass
class Target:
    """A function to round-trip."""

    function: types.FunctionType
    #: "live" (reached from the module) or "shadowed" (recovered from the compiled source)
    origin: str
    #: nested code objects lowered as part of it
    nested: int




def nested_codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """Every code object nested in ``code``, depth first."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield const
            yield from nested_codes(const)


def _safe_dict(value: object) -> dict[str, Any] | None:
    try:
        d = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001 - objects without a plain __dict__
        return None
    return d if isinstance(d, dict) else None


def iter_reachable(module: types.ModuleType) -> Iterator[types.FunctionType]:
    """Every Python function reachable from ``module``'s dict through the objects listed in
    the module docstring (whatever module they belong to; callers filter)."""
    seen: set[int] = set()
    stack: list[tuple[object, int]] = [(v, 0) for v in list(vars(module).values())]
    while stack:
        value, depth = stack.pop()
        if id(value) in seen or depth > 12:
            continue
        seen.add(id(value))
        children: list[object] = []
        if isinstance(value, types.FunctionType):
            yield value
            d = _safe_dict(value)
            if d:
                children += [v for k, v in d.items() if k in ("__wrapped__", "registry",
                                                              "__func__", "func")]
            registry = d.get("registry") if d else None
            if registry is not None:
                with contextlib.suppress(Exception):
                    children += list(registry.values())
        elif isinstance(value, type):
            with contextlib.suppress(Exception):
                children += list(vars(value).values())
        elif isinstance(value, (staticmethod, classmethod)):
            children.append(value.__func__)
        elif isinstance(value, property):
            children += [value.fget, value.fset, value.fdel]
        elif isinstance(value, types.MethodType):
            children.append(value.__func__)
        elif isinstance(value, (functools.partial, functools.partialmethod,
                                functools.cached_property, functools.singledispatchmethod)):
            children.append(getattr(value, "func", None))
        elif isinstance(value, (list, tuple, set, frozenset)) and depth < 2:
            with contextlib.suppress(Exception):
                children += [v for v in value if _interesting(v)]
        elif isinstance(value, dict) and depth < 2:
            with contextlib.suppress(Exception):
                children += [v for v in value.values() if _interesting(v)]
        else:
            d = _safe_dict(value)
            if d is not None and "__wrapped__" in d:  # lru_cache and other C wrappers
                children.append(d["__wrapped__"])
        stack.extend((c, depth + 1) for c in children if c is not None)


def _interesting(value: object) -> bool:
    return isinstance(value, (types.FunctionType, type, staticmethod, classmethod, property,
                              types.MethodType))


def collect(module: types.ModuleType, *, shadowed: bool = True,
            claimed: set[types.CodeType] | None = None
            ) -> tuple[list[Target], Counter[str]]:
    """The functions of ``module`` to round-trip, and counts of the ones left out (plus
    ``source functions``/``source functions covered``: function code objects in the module's
    file, and how many of them the targets cover).

    ``claimed`` (shared across modules) holds the code objects already taken, so a function
    reachable from two modules is round-tripped once."""
    claimed = set() if claimed is None else claimed
    name = module.__name__
    filenames = module_filenames(module)
    left_out: Counter[str] = Counter()
    targets: list[Target] = []
    covered: set[tuple[str, int]] = set()
    for fn in iter_reachable(module):
        code = fn.__code__
        if getattr(fn, "__module__", None) != name:
            continue
        if code.co_filename not in filenames:
            kind = ("made by exec/eval, no source" if code.co_filename.startswith("<")
                    else "defined in another file (a wrapper copied with functools.wraps)")
            if code not in claimed:
                claimed.add(code)
                left_out[kind] += 1
            continue
        if code in claimed:
            continue
        claimed.add(code)
        nested = [c for c in nested_codes(code) if c.co_flags & CO_OPTIMIZED]
        covered.add((code.co_qualname, code.co_firstlineno))
        covered.update((c.co_qualname, c.co_firstlineno) for c in nested)
        targets.append(Target(fn, "live", len(nested)))
    targets += _shadowed(module, covered, left_out, shadowed)
    return targets, left_out


def source_functions(module: types.ModuleType) -> list[tuple[types.CodeType, bool]]:
    """Every function code object compiled from ``module``'s source file, with whether it is
    a root (defined at module or class level; the others are nested in a function). Module- and
    class-level comprehensions are not functions and are left out."""
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or not path.endswith(".py"):
        return []
    text = "".join(linecache.getlines(path))
    if not text:
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = compile(text, path, "exec", dont_inherit=True)
    except SyntaxError:
        return []
    found: list[tuple[types.CodeType, bool]] = []

    def visit(parent: types.CodeType, in_function: bool) -> None:
        for const in parent.co_consts:
            if not isinstance(const, types.CodeType):
                continue
            is_function = bool(const.co_flags & CO_OPTIMIZED)
            if is_function and not in_function and const.co_name in COMPREHENSIONS:
                continue  # a comprehension at module or class level: no function to lower
            if is_function:
                found.append((const, not in_function))
            visit(const, in_function or is_function)

    visit(code, False)
    return found


def _shadowed(module: types.ModuleType, covered: set[tuple[str, int]], stats: Counter[str],
              recover: bool) -> list[Target]:
    targets = []
    for code, root in source_functions(module):
        key = (code.co_qualname, code.co_firstlineno)
        stats["source functions"] += 1
        if key in covered:
            stats["source functions covered"] += 1
            continue
        if not root or not recover:
            continue
        nested = [c for c in nested_codes(code) if c.co_flags & CO_OPTIMIZED]
        covered.add(key)
        covered.update((c.co_qualname, c.co_firstlineno) for c in nested)
        stats["source functions covered"] += 1
        closure = tuple(types.CellType() for _ in code.co_freevars) or None
        fn = types.FunctionType(code, vars(module), code.co_name, None, closure)
        fn.__qualname__ = code.co_qualname
        targets.append(Target(fn, "shadowed", len(nested)))
    return targets


# --------------------------------------------------------------------------- checking


class FactsMismatch(Exception):
    """The round-tripped code differs from the original in a ``dis``-level fact."""


class Timeout(Exception):
    """A stage took longer than the per-function limit."""


def code_facts(code: types.CodeType) -> tuple[object, ...]:
    """The ``dis``-level facts of one code object that a round trip must keep."""
    nargs = code.co_argcount + code.co_kwonlyargcount
    nargs += bool(code.co_flags & CO_VARARGS) + bool(code.co_flags & CO_VARKEYWORDS)
    return (code.co_name, code.co_qualname, code.co_argcount, code.co_posonlyargcount,
            code.co_kwonlyargcount, code.co_varnames[:nargs], hex(code.co_flags & FLAGS_MASK),
            tuple(sorted(n for n in code.co_freevars if n.isidentifier())),
            tuple(sorted(n for n in code.co_cellvars if n.isidentifier())),
            code.co_filename, code.co_firstlineno)


FACT_NAMES = ("co_name", "co_qualname", "co_argcount", "co_posonlyargcount",
              "co_kwonlyargcount", "co_varnames[:nargs]", "co_flags", "co_freevars",
              "co_cellvars", "co_filename", "co_firstlineno")


def compare_facts(original: types.FunctionType, new: types.FunctionType) -> None:
    """Raise :class:`FactsMismatch` naming the first fact that differs.

    Code (the function's and, as a multiset, every nested function, lambda and
    comprehension's): ``co_argcount``, ``co_posonlyargcount``, ``co_kwonlyargcount``, the
    parameter names (``co_varnames[:nargs]``), the flags that change behaviour (varargs,
    varkeywords, generator, coroutine, iterable coroutine, async generator, ``__future__``
    features; not ``CO_NESTED``, which has no effect), the identifier names among
    ``co_freevars`` and among ``co_cellvars`` as sets (hidden cells, whose names are not
    identifiers, such as the ``@operator_iadd`` and ``@AssertionError`` helpers of literal mode,
    are allowed: they cannot clash with user names), ``co_name``,
    ``co_qualname``, ``co_filename``, ``co_firstlineno``. Function: the same globals dict, the
    same cell objects for every free variable, equal defaults/kwdefaults (element identity),
    ``__name__``, ``__qualname__``, ``__module__``, ``__doc__``."""
    a, b = original.__code__, new.__code__
    for fact, x, y in zip(FACT_NAMES, code_facts(a), code_facts(b), strict=True):
        if x != y:
            raise FactsMismatch(f"{fact}: {x!r} != {y!r}")
    for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
        x, y = getattr(original, attr), getattr(new, attr)
        if x != y:
            raise FactsMismatch(f"{attr}: {x!r} != {y!r}")
    if original.__globals__ is not new.__globals__:
        raise FactsMismatch("__globals__ is not the original's dict")
    cells_a = dict(zip(a.co_freevars, original.__closure__ or (), strict=True))
    cells_b = dict(zip(b.co_freevars, new.__closure__ or (), strict=True))
    for name, cell in cells_a.items():
        if cells_b.get(name) is not cell:
            raise FactsMismatch(f"closure cell {name!r} is not shared with the original")
    for attr in ("__defaults__", "__kwdefaults__"):
        x, y = getattr(original, attr), getattr(new, attr)
        if isinstance(x, dict) and isinstance(y, dict):
            same = x.keys() == y.keys() and all(x[k] is y[k] for k in x)
        else:
            xs, ys = tuple(x or ()), tuple(y or ())
            same = len(xs) == len(ys) and all(p is q for p, q in zip(xs, ys, strict=True))
        if (x is None) != (y is None) or not same:
            raise FactsMismatch(f"{attr}: {x!r} != {y!r}")
    nested_a = sorted(map(repr, (code_facts(c) for c in nested_codes(a)
                                 if c.co_flags & CO_OPTIMIZED)))
    nested_b = sorted(map(repr, (code_facts(c) for c in nested_codes(b)
                                 if c.co_flags & CO_OPTIMIZED)))
    if nested_a != nested_b:
        only_a = sorted(set(nested_a) - set(nested_b))[:1]
        only_b = sorted(set(nested_b) - set(nested_a))[:1]
        raise FactsMismatch(f"nested code objects: {only_a} != {only_b}")


@dataclass
class Result:
    """The outcome of one function."""

    module: str
    qualname: str
    where: str
    origin: str
    nested: int
    status: str  # "ok", "unsupported", "failed"
    stage: str = ""  # the stage that stopped it
    reason: str = ""  # unsupported reason, or the failure's message
    group: str = ""  # failure group key
    lower_generate_ms: float | None = None
    roundtrip_ms: float | None = None


def warm_parse(fn: types.FunctionType, parse_ms: dict[str, float]) -> None:
    """Parse ``fn``'s file once, untimed for the functions, timed for the file: so the
    per-function times exclude the parse, which splice does once per file."""
    filename = fn.__code__.co_filename
    if filename in parse_ms:
        return
    start = time.perf_counter()
    with contextlib.suppress(Exception):
        from splice.ir.source import find_source
        find_source(fn)
    parse_ms[filename] = (time.perf_counter() - start) * 1e3


def splice_location(tb: types.TracebackType | None) -> str:
    """The innermost traceback frame inside splice (outside splice.tools)."""
    where = "outside splice"
    for frame, lineno in traceback.walk_tb(tb):
        path = os.path.realpath(frame.f_code.co_filename)
        if path.startswith(SPLICE_DIR + os.sep) and os.sep + "tools" + os.sep not in path:
            rel = os.path.relpath(path, os.path.dirname(SPLICE_DIR))
            where = f"{rel}:{lineno} in {frame.f_code.co_name}"
    return where


def normalise(message: str) -> str:
    """A failure message with the parts that vary per function blurred, for grouping."""
    message = message.splitlines()[0] if message else ""
    message = re.sub(r"'[^']*'", "'…'", message)
    message = re.sub(r"\d+", "N", message)
    return message[:160]


def check_function(target: Target, module: str, *, renest: bool = True,
                   timeout: float = TIMEOUT_SECONDS) -> Result:
    """Run one function through every stage and classify it."""
    fn = target.function
    code = fn.__code__
    result = Result(module, fn.__qualname__, f"{code.co_filename}:{code.co_firstlineno}",
                    target.origin, target.nested, "ok")
    stage = "lower"
    try:
        with time_limit(timeout, Timeout), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            ir = splice.ir.lower(fn)
            t1 = time.perf_counter()
            stage = "verify"
            splice.ir.verify(ir)
            stage = "print"
            str(ir)
            stage = "generate"
            t2 = time.perf_counter()
            splice.ir.generate(ir, renest=renest)
            t3 = time.perf_counter()
            stage = "roundtrip"
            new = splice.ir.roundtrip(fn, renest=renest)
            t4 = time.perf_counter()
            stage = "facts"
            compare_facts(fn, new)
        result.lower_generate_ms = ((t1 - t0) + (t3 - t2)) * 1e3
        result.roundtrip_ms = (t4 - t3) * 1e3
    except UnsupportedError as exc:
        result.status = "unsupported"
        result.stage = stage
        result.reason = exc.reason
    except Exception as exc:  # noqa: BLE001 - every other exception is an internal error
        result.status = "failed"
        result.stage = stage
        result.reason = f"{type(exc).__name__}: {exc}"[:500]
        if isinstance(exc, FactsMismatch):
            fact = str(exc).split(":")[0]  # the fact's name
            result.group = f"FactsMismatch: {fact} differs"
        elif isinstance(exc, Timeout):
            result.group = f"Timeout at stage {stage}"
        else:
            result.group = (f"{type(exc).__name__}: {normalise(str(exc))} "
                            f"@ {splice_location(exc.__traceback__)}")
    return result


# --------------------------------------------------------------------------- the run


@dataclass
class Report:
    """Everything a corpus run found."""

    renest: bool
    modules: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    left_out: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    #: ms to read and parse each source file (splice caches the parse per file)
    parse_ms: dict[str, float] = field(default_factory=dict)

    def count(self, status: str, origin: str | None = None) -> int:
        return sum(1 for r in self.results
                   if r.status == status and (origin is None or r.origin == origin))

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def roundtrip_rate(self) -> float:
        return self.count("ok") / self.total if self.total else 1.0

    def failure_groups(self) -> list[tuple[str, list[Result]]]:
        groups: dict[str, list[Result]] = {}
        for r in self.results:
            if r.status == "failed":
                groups.setdefault(r.group, []).append(r)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    def unsupported_groups(self) -> list[tuple[str, list[Result]]]:
        groups: dict[str, list[Result]] = {}
        for r in self.results:
            if r.status == "unsupported":
                groups.setdefault(r.reason[:200], []).append(r)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def run_corpus(modules: Sequence[str] | None = None, *, renest: bool = True,
               shadowed: bool = True, progress: bool = False,
               timeout: float = TIMEOUT_SECONDS,
               on_module: Callable[[str, list[Result]], None] | None = None) -> Report:
    """Run the corpus over ``modules`` (default: every module :func:`enumerate_modules`
    finds) and return the report."""
    report = Report(renest=renest)
    if modules is None:
        names, report.skipped = enumerate_modules()
    else:
        names = list(modules)
    start = time.perf_counter()
    claimed: set[types.CodeType] = set()
    width = max((len(n) for n in names), default=0)
    for index, name in enumerate(names, 1):
        if progress:
            print(f"\r[{index}/{len(names)}] {name:<{width}}", end="", flush=True)
        try:
            module = import_module(name)
        except BaseException as exc:  # SystemExit from odd modules too
            if isinstance(exc, KeyboardInterrupt):
                raise
            report.skipped.append(Skip(name, "does not import here",
                                       f"{type(exc).__name__}: {exc}"[:200]))
            continue
        report.modules.append(name)
        targets, left_out = collect(module, shadowed=shadowed, claimed=claimed)
        report.left_out.update(left_out)
        for target in targets:
            warm_parse(target.function, report.parse_ms)
        results = [check_function(t, name, renest=renest, timeout=timeout) for t in targets]
        report.results += results
        if on_module is not None:
            on_module(name, results)
    if progress:
        print("\r" + " " * (width + 20) + "\r", end="", flush=True)
    report.seconds = time.perf_counter() - start
    return report


# --------------------------------------------------------------------------- output


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    values = sorted(values)

    def pct(p: float) -> float:
        return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]

    return {"n": len(values), "median": statistics.median(values), "p90": pct(90),
            "p99": pct(99), "max": values[-1], "mean": statistics.fmean(values)}


def timing_summary(report: Report) -> dict[str, dict[str, float]]:
    """Distributions (ms) of lower+generate and of the full round trip per function (the
    source file already parsed), of the parse per file, and of lower+generate per function
    with each file's parse spread over its functions."""
    ok = [r for r in report.results if r.status == "ok"]
    per_file: Counter[str] = Counter(r.where.rsplit(":", 1)[0] for r in report.results)
    amortised = [(r.lower_generate_ms or 0.0)
                 + report.parse_ms.get(r.where.rsplit(":", 1)[0], 0.0)
                 / per_file[r.where.rsplit(":", 1)[0]]
                 for r in ok if r.lower_generate_ms is not None]
    return {
        "lower+generate": _percentiles([r.lower_generate_ms for r in ok
                                        if r.lower_generate_ms is not None]),
        "roundtrip": _percentiles([r.roundtrip_ms for r in ok if r.roundtrip_ms is not None]),
        "parse per file": _percentiles(list(report.parse_ms.values())),
        "l+g+parse share": _percentiles(amortised),
    }


def format_report(report: Report, *, top: int = 10, timings: bool = False) -> str:
    """The human-readable report."""
    out: list[str] = []
    w = out.append
    mode = "renest" if report.renest else "literal (renest=False)"
    w(f"splice standard library corpus — Python {sys.version.split()[0]}, mode: {mode}")
    w(f"modules covered: {len(report.modules)}; skipped: {len(report.skipped)}; "
      f"time: {report.seconds:.1f} s")
    by_cat: dict[str, list[Skip]] = {}
    for s in report.skipped:
        by_cat.setdefault(s.category, []).append(s)
    for cat, skips in sorted(by_cat.items()):
        w(f"  skipped, {cat} ({len(skips)}): "
          + ", ".join(s.module + (f" [{s.detail}]" if s.detail and cat == "does not import "
                                  "here" else "") for s in skips))
    nested = sum(r.nested for r in report.results)
    nested_ok = sum(r.nested for r in report.results if r.status == "ok")
    w("")
    live = sum(1 for r in report.results if r.origin == "live")
    w(f"functions: {report.total} ({live} live, "
      f"{report.total - live} shadowed definitions "
      f"recovered from source), plus {nested} nested code objects lowered through them")
    w(f"  round-tripped: {report.count('ok')}  "
      f"({100 * report.roundtrip_rate:.3f}%; live {report.count('ok', 'live')}, "
      f"shadowed {report.count('ok', 'shadowed')}; nested code objects covered: {nested_ok})")
    w(f"  unsupported:   {report.count('unsupported')}")
    w(f"  failed:        {report.count('failed')}  (internal errors and facts mismatches)")
    for kind, n in sorted(report.left_out.items()):
        if not kind.startswith("source functions"):
            w(f"  not attempted: {n} functions {kind}")
    total = report.left_out["source functions"]
    if total:
        w(f"  source coverage: {report.left_out['source functions covered']} of {total} "
          "function code objects compiled from the covered modules' files "
          "(module/class-level comprehensions excluded)")
    ugroups = report.unsupported_groups()
    if ugroups:
        w("")
        w(f"unsupported, by reason ({len(ugroups)} reasons):")
        for reason, rs in ugroups[:top]:
            ex = rs[0]
            w(f"  {len(rs):6}  {reason}")
            w(f"          e.g. {ex.module}.{ex.qualname} ({ex.where})")
    fgroups = report.failure_groups()
    if fgroups:
        w("")
        w(f"failed, by group ({len(fgroups)} groups, top {min(top, len(fgroups))}):")
        for key, rs in fgroups[:top]:
            ex = rs[0]
            w(f"  {len(rs):6}  [{ex.stage}] {key}")
            w(f"          e.g. {ex.module}.{ex.qualname} ({ex.where})")
            w(f"               {ex.reason.splitlines()[0][:200]}")
    if timings:
        w("")
        w("time (ms): per round-tripped function, source file already parsed; parse per file; "
          "per function with its file's parse shared out:")
        for name, d in timing_summary(report).items():
            if d:
                w(f"  {name:16} median {d['median']:.3f}  p90 {d['p90']:.3f}  "
                  f"p99 {d['p99']:.3f}  max {d['max']:.1f}  mean {d['mean']:.3f}  "
                  f"(n={int(d['n'])})")
        w("  slowest (lower+generate, roundtrip ms):")
        for r in slowest(report, 5):
            w(f"    {r.lower_generate_ms:8.1f} {r.roundtrip_ms or 0:8.1f}  "
              f"{r.module}.{r.qualname} ({r.where})")
    return "\n".join(out)


def slowest(report: Report, n: int) -> list[Result]:
    """The ``n`` round-tripped functions with the longest lower+generate time."""
    timed = [r for r in report.results if r.lower_generate_ms is not None]
    return sorted(timed, key=lambda r: -(r.lower_generate_ms or 0.0))[:n]


def report_json(report: Report) -> dict[str, Any]:
    """The report as JSON-ready data (every function that is not ok is listed)."""
    return {
        "python": sys.version,
        "mode": "renest" if report.renest else "literal",
        "seconds": report.seconds,
        "modules": report.modules,
        "skipped": [dataclasses.asdict(s) for s in report.skipped],
        "counts": {
            "functions": report.total,
            "live": sum(1 for r in report.results if r.origin == "live"),
            "shadowed": sum(1 for r in report.results if r.origin == "shadowed"),
            "nested_code_objects": sum(r.nested for r in report.results),
            "ok": report.count("ok"),
            "unsupported": report.count("unsupported"),
            "failed": report.count("failed"),
            "roundtrip_rate": report.roundtrip_rate,
            "not_attempted": dict(report.left_out),
        },
        "unsupported": {k: len(v) for k, v in report.unsupported_groups()},
        "failure_groups": [{"group": k, "count": len(v),
                            "examples": [dataclasses.asdict(r) for r in v[:5]]}
                           for k, v in report.failure_groups()],
        "not_ok": [dataclasses.asdict(r) for r in report.results if r.status != "ok"],
        "timings_ms": timing_summary(report),
        "slowest": [dataclasses.asdict(r) for r in slowest(report, 30)],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m splice.tools.corpus",
        description="Round-trip every function of the pure-Python standard library.")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="only N modules, picked at random (see --seed)")
    parser.add_argument("--seed", type=int, default=0, help="seed for --sample (default 0)")
    parser.add_argument("--modules", metavar="a,b", help="only these modules (comma-separated)")
    parser.add_argument("--json", metavar="OUT", help="also write the report as JSON")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--renest", dest="renest", action="store_true", default=True,
                      help="re-nest single-use temporaries (default)")
    mode.add_argument("--literal", dest="renest", action="store_false",
                      help="keep every temporary as a hidden local (renest=False)")
    parser.add_argument("--timings", action="store_true",
                        help="report lower+generate and round-trip time per function")
    parser.add_argument("--live-only", action="store_true",
                        help="leave out shadowed definitions recovered from the source")
    parser.add_argument("--top", type=int, default=10, help="failure groups shown (default 10)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_SECONDS,
                        help="seconds per function before it counts as failed")
    args = parser.parse_args(argv)

    skipped: list[Skip] = []
    if args.modules:
        names: list[str] = [m.strip() for m in args.modules.split(",") if m.strip()]
    else:
        names, skipped = enumerate_modules()
    if args.sample is not None and args.sample < len(names):
        names = sorted(random.Random(args.seed).sample(names, args.sample))
    report = run_corpus(names, renest=args.renest, shadowed=not args.live_only,
                        progress=sys.stdout.isatty(), timeout=args.timeout)
    report.skipped = skipped + report.skipped
    print(format_report(report, top=args.top, timings=args.timings))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report_json(report), f, indent=1, default=str)
    return 1 if report.count("failed") else 0


if __name__ == "__main__":
    sys.exit(main())

"""``Tracer``: record the call tree of a run, write it as Chrome trace-event JSON or print it.

::

    from splice.plugins import Tracer

    tracer = Tracer(exclude=["threading"])
    tracer.run(main, 100)
    tracer.print_tree()                          # a text tree with wall times
    tracer.write_chrome_trace("trace.json")      # open in https://ui.perfetto.dev

How it records
--------------
The Tracer is a compiler pass, not a callback: its ``lowered`` hook rewrites each Python
function entered under it so that the function records its own call::

    def f(x):                                    # becomes, in the code splice compiles
        @recorder.enter(@info_f)                 # appends info_f, perf_counter_ns()
        try:
            ...                                  # the body, unchanged
        except BaseException:
            @record_exception(@local)            # only when something raises
            raise
        finally:
            @recorder.leave()                    # appends -perf_counter_ns()

``@local`` is a ``threading.local`` holding one list of events per thread, so each thread
has its own stack and the events of one call are always appended by the thread that runs it.
``@recorder`` (``splice/plugins/_recorder.c``) appends to the running thread's list, which
it keeps per thread. Without the C extension the same events are appended by
``@iadd(@local.events, (@info_f, @perf_counter_ns()))`` and
``@iadd(@local.events, (-@perf_counter_ns(),))``, at about three times the cost per call.
A call costs two calls of C methods inside the function's own frame: no extra Python frame
per call, as a ``sys.setprofile`` callback or per-call hooks
(``prehook``/``posthook``) would cost. Because the ``try``/``finally`` is in the function
itself, a call that raises is closed exactly when the exception leaves it, and the exception
is recorded (its type, and its message when reading it runs none of your code). The call
tree is built from the events only when it is asked for (:meth:`Tracer.threads`,
:meth:`Tracer.format_tree`, ...).

Why a pass and not hooks: on ``benchmarks/programs`` (same run, call trees of the same
Python calls), a ``prehook``/``posthook`` tracer costs about as much as a ``sys.setprofile``
one (0.6 to 9 times its overhead; and a posthook never runs for a call that raises), an
``overdub`` one with ``try``/``finally`` 1.5 to 16 times, this pass 0.2 to 0.45 times.

splice's compile time
---------------------
A function's first call under the Tracer costs splice's compile (lowering, the Tracer's
pass, codegen) inside its caller's span. The Tracer's ``compiled`` hook records each
compile as a span of the call it happened in (``Call.compiles``; ``[splice compile]``
events, category ``splice``, in the Chrome trace), and ``Call.time``, ``Call.self_time``
and the text tree leave it out: the times shown are the program's.

What is recorded
----------------
* Every call of a Python function that runs under the Tracer: functions, methods, class
  instantiation (as the ``__init__``/``__new__`` calls it makes), callbacks reached through
  overlays (``sorted(key=f)``, ``map(f, ...)``), nested functions and closures.
* Generators: one span per resume (from ``next()``/``send()`` to the next ``yield``), like the
  'call'/'return' events of ``sys.setprofile``. A generator whose ``yield`` sits inside an
  ``and``/``or``, a conditional expression or a ``while`` test is not recorded (its callees
  are).
* ``yield from``: each resume of a subgenerator is recorded inside a span of each generator
  delegating to it, outermost first, as ``cProfile`` records it (there, each ``next()``
  resumes the delegating frame, which resumes the subgenerator): the delegating
  generator's time is the time its subgenerators run for it, and the call graph's edges are
  ``cProfile``'s (tested through ``next``, ``send``, ``throw``, ``close`` and recursive
  delegation). How the recorder finds the delegating generators is in
  ``splice/plugins/_recorder.c``. Two differences remain: the resume that reaches a
  ``yield from`` and the one that continues after it are each two spans of the delegating
  generator where ``cProfile`` counts one (so its ``ncalls`` is higher by about two per
  ``yield from`` run), and a delegation to an iterator the Tracer does not record (a list,
  a generator expression, a builtin) has no span of the delegating generator, whose time
  there is its caller's.
* Lambdas, as functions named ``<lambda>`` (cProfile names them so too). The recording
  needs statements, so a traced lambda's code is generated as a ``def`` whose code object
  is named ``<lambda>`` (``splice.ir.codegen.scope_ast``): its name, qualified name,
  frames and tracebacks are the lambda's.
* Not recorded: builtins and other C functions, coroutines and async generators (they can
  suspend at points without a visible ``await``: ``async for``, ``async with``),
  comprehension scopes (they are part of their function), functions that run natively
  (``recurse`` said no, no source, code called from C outside the overlays), and module
  top-level code. The callees of all of these that run
  under the Tracer are recorded.
* Dunder methods Python calls implicitly on your objects (operators, subscripts,
  attribute access through properties and descriptors, iteration, ``with``, formatting)
  are reached only with ``implicit_calls=True``: then the operations whose operands are not
  of builtin types enter those dunders under the Tracer, which records them and what they
  call. It costs a type test on every operator and attribute access, so it is off by
  default (in ``benchmarks/programs``, about half of the Tracer's overhead again, and much
  more in float-heavy code). Without it, such dunders run natively, with everything they
  call, and are not recorded. Implicit calls splice does not reach at all
  (``docs/runtime.md``, "Out of reach") are never recorded.
* ``include``/``exclude`` filter by the function's module (``__module__``): a pattern
  ``pkg`` matches ``pkg`` and its submodules, and shell-style wildcards work (``pkg.*_test``).
  Functions of other modules still run under the Tracer (so their callees in included
  modules are recorded) but record nothing.
* Threads: each thread has its own call stack. A ``threading.Thread`` started under the
  Tracer (``thread.start()``) runs its ``run`` method, and so its target, under the Tracer
  too (``follow_threads``): until the new thread calls it, ``run`` is shadowed by an
  attribute of the thread object. When the Tracer is composed with other plugins, such a
  thread runs under the Tracer alone. Threads started with ``_thread.start_new_thread``
  are not followed.
* ``args=True`` / ``returns=True`` record a short ``reprlib`` summary of each call's
  arguments / return value, taken when the call starts / returns (not for generators).
  They call ``repr()`` on your objects (natively; a ``repr`` that fails is shown as such),
  which is a side effect your program can see, and cost much more.
* Times are wall times (``perf_counter_ns``). splice's compiles are left out of the times
  reported (see above). So is the Tracer's own cost per recorded call, in the summaries
  (:meth:`Tracer.stats`, :meth:`Tracer.format_stats`, :meth:`Tracer.collapsed_stacks`, the
  aggregated tree): it is measured once per Tracer and subtracted, as ``profile`` does once
  calibrated (``splice/plugins/tracer_bias.py``; :attr:`Tracer.bias`). The records
  themselves (:class:`Call`, the Chrome trace) keep the measured times. Memory: about 90
  bytes per recorded call until :meth:`Tracer.reset`.
"""

from __future__ import annotations

import fnmatch
import functools
import gc
import json
import marshal
import os
import reprlib
import sys
import threading
import types
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter_ns
from typing import IO, TYPE_CHECKING, Any, TypeVar

import splice
from splice.compat import DELEGATION_OPCODES, frame_delegates
from splice.plugins.tracer_bias import NO_BIAS, Bias, measure_bias
from splice.pristine import BUILTINS

if TYPE_CHECKING:
    from splice.ir.nodes import FunctionIR

_Recorder: Any
try:
    from splice.plugins._recorder import Recorder as _Recorder
except ImportError:  # built without a compiler: the Python form of the recording
    _Recorder = None

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Call", "FunctionInfo", "FunctionStats", "ThreadTrace", "Tracer"]

_CO_GENERATOR = 0x20
_CO_COROUTINE = 0x80
_CO_ITERABLE_COROUTINE = 0x100
_CO_ASYNC_GENERATOR = 0x200


# ------------------------------------------------------------------------------ records


class FunctionInfo:
    """A traced function: its code object, names and where it is defined. One per code
    object (closures made by one ``def`` share it)."""

    __slots__ = ("code", "name", "qualname", "module", "filename", "lineno", "generator",
                 "__weakref__")

    def __init__(self, code: types.CodeType, qualname: str, module: str) -> None:
        self.code = code
        self.name = code.co_name
        self.qualname = qualname
        self.module = module
        self.filename = code.co_filename
        self.lineno = code.co_firstlineno
        #: a generator function: each resume is recorded as a call of its own
        self.generator = bool(code.co_flags & _CO_GENERATOR)

    def __splice_persist__(self) -> tuple[Any, ...]:
        """How the code cache makes this info again in another process (its arguments)."""
        return (self.code, self.qualname, self.module)

    @property
    def location(self) -> str:
        """``file:line``, the file relative to the working directory when it is below it."""
        return f"{_short_path(self.filename)}:{self.lineno}"

    def __repr__(self) -> str:
        return f"<FunctionInfo {self.module}.{self.qualname} at {self.location}>"


def _splice_compile() -> None:
    """Stands for the time splice spent compiling (a span of its own in a trace)."""


#: the function of the spans of splice's compile work (``Tracer.compiled``)
COMPILE = FunctionInfo(_splice_compile.__code__, "[splice compile]", "splice")
COMPILE.filename, COMPILE.lineno = "<splice>", 0


class Call:
    """One recorded call: what was called, when (``perf_counter_ns`` times), what it called.

    ``end`` is None for a call still running when the tree was built. ``exception`` is
    ``"Type: message"`` if the call raised; ``args``/``result`` are summaries (strings) when
    the Tracer records them. ``compiles`` are the ``(start, end)`` intervals splice spent
    compiling inside this call (for the first calls of its callees): they are not the
    program's time, so :attr:`time` and :attr:`self_time` leave them out.
    """

    __slots__ = ("info", "start", "end", "children", "exception", "args", "result",
                 "compiles")

    def __init__(self, info: FunctionInfo, start: int) -> None:
        self.info = info
        self.start = start
        self.end: int | None = None
        self.children: list[Call] = []
        self.exception: str | None = None
        self.args: str | None = None
        self.result: str | None = None
        self.compiles: list[tuple[int, int]] = []

    @property
    def name(self) -> str:
        """The function's qualified name."""
        return self.info.qualname

    @property
    def code(self) -> types.CodeType:
        return self.info.code

    @property
    def duration(self) -> int | None:
        """Wall time in nanoseconds (None while running), splice's compiles included."""
        return None if self.end is None else self.end - self.start

    @property
    def compile_time(self) -> int:
        """Nanoseconds splice spent compiling inside this call, outside its recorded
        callees."""
        return sum(end - start for start, end in self.compiles)

    @property
    def time(self) -> int | None:
        """The program's time in this call and below (nanoseconds; None while running):
        its wall time without splice's compiles anywhere under it."""
        if self.end is None:
            return None
        return self.end - self.start - sum(c.compile_time for c in self.walk())

    @property
    def self_time(self) -> int | None:
        """The program's time not spent in recorded callees, in nanoseconds (splice's
        compiles left out)."""
        if self.end is None:
            return None
        inner = sum((c.end if c.end is not None else self.end) - c.start
                    for c in self.children)
        return self.end - self.start - inner - self.compile_time

    def walk(self) -> Iterator[Call]:
        """This call and every call below it, depth first, in order."""
        stack = [self]
        while stack:
            call = stack.pop()
            yield call
            stack.extend(reversed(call.children))

    def __repr__(self) -> str:
        took = "running" if self.end is None else f"{(self.end - self.start) / 1e6:.3f} ms"
        raised = f", raised {self.exception}" if self.exception else ""
        return f"<Call {self.name} ({took}{raised}), {len(self.children)} callees>"


@dataclass
class FunctionStats:
    """One function's line of :meth:`Tracer.stats` (seconds)."""

    info: FunctionInfo
    ncalls: int = 0
    tottime: float = 0.0
    cumtime: float = 0.0


@dataclass
class ThreadTrace:
    """The calls one thread made under the Tracer (top-level calls in ``calls``)."""

    ident: int
    native_id: int
    name: str
    calls: list[Call] = field(default_factory=list)
    #: splice's compiles outside any recorded call: ``(start, end)`` intervals
    compiles: list[tuple[int, int]] = field(default_factory=list)
    #: the process the thread ran in (another one than this: a worker's, reported back)
    pid: int = field(default_factory=os.getpid)

    @property
    def label(self) -> str:
        """The thread's name, with its process when that is not this one."""
        if self.pid == os.getpid():
            return self.name
        return f"{self.name} (pid {self.pid})"

    def walk(self) -> Iterator[Call]:
        for call in self.calls:
            yield from call.walk()


# ------------------------------------------------------------------------ per-thread log

#: markers in a thread's event list; each is followed by one value (a summary string)
_EXC = object()
_ARGS = object()
_RET = object()
#: followed by a count k: the next k calls are spans of generators delegating to the call
#: after them (``yield from``), which end where it ends (``_read_events``)
_WRAP = object()
#: the markers by name, as a worker's report gives them
_MARKERS: dict[str, object] = {"exception": _EXC, "args": _ARGS, "return": _RET,
                               "wrap": _WRAP}
_MARKER_NAMES: dict[object, str] = {marker: name for name, marker in _MARKERS.items()}


class _ThreadLog:
    """One thread's event list and who the thread is (``pid``: the process it ran in)."""

    __slots__ = ("events", "ident", "native_id", "name", "pid")

    def __init__(self, events: list[Any]) -> None:
        self.events = events
        self.ident = threading.get_ident()
        self.native_id = threading.get_native_id()
        self.name: str | None = _thread_name(self.ident)
        self.pid = os.getpid()

    @classmethod
    def of_worker(cls, events: list[Any], ident: int, native_id: int, name: str,
                  pid: int) -> _ThreadLog:
        """The log of a thread of a worker process, as its report gave it."""
        log = cls.__new__(cls)
        log.events, log.ident, log.native_id, log.name, log.pid = \
            events, ident, native_id, name, pid
        return log

    def label(self) -> str:
        if self.name is None:
            self.name = _thread_name(self.ident)
        return self.name or f"thread {self.native_id}"


def _thread_name(ident: int) -> str | None:
    for thread in threading.enumerate():
        if thread.ident == ident:
            return thread.name
    return None


class _Local(threading.local):
    """Per-thread state of one Tracer: ``events``, the list the instrumented code extends.

    The event list holds, in order: ``info, start`` when a call starts (``info`` a
    :class:`FunctionInfo`, ``start`` a ``perf_counter_ns`` time), ``-end`` when it ends
    (a negative int), and ``marker, summary`` pairs in between (``_ARGS``, ``_RET``,
    ``_EXC``). Extending a list with a tuple is atomic, so a copy never splits a pair.
    """

    events: list[Any]

    def __init__(self, logs: list[_ThreadLog]) -> None:
        self.events = []
        logs.append(_ThreadLog(self.events))


# ----------------------------------------------------------------------- summaries (slow)

_repr = reprlib.Repr()
_repr.maxlevel = 2
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlong = 40
for _name in ("maxtuple", "maxlist", "maxarray", "maxdict", "maxset", "maxfrozenset",
              "maxdeque"):
    setattr(_repr, _name, 5)


def summarize(value: Any) -> str:
    """A short ``repr`` of ``value`` (``reprlib``-bounded; never raises)."""
    try:
        return _repr.repr(value)
    except Exception as exc:  # a user __repr__ that fails
        return f"<{type(value).__name__} object; repr failed: {type(exc).__name__}>"


_PLAIN_ARGS = (str, int, float, bool, bytes, type(None))


_BASE_STR = BaseException.__str__
#: an exception as :func:`_record_exception` records it when its message is ``str()`` of
#: its arguments, builtin values all: (module, qualified name, arguments), made into text
#: when the call tree is built (:func:`_exception_text`)
ExceptionRecord = tuple[str, str, tuple[Any, ...]]


def _describe_exception(exc: BaseException | None) -> str:
    """``Type: message``. The message is taken only where that runs none of the program's
    code (``str()`` of a builtin exception type over builtin values): recording an exception
    must not be a side effect the program could see."""
    if exc is None:
        return "?"
    kind = type(exc)
    name = _type_name(kind.__module__, kind.__qualname__)
    if isinstance(getattr(kind, "__str__", None), types.FunctionType) or \
            not all(type(arg) in _PLAIN_ARGS for arg in exc.args):
        return name
    try:
        message = str(exc)
    except Exception:
        return name
    return _with_message(name, message)


def _type_name(module: str, qualname: str) -> str:
    return qualname if module == "builtins" else f"{module}.{qualname}"


def _with_message(name: str, message: str) -> str:
    if len(message) > 120:
        message = message[:117] + "..."
    return f"{name}: {message}" if message else name


def _exception_text(recorded: str | ExceptionRecord | None) -> str | None:
    """What :func:`_record_exception` recorded, as ``Type: message``."""
    if recorded is None or isinstance(recorded, str):
        return recorded
    module, qualname, args = recorded
    # what BaseException.__str__ makes of its arguments
    message = "" if not args else str(args[0]) if len(args) == 1 else str(args)
    return _with_message(_type_name(module, qualname), message)


def _record_exception(local: _Local) -> None:
    """Called by instrumented code in ``except BaseException:`` (before it re-raises).
    Programs that use exceptions as control flow raise many: the common kind (a message
    made by ``BaseException.__str__`` from builtin values) is recorded as its class's
    names and its arguments, formatted only if the tree is built."""
    exc = sys.exc_info()[1]
    kind = type(exc)
    if exc is not None and kind.__str__ is _BASE_STR:
        args = exc.args
        for arg in args:
            if type(arg) not in _PLAIN_ARGS:
                args = ()
                break
        local.events += (_EXC, (kind.__module__, kind.__qualname__, args))
    else:
        local.events += (_EXC, _describe_exception(exc))


def _record_args(local: _Local, names: tuple[str, ...], *values: Any) -> None:
    """Called by instrumented code when a call starts (``Tracer(args=True)``)."""
    parts = []
    for name, value in zip(names, values, strict=True):
        parts.append(f"{name}={summarize(value)}")
    local.events += (_ARGS, ", ".join(parts))


def _record_return(local: _Local, value: Any) -> None:
    """Called by instrumented code before each ``return`` (``Tracer(returns=True)``)."""
    local.events += (_RET, summarize(value))


_Delegators = dict[int, tuple[types.CodeType, "FunctionInfo"]]


_MAX_DELEGATION = 64  # as the C recorder's


def _delegations(delegators: _Delegators, frame: types.FrameType) -> list[FunctionInfo]:
    """The delegating generators a resume of the generator running ``frame`` goes through,
    innermost first (the Python form of ``delegations`` in splice/plugins/_recorder.c)."""
    found: list[FunctionInfo] = []
    back = frame.f_back
    while back is not None and len(found) < _MAX_DELEGATION:
        entry = delegators.get(id(back.f_code))
        if entry is None or not frame_delegates(back):
            break
        found.append(entry[1])
        back = back.f_back
    return found


def _resume(local: _Local, delegators: _Delegators,
            info: FunctionInfo) -> None:
    """A generator resumes (the Python form of ``Recorder.resume``; where it ends is
    ``Recorder.leave``'s Python form, ``-perf_counter_ns()`` appended)."""
    outer = _delegations(delegators, sys._getframe(1)) if delegators else ()
    now = perf_counter_ns()
    if not outer:
        local.events += (info, now)
        return
    starts: list[Any] = [_WRAP, len(outer)]
    for delegating in reversed(outer):
        starts += (delegating, now)
    local.events += (*starts, info, now)


def _delegate(local: _Local, delegators: _Delegators, info: FunctionInfo) -> None:
    """Before a ``yield from`` (the Python form of ``Recorder.delegate``)."""
    end = -perf_counter_ns()
    code = sys._getframe(1).f_code
    if id(code) not in delegators:
        delegators[id(code)] = (code, info)
    local.events += (end,)


#: the Python forms of the C recorder's generator calls, by name (``tracer_ir``); a
#: ``yield from`` that ended resumes as any resume does (no count to keep: the Python
#: form walks whenever some generator has delegated)
_GENERATOR_FORMS: dict[str, Callable[..., None]] = {
    "resume": _resume, "delegated": _resume, "delegate": _delegate}


# ---------------------------------------------------------------------------- the pass


def _module_matches(module: str, pattern: str) -> bool:
    return (module == pattern or module.startswith(pattern + ".")
            or fnmatch.fnmatchcase(module, pattern))


def _short_path(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        return filename
    return filename if relative.startswith("..") else relative


# ------------------------------------------------------------------------------ Tracer


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _without_collections(method: _Method) -> _Method:
    """``method`` with the cyclic garbage collector paused while it runs (as it was
    before, after). Building the calls of a run makes millions of objects that live on,
    and each of them counted towards a collection that traversed all the others: 70% of
    the time of ``threads()`` for 625,000 calls. Sound because what is built holds no
    reference cycle (a call holds its callees, never its caller), so a collection could
    free none of it; a cycle the program makes meanwhile, in another thread, waits for the
    next collection."""
    @functools.wraps(method)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return method(*args, **kwargs)
        gc.disable()
        try:
            return method(*args, **kwargs)
        finally:
            gc.enable()

    return paused  # type: ignore[return-value]


class Tracer(splice.Plugin):
    """Records the call tree of everything run under it (see the module docstring).

    ``include``/``exclude``: module patterns (``"pkg"`` covers its submodules; wildcards
    allowed) choosing which functions record their calls. ``args``/``returns``: record short
    summaries of arguments and return values. ``follow_threads``: threads started under the
    Tracer run under it too. ``implicit_calls``: operators, subscripts, attribute access and
    formatting of your objects enter their dunders under the Tracer (recorded; slower).

    Results: :meth:`threads` (a :class:`ThreadTrace` per thread, with its tree of
    :class:`Call` records), :meth:`calls` (every call), :meth:`counts` (calls per code
    object), :meth:`format_tree`/:meth:`print_tree`, :meth:`chrome_trace`/
    :meth:`write_chrome_trace`; :meth:`reset` drops what was recorded (compiled code is kept).
    """

    def __init__(self, *, include: Iterable[str] = (), exclude: Iterable[str] = (),
                 args: bool = False, returns: bool = False, follow_threads: bool = True,
                 implicit_calls: bool = False) -> None:
        # (None, not False, when off: a composed plugin with hooks keeps its implicit calls)
        self.implicit_calls: bool | None = True if implicit_calls else None
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.args = args
        self.returns = returns
        self.follow_threads = follow_threads
        self._logs: list[_ThreadLog] = []
        self._local = _Local(self._logs)
        #: id(compiled code of a traced generator that delegated: ``yield from``) -> (that
        #: code, its info): its subgenerators' resumes are recorded inside spans of it
        self._delegators: _Delegators = {}
        #: the recording calls in C over ``_local`` (None without the C extension: the
        #: instrumented code extends ``_local.events`` itself)
        self._recorder = (None if _Recorder is None else
                          _Recorder(self._local, self._delegators, DELEGATION_OPCODES,
                                    _WRAP))
        self._infos: dict[types.CodeType, FunctionInfo] = {}
        self._lock = threading.Lock()
        self._bias: Bias | None = None

    def cache_token(self) -> Hashable:
        """What the instrumentation depends on: the options (``follow_threads`` is read
        when a thread starts) and whether it records through the C recorder. Tracers with
        equal options share their compiled code; the event lists are each Tracer's own
        (its ``_local`` and ``_recorder``, rebound per Tracer)."""
        return (self.include, self.exclude, self.args, self.returns, self.implicit_calls,
                self._recorder is not None)

    # -------------------------------------------------------------- other processes

    def __getstate__(self) -> dict[str, Any]:
        """The options (a copy sent to a worker process records there on its own)."""
        return {"include": self.include, "exclude": self.exclude, "args": self.args,
                "returns": self.returns, "follow_threads": self.follow_threads,
                "implicit_calls": bool(self.implicit_calls)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def worker_report(self) -> dict[str, Any] | None:
        """In a worker process: the calls recorded there, per thread (functions as their
        marshalled code, names and module), for :meth:`merge_worker_report`."""
        table: list[tuple[bytes, str, str] | None] = []
        index: dict[FunctionInfo, int] = {}
        threads = []
        for log in list(self._logs):
            encoded: list[Any] = []
            for item in list(log.events):
                if type(item) is FunctionInfo:
                    at = index.get(item)
                    if at is None:
                        at = index[item] = len(table)
                        table.append(None if item is COMPILE else
                                     (marshal.dumps(item.code), item.qualname, item.module))
                    encoded.append(("f", at))
                elif type(item) is int or type(item) is str:
                    encoded.append(item)
                elif type(item) is tuple:  # an exception's record
                    encoded.append(_exception_text(item))
                else:
                    encoded.append(("m", _MARKER_NAMES[item]))
            if encoded:
                threads.append((log.ident, log.native_id, log.label(), encoded))
        return {"functions": table, "threads": threads} if threads else None

    def merge_worker_report(self, report: Any, pid: int) -> None:
        """The calls a copy of this Tracer recorded in worker process ``pid``: each of its
        threads becomes a thread of this Tracer's, with that ``pid``; a function this
        Tracer recorded too is the same :class:`FunctionInfo`."""
        infos = [COMPILE if entry is None else self._remote_info(*entry)
                 for entry in report["functions"]]
        for ident, native_id, name, encoded in report["threads"]:
            events = [item if type(item) is not tuple else
                      infos[item[1]] if item[0] == "f" else _MARKERS[item[1]]
                      for item in encoded]
            log = _ThreadLog.of_worker(events, ident, native_id, name, pid)
            with self._lock:
                self._logs.append(log)

    def _remote_info(self, code: bytes, qualname: str, module: str) -> FunctionInfo:
        # code objects compare equal by content: the worker's is this process's function
        found: types.CodeType = marshal.loads(code)
        info = self._infos.get(found)
        if info is None:
            info = self._infos.setdefault(found, FunctionInfo(found, qualname, module))
        return info

    def __repr__(self) -> str:
        parts = []
        if self.include:
            parts.append(f"include={list(self.include)!r}")
        if self.exclude:
            parts.append(f"exclude={list(self.exclude)!r}")
        if self.args:
            parts.append("args=True")
        if self.returns:
            parts.append("returns=True")
        if self.implicit_calls:
            parts.append("implicit_calls=True")
        return f"Tracer({', '.join(parts)})"

    # ------------------------------------------------------------------------ filtering

    def module_wanted(self, module: str | None) -> bool:
        """Whether functions of ``module`` record their calls (``include``/``exclude``)."""
        name = module or ""
        if self.include and not any(_module_matches(name, p) for p in self.include):
            return False
        return not any(_module_matches(name, p) for p in self.exclude)

    # ------------------------------------------------------------------------------ hooks

    def compiled(self, fn: Any, start_ns: int, end_ns: int) -> None:
        """splice compiled ``fn`` (for its first call) in that interval: recorded as a call
        of ``[splice compile]`` where it happened, so the caller's self time does not
        include it."""
        self._local.events += (COMPILE, start_ns, -end_ns)

    def recurse(self, fn: Callable[..., Any]) -> bool:
        # the Tracer's own code (the recording helpers the pass inserts, and its methods
        # called from traced code) runs natively and records nothing
        return getattr(fn, "__module__", None) != __name__

    def lowered(self, ir: FunctionIR) -> FunctionIR | None:
        """Instrument one function (see the module docstring)."""
        fn = ir.function
        if ir.kind not in ("function", "lambda") or fn is None or ir.is_async:
            return None
        code: types.CodeType = fn.__code__
        flags = code.co_flags
        if flags & (_CO_COROUTINE | _CO_ITERABLE_COROUTINE | _CO_ASYNC_GENERATOR):
            return None
        module = getattr(fn, "__module__", None)
        if not self.module_wanted(module if isinstance(module, str) else None):
            return None
        from splice.plugins.tracer_ir import instrument

        return instrument(ir, functools.partial(self._info, code, fn), self._local,
                          recorder=self._recorder, delegators=self._delegators,
                          python_forms=_GENERATOR_FORMS,
                          generator=bool(flags & _CO_GENERATOR),
                          returns=self.returns, args=self.args, record_return=_record_return,
                          record_args=_record_args, record_exception=_record_exception)

    def _info(self, code: types.CodeType, fn: types.FunctionType) -> FunctionInfo:
        info = self._infos.get(code)
        if info is None:
            module = getattr(fn, "__module__", None)
            info = FunctionInfo(code, getattr(fn, "__qualname__", code.co_name),
                                module if isinstance(module, str) else "")
            info = self._infos.setdefault(code, info)
        return info

    @splice.intercept(threading.Thread.start)
    def _thread_start(self, thread: threading.Thread, /, *args: Any, **kwargs: Any) -> Any:
        """``thread.start()`` under the Tracer: the thread's ``run`` runs under it too."""
        if self.follow_threads and isinstance(thread, threading.Thread):
            self._follow(thread)
        return self.recurse_call(threading.Thread.start, thread, *args, **kwargs)

    def _follow(self, thread: threading.Thread) -> None:
        """Make ``thread.run()`` (called by the new thread's bootstrap) run under this
        Tracer: an instance attribute shadows ``run`` until the thread calls it."""
        run = thread.run
        context = self.context

        def splice_thread_run(*args: Any, **kwargs: Any) -> Any:
            if thread.__dict__.get("run") is splice_thread_run:
                del thread.__dict__["run"]
            log = self._log_of_current_thread()  # named before it records anything
            log.name = thread.name
            return context.run(run, args, kwargs)
        thread.run = splice_thread_run  # type: ignore[method-assign]

    def _log_of_current_thread(self) -> _ThreadLog:
        events = self._local.events
        for log in reversed(self._logs):
            if log.events is events:
                return log
        raise AssertionError("unreachable: the thread's log registers itself")

    # ---------------------------------------------------------------------------- results

    def reset(self) -> None:
        """Forget every recorded call (code compiled under the Tracer is kept)."""
        for log in list(self._logs):
            del log.events[:]

    clear = reset

    def counts(self) -> dict[types.CodeType, int]:
        """How many calls were recorded per code object."""
        found: Counter[types.CodeType] = Counter()
        for log in list(self._logs):
            for item in list(log.events):
                if type(item) is FunctionInfo and item is not COMPILE:
                    found[item.code] += 1
        return dict(found)

    @_without_collections
    def threads(self) -> list[ThreadTrace]:
        """The recorded calls, per thread (threads that recorded nothing are left out)."""
        out = []
        for log in list(self._logs):
            compiles: list[tuple[int, int]] = []
            calls = _build(list(log.events), self.returns, compiles)
            if calls:
                out.append(ThreadTrace(log.ident, log.native_id, log.label(), calls,
                                       compiles, log.pid))
        return out

    def roots(self) -> list[Call]:
        """The top-level calls of every thread."""
        return [call for thread in self.threads() for call in thread.calls]

    def calls(self) -> Iterator[Call]:
        """Every recorded call, thread by thread, depth first."""
        for thread in self.threads():
            yield from thread.walk()

    # ----------------------------------------------------------------------- Chrome JSON

    @_without_collections
    def chrome_trace(self, *, process_name: str | None = None) -> dict[str, Any]:
        """The recorded calls as Chrome trace-event JSON (the object format): one complete
        ("X") event per call, with the thread and process names as metadata ("M") events.
        Times are microseconds from the first recorded call. Opens in Perfetto
        (https://ui.perfetto.dev) and ``chrome://tracing``. ``process_name`` labels the
        process (default: the program's name and pid)."""
        threads = self.threads()
        this = os.getpid()
        now = perf_counter_ns()
        starts = [call.start for thread in threads for call in thread.calls] + \
            [start for thread in threads for start, _ in thread.compiles]
        origin = min(starts) if starts else now
        events: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": this, "tid": 0,
             "args": {"name": process_name or _process_name()}}]
        workers = sorted({thread.pid for thread in threads} - {this})
        events.extend({"name": "process_name", "ph": "M", "pid": worker, "tid": 0,
                       "args": {"name": f"worker (pid {worker})"}} for worker in workers)
        for order, thread in enumerate(threads):
            pid = thread.pid
            events.append({"name": "thread_name", "ph": "M", "pid": pid,
                           "tid": thread.native_id, "args": {"name": thread.name}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid,
                           "tid": thread.native_id, "args": {"sort_index": order}})
            compiles = list(thread.compiles)
            for call in thread.walk():
                end = call.end if call.end is not None else now
                details: dict[str, Any] = {"qualname": f"{call.info.module}.{call.name}",
                                           "file": call.info.filename,
                                           "line": call.info.lineno}
                if call.args is not None:
                    details["args"] = call.args
                if call.result is not None:
                    details["return"] = call.result
                if call.exception is not None:
                    details["exception"] = call.exception
                if call.end is None:
                    details["unfinished"] = True
                events.append({
                    "name": call.name, "cat": call.info.module or "python", "ph": "X",
                    "ts": (call.start - origin) / 1000, "dur": (end - call.start) / 1000,
                    "pid": pid, "tid": thread.native_id, "args": details})
                compiles.extend(call.compiles)
            for start, stop in compiles:
                events.append({
                    "name": COMPILE.qualname, "cat": "splice", "ph": "X",
                    "ts": (start - origin) / 1000, "dur": (stop - start) / 1000,
                    "pid": pid, "tid": thread.native_id,
                    "args": {"note": "splice compiling callees on their first call"}})
        return {"traceEvents": events, "displayTimeUnit": "ms",
                "otherData": {"generator": "splice.plugins.Tracer",
                              "python": sys.version.split()[0]}}

    def write_chrome_trace(self, path: str | os.PathLike[str], *,
                           process_name: str | None = None) -> Path:
        """Write :meth:`chrome_trace` to ``path`` (JSON); returns the path."""
        target = Path(path)
        trace = self.chrome_trace(process_name=process_name)
        with target.open("w", encoding="utf-8") as out:
            json.dump(trace, out, separators=(",", ":"))
            out.write("\n")
        return target

    # ------------------------------------------------------------- profiles: folded, stats

    @_without_collections
    def collapsed_stacks(self, *, corrected: bool = True) -> str:
        """The calls as collapsed stacks, the input of flame graph tools (speedscope,
        ``flamegraph.pl``, ``inferno``): one line per path of callers, ``thread;f;g;h N``
        with ``N`` the self time of the last function on that path, in microseconds
        (splice's compile time left out, and with ``corrected`` the Tracer's own cost per
        call: :attr:`bias`). Frames are ``module:qualname``."""
        bias = self.bias if corrected else NO_BIAS
        weights: dict[str, float] = {}
        for thread in self.threads():
            times = _corrected_times(thread.calls, bias)
            stack: list[tuple[Call, str]] = [(c, thread.label) for c in reversed(thread.calls)]
            while stack:
                call, above = stack.pop()
                path = f"{above};{call.info.module}:{call.name}"
                weights[path] = weights.get(path, 0.0) + times[id(call)][0]
                stack.extend((child, path) for child in reversed(call.children))
        rounded = ((path, round(weight / 1000)) for path, weight in weights.items())
        return "\n".join(f"{path} {weight}" for path, weight in rounded if weight)

    @property
    def bias(self) -> Bias:
        """What recording one call costs this Tracer, in nanoseconds inside the call's span
        and in its caller's (measured on first use, by a Tracer of the same options:
        splice/plugins/tracer_bias.py). :meth:`stats`, :meth:`format_stats` and
        :meth:`format_tree` leave it out of the times they report."""
        if self._bias is None:
            scratch = _Local([])
            self._bias = measure_bias(
                lambda: Tracer(args=self.args, returns=self.returns,
                               implicit_calls=bool(self.implicit_calls)),
                lambda: _record_exception(scratch))
        return self._bias

    @bias.setter
    def bias(self, value: Bias) -> None:
        """A cost measured before (by a Tracer of the same options), or ``Bias(0, 0)``
        for the measured wall times."""
        if not isinstance(value, Bias):
            raise TypeError(f"Tracer.bias takes a splice.plugins.tracer_bias.Bias, not "
                            f"{type(value).__name__}")
        self._bias = value

    @_without_collections
    def stats(self, *, corrected: bool = True) -> list[FunctionStats]:
        """Per function, as ``cProfile``/``pstats`` count them: calls, total time in the
        function itself (``tottime``) and cumulative time with what it called
        (``cumtime``, a recursive call counted once, in its outermost call); seconds,
        splice's compile time left out. ``corrected``: the Tracer's own cost per call
        (:attr:`bias`) left out too, as ``profile`` does once calibrated. Sorted by
        cumulative time."""
        bias = self.bias if corrected else NO_BIAS
        found: dict[FunctionInfo, FunctionStats] = {}
        for log in list(self._logs):
            _function_stats(list(log.events), bias, found)
        for entry in found.values():
            # the same nanoseconds summed in another order: never less by a rounding
            entry.cumtime = max(entry.cumtime, entry.tottime)
        return sorted(found.values(), key=lambda e: -e.cumtime)

    @_without_collections
    def format_stats(self, *, sort: str = "cumulative", limit: int | None = None,
                     corrected: bool = True) -> str:
        """:meth:`stats` as ``pstats`` prints them, sorted by ``cumulative``, ``tottime``,
        ``ncalls`` or ``name``."""
        keys: dict[str, Callable[[FunctionStats], Any]] = {
            "cumulative": lambda e: -e.cumtime, "tottime": lambda e: -e.tottime,
            "ncalls": lambda e: -e.ncalls, "name": lambda e: e.info.qualname}
        if sort not in keys:
            raise ValueError(f"sort by one of {', '.join(keys)}, not {sort!r}")
        rows = sorted(self.stats(corrected=corrected), key=keys[sort])[:limit]
        lines = ["   ncalls  tottime  percall  cumtime  percall filename:lineno(function)"]
        for e in rows:
            lines.append(f"{e.ncalls:>9} {e.tottime:8.3f} {e.tottime / e.ncalls:8.3f} "
                         f"{e.cumtime:8.3f} {e.cumtime / e.ncalls:8.3f} "
                         f"{e.info.location}({e.info.qualname})")
        return "\n".join(lines)

    # ------------------------------------------------------------------------- text tree

    @_without_collections
    def format_tree(self, *, aggregate: bool = True, max_depth: int | None = None,
                    min_ms: float = 0.0, locations: bool = True, corrected: bool = True
                    ) -> str:
        """The call tree as text, thread by thread, with wall times in milliseconds.

        ``aggregate`` (the default) merges calls of the same function under the same path
        of callers into one line with a call count, total and self time (like a profiler's
        call tree); ``aggregate=False`` shows every call, with its argument and return
        summaries and exception. ``max_depth`` cuts the tree; ``min_ms`` hides subtrees
        faster than that; ``locations`` shows each function's ``file:line``.
        ``corrected``: the aggregated times leave out the Tracer's own cost per call
        (:attr:`bias`); the calls shown one by one keep their measured wall times.
        """
        bias = self.bias if corrected and aggregate else NO_BIAS
        lines: list[str] = []
        for thread in self.threads():
            # the same figure as the calls' below: corrected when they are
            times = _corrected_times(thread.calls, bias)
            total = sum(times[id(c)][1] for c in thread.calls)
            compiled = sum(end - start for start, end in thread.compiles) + \
                sum(c.compile_time for c in thread.walk())
            uncounted = [f"splice compile {compiled / 1e6:.3f} ms"] if compiled else []
            if bias is not NO_BIAS:
                uncounted.append(f"the Tracer's {(bias.inside + bias.outside) / 1e3:.2f} µs "
                                 "per call")
            note = f" ({', '.join(uncounted)}, not counted)" if uncounted else ""
            where = f"thread {thread.native_id}" if thread.pid == os.getpid() else \
                f"process {thread.pid}, thread {thread.native_id}"
            lines.append(f"{thread.name} ({where}): "
                         f"{len(thread.calls)} top-level call(s), {total / 1e6:.3f} ms{note}")
            if aggregate:
                nodes = _aggregate(thread.calls, times)
                _format_nodes(nodes, 1, lines, max_depth, min_ms * 1e6, locations)
            else:
                _format_calls(thread.calls, 1, lines, max_depth, min_ms * 1e6, locations)
        if not lines:
            return "(no calls recorded)"
        return "\n".join(lines)

    def report(self) -> str:
        """What ``splice run -p ...:Tracer`` prints when the run ends: the call tree."""
        return self.format_tree()

    def print_tree(self, file: IO[str] | None = None, **options: Any) -> None:
        """Print :meth:`format_tree` (to ``file``, standard output by default)."""
        print(self.format_tree(**options), file=file if file is not None else sys.stdout)


def _process_name() -> str:
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    return f"{os.path.basename(argv0)} (pid {os.getpid()})"


def _build(events: list[Any], returns: bool = False,
           compiles: list[tuple[int, int]] | None = None) -> list[Call]:
    """The call trees recorded in one thread's event list (see :class:`_Local`).
    ``returns``: return values were recorded, so a call that ended without one (and
    without raising) fell off its end and returned None. A compile span goes to the call
    it happened in, or to ``compiles`` outside any call."""
    roots: list[Call] = []
    stack: list[Call] = []
    for item, value in _read_events(events):
        if item is _END:
            if stack:
                call = stack.pop()
                call.end = value
                if returns and call.result is None and call.exception is None \
                        and not call.info.generator:
                    call.result = "None"
        elif item is COMPILE:
            if stack:
                stack[-1].compiles.append(value)
            elif compiles is not None:
                compiles.append(value)
        elif type(item) is FunctionInfo:
            call = Call(item, value)
            (stack[-1].children if stack else roots).append(call)
            stack.append(call)
        elif stack:
            if item is _EXC:
                stack[-1].exception = _exception_text(value)
            elif item is _ARGS:
                stack[-1].args = value
            elif item is _RET:
                stack[-1].result = value
    return roots


#: what :func:`_read_events` gives for the end of a call (with its end time)
_END = object()


def _read_events(events: list[Any]) -> Iterator[tuple[Any, Any]]:
    """One thread's event list (see :class:`_Local`) read as ``(what, value)`` pairs: a call
    (its ``FunctionInfo``, start time), the end of the innermost call (``_END``, end time),
    a compile span (``COMPILE``, ``(start, end)``) and a marker with what it recorded
    (``_EXC``, ``_ARGS``, ``_RET``). The spans of delegating generators a ``_WRAP`` marker
    announces end where the call they wrap ends. A list copied while a call or a span was
    being recorded ends before it."""
    index = 0
    count = len(events)
    depth = 0  # calls open
    wrapped: list[tuple[int, int]] = []  # (depth once a wrapped call ended, its wrappers)
    while index < count:
        item = events[index]
        if type(item) is int:
            yield _END, -item
            depth -= 1
            while wrapped and wrapped[-1][0] == depth:
                wrappers = wrapped.pop()[1]
                for _ in range(wrappers):
                    yield _END, -item
                depth -= wrappers
            index += 1
        elif item is _WRAP:
            if index + 1 < count:
                wrapped.append((depth + events[index + 1], events[index + 1]))
            index += 2
        elif item is COMPILE:
            if index + 2 >= count:
                return
            yield COMPILE, (events[index + 1], -events[index + 2])
            index += 3
        elif type(item) is FunctionInfo:
            if index + 1 >= count:
                return
            yield item, events[index + 1]
            depth += 1
            index += 2
        else:
            yield item, events[index + 1] if index + 1 < count else None
            index += 2


class _Node:
    """Calls of one function under one path of callers, merged."""

    __slots__ = ("info", "calls", "total", "inner", "compile", "raised", "children")

    def __init__(self, info: FunctionInfo) -> None:
        self.info = info
        self.calls = 0
        #: the program's time (splice's compiles left out, and the Tracer's own cost when
        #: corrected), in and below these calls, and in their recorded callees
        self.total = 0.0
        self.inner = 0.0
        #: splice's compile time in these calls, outside their callees
        self.compile = 0
        self.raised = 0
        self.children: dict[FunctionInfo, _Node] = {}


def _aggregate(calls: list[Call], times: dict[int, tuple[float, float]]) -> list[_Node]:
    """The calls merged per path of callers, with the times of ``times``
    (:func:`_corrected_times`)."""
    top: dict[FunctionInfo, _Node] = {}
    work: list[tuple[Call, dict[FunctionInfo, _Node]]] = [(c, top) for c in calls]
    while work:
        call, siblings = work.pop()
        node = siblings.get(call.info)
        if node is None:
            node = siblings[call.info] = _Node(call.info)
        own, total = times[id(call)]
        node.calls += 1
        node.total += total
        node.inner += total - own
        node.compile += call.compile_time
        node.raised += call.exception is not None
        work.extend((child, node.children) for child in call.children)
    return sorted(top.values(), key=lambda n: -n.total)


def _function_stats(events: list[Any], bias: Bias, found: dict[FunctionInfo, FunctionStats]
                    ) -> None:
    """Add one thread's event list to ``found``, as :meth:`Tracer.stats` counts calls: the
    times :func:`_corrected_times` gives the calls :func:`_build` makes of the events, read
    in one pass without making the calls (a run records millions). A frame is ``[info,
    start, inner wall time, compile time, callees, resumes among them, callees' totals,
    raised, outermost call of its function]``; calls still running end now."""
    stack: list[list[Any]] = []
    active: dict[FunctionInfo, int] = {}  # calls on the stack, per function

    def close(frame: list[Any], end: int) -> None:
        info, start, inner_wall, compiled, callees, resumes, inner, raised, outer = frame
        own = bias.self_time(end - start - inner_wall - compiled, callees, raised,
                             resumes=resumes, resumed=info.generator)
        total = own + inner
        entry = found.get(info)
        if entry is None:
            entry = found[info] = FunctionStats(info)
        entry.ncalls += 1
        entry.tottime += own / 1e9
        if outer:
            entry.cumtime += total / 1e9
        active[info] -= 1
        if stack:
            parent = stack[-1]
            parent[2] += end - start
            parent[4] += 1
            parent[5] += info.generator
            parent[6] += total

    for item, value in _read_events(events):
        if item is _END:
            if stack:
                close(stack.pop(), value)
        elif item is COMPILE:
            if stack:
                stack[-1][3] += value[1] - value[0]
        elif type(item) is FunctionInfo:
            depth = active.get(item, 0)
            active[item] = depth + 1
            stack.append([item, value, 0, 0, 0, 0, 0.0, False, depth == 0])
        elif item is _EXC and stack:  # (what it recorded: None is no exception)
            stack[-1][7] = value is not None
    end_of_run = perf_counter_ns()
    while stack:
        close(stack.pop(), end_of_run)


def _corrected_times(calls: list[Call], bias: Bias, now: int | None = None
                     ) -> dict[int, tuple[float, float]]:
    """id(call) -> (self time, total time) in nanoseconds, for every call under ``calls``,
    splice's compiles left out and the Tracer's cost per call (``bias``) too: a call's self
    time is its measured self time less that cost, never below zero
    (:meth:`Bias.self_time`), and its total is its self time plus its callees' totals. So
    the corrected figures keep what the measured ones have: no time is negative, a total
    is at least its self time, and a call's total is its self time plus its callees'
    totals (uncorrected, the total is the measured one). A call still running ends at
    ``now`` (its callees still running, where it is)."""
    end_of_run = perf_counter_ns() if now is None else now
    times: dict[int, tuple[float, float]] = {}
    stack: list[tuple[Call, int, bool]] = [
        (c, c.end if c.end is not None else end_of_run, False) for c in calls]
    while stack:  # post-order, iteratively: deep recursions are traced too
        call, end, done = stack.pop()
        if not done:
            stack.append((call, end, True))
            stack.extend((child, child.end if child.end is not None else end, False)
                         for child in call.children)
            continue
        inner_wall = 0
        inner = 0.0
        resumes = 0
        for child in call.children:
            inner_wall += (child.end if child.end is not None else end) - child.start
            inner += times[id(child)][1]
            resumes += child.info.generator
        own = bias.self_time(end - call.start - inner_wall - call.compile_time,
                             len(call.children), call.exception is not None,
                             resumes=resumes, resumed=call.info.generator)
        times[id(call)] = (own, own + inner)
    return times


def _format_nodes(nodes: list[_Node], depth: int, lines: list[str], max_depth: int | None,
                  min_ns: float, locations: bool) -> None:
    # iterative: a deep recursion traced must not hit the recursion limit when printed
    stack: list[tuple[_Node, int]] = [(n, depth) for n in reversed(nodes)]
    while stack:
        node, level = stack.pop()
        if node.total < min_ns:
            continue
        calls = f" ×{node.calls}" if node.calls != 1 else ""
        raised = f"  raised ×{node.raised}" if node.raised else ""
        where = f"  {node.info.location}" if locations else ""
        compiled = f", splice compile {node.compile / 1e6:.3f} ms" if node.compile else ""
        lines.append(f"{'  ' * level}{node.total / 1e6:10.3f} ms  {node.info.qualname}{calls}"
                     f"  (self {(node.total - node.inner) / 1e6:.3f} ms{compiled}){raised}"
                     f"{where}")
        if node.children and (max_depth is None or level < max_depth):
            children = sorted(node.children.values(), key=lambda n: -n.total)
            stack.extend((child, level + 1) for child in reversed(children))


def _format_calls(calls: list[Call], depth: int, lines: list[str], max_depth: int | None,
                  min_ns: float, locations: bool) -> None:
    stack: list[tuple[Call, int]] = [(c, depth) for c in reversed(calls)]
    while stack:
        call, level = stack.pop()
        duration = call.duration
        if duration is not None and duration < min_ns:
            continue
        took = "   running" if duration is None else f"{duration / 1e6:10.3f} ms"
        text = call.name
        if call.args is not None:
            text += f"({call.args})"
        if call.result is not None:
            text += f" -> {call.result}"
        if call.exception is not None:
            text += f"  !! {call.exception}"
        if call.compiles:
            text += f"  (splice compile {call.compile_time / 1e6:.3f} ms)"
        where = f"  {call.info.location}" if locations else ""
        lines.append(f"{'  ' * level}{took}  {text}{where}")
        if call.children and (max_depth is None or level < max_depth):
            stack.extend((child, level + 1) for child in reversed(call.children))

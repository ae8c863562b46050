"""Processes: work a program starts under a context in another process runs there under
an equal context, and what the plugins collect there comes back to them.

A thread shares the program's memory, so it can run under the very context that started it
(``splice.runtime.overlays``, threads). A process cannot: its plugins must be sent there,
by class and configuration (pickled), and what they collect there must be sent back. This
module does both for the standard library's ways of running Python code in other
processes:

* ``concurrent.futures.ProcessPoolExecutor``: ``submit`` (so also ``map``, which submits
  chunks), and ``loop.run_in_executor`` with such an executor;
* ``multiprocessing.Pool``: ``apply``, ``apply_async``, ``map``, ``map_async``,
  ``starmap``, ``starmap_async``, ``imap``, ``imap_unordered``;
* ``multiprocessing.Process(target=f).start()``.

Under a context whose plugins follow processes (``Plugin.follow_processes``, True by
default), each of those methods is an overlay: it calls the method (under the context, as
any Python function) with the program's function replaced by a ``Remote``. A ``Remote``
pickles as a call of ``enter_in_worker(ticket, function)``: unpickled in a worker, it gives
``function`` entered under the context of the plugins the ticket carries (pickled once per
context, when the first task is sent). The pool calls what it unpickled, which is the
program's function transformed under those plugins: no frame of splice's sits between the
pool's worker loop and the program's function, so a task's result, its exception and the
remote traceback the pool sends back are those of a native run. The pool's own machinery
(its worker loop, ``_process_chunk``, ``mapstar``) runs natively in the worker, under every
start method: a process forked from code running under the context continues under it
only until it enters ``BaseProcess._bootstrap``, whose overlay runs natively.

What comes back: a plugin's ``worker_report()`` (default None: nothing) is called in each
worker process when it ends normally (a pool shut down or closed and joined, a process
whose target returned); the reports are written, one file per process, to a
spool directory the context made for the purpose, and merged into the context's plugins
(``merge_worker_report(report, pid)``) at the end of each ``Context.run``, and, for a
program run by ``splice run``/``splice trace`` (whose top-level calls enter the context
without ``run``: ``splice.program``), before each top-level call (if the spool changed)
and when the program ends. Timestamps agree across processes (``perf_counter_ns`` reads
the system's monotonic clock).

Soundness: the program's functions, arguments and results travel as natively (the pool
pickles them); only the callable is replaced, and it unpickles to the function itself when
no plugin can be made in the worker, never to something that computes another value.
A plugin that cannot be pickled raises ``PluginSendError`` where the work is submitted,
naming the plugin and the reason, instead of failing later inside the pool's feeder thread.

Limits: a worker killed sends nothing: ``Pool.terminate``, which ``with Pool() as pool:``
calls on leaving the block, kills the workers it finds (``pool.close(); pool.join()`` in the
block lets them end first). No handler of ``SIGTERM`` is installed for this: a Python
handler runs only between bytecodes, and a worker waiting on the pool's lock would not
run it, so a terminated pool would wait for that worker forever; a pool still running
when ``run`` ends sends its reports when its workers end (the next run's end merges them);
the ``initializer`` of a pool and the ``run`` method of a ``Process`` subclass run natively;
``os.fork`` called directly continues under the inherited context and sends nothing back.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import itertools
import os
import pickle
import shutil
import signal
import tempfile
import threading
import types
import uuid
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from splice.errors import PluginSendError
from splice.exec_sources import EXEC_SOURCES
from splice.forks import fork_safe_lock
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

#: modules whose functions are process machinery: targets and helpers of theirs run natively
_MACHINERY = ("multiprocessing", "concurrent.futures", "distributed")


class Ticket(NamedTuple):
    """What a worker needs to run a task under the plugins of the context that sent it."""

    key: str            # the sending context's channel
    parent: int         # its process id
    spool: str          # the directory reports are written to
    plugins: bytes      # the context's plugins, pickled
    names: str          # their classes' names (for errors)
    #: makes the context of a tuple of plugins (``context_of``, pickled by reference: the
    #: worker imports it from where the sender's context came from)
    make_context: Callable[[tuple[Any, ...]], Any]


# ------------------------------------------------------------------------ parent's side


class Channel:
    """One context's link to the processes it starts work in: the ticket sent with each
    task, and the spool directory the workers' reports arrive in. Owned by the context
    (``Context.process_channel``); the directory is removed when the context goes."""

    def __init__(self, context: Any, make_context: Callable[[tuple[Any, ...]], Any]) -> None:
        #: the ``splice.runtime.context.Context`` that owns this channel
        self.context = context
        self.make_context = make_context
        self.key = uuid.uuid4().hex
        self._ticket: Ticket | None = None
        self._lock = threading.Lock()
        self._merged: set[str] = set()
        #: the spool directory's modification time when last listed (``collect``)
        self._listed_at = -1

    def ticket(self) -> Ticket:
        """The ticket (the plugins pickled on first use: ``PluginSendError`` if they
        cannot be)."""
        ticket = self._ticket
        if ticket is not None:
            return ticket
        with self._lock:
            if self._ticket is None:
                plugins = self.context.plugins
                blob = _pickled(plugins)
                spool = tempfile.mkdtemp(prefix="splice-workers-")
                weakref.finalize(self, shutil.rmtree, spool, True)
                names = " ∘ ".join(type(p).__qualname__ for p in plugins)
                self._ticket = Ticket(self.key, os.getpid(), spool, blob, names,
                                      self.make_context)
                _CHANNELS[self.key] = self
            return self._ticket

    def ticket_if_sent(self) -> Ticket | None:
        """The ticket, if any work was sent with it."""
        return self._ticket

    def remote(self, fn: Any, texts: tuple[str, ...] = (),
               runs_here: Callable[[], bool] | None = None) -> Any:
        """What to send instead of ``fn``: a ``Remote``, or ``fn`` itself when it is
        one already or is process machinery. ``texts``: the source texts of code it pickles
        by value; ``runs_here``: for a task that passes through processes that do not run
        it (a Dask scheduler), whether the process unpickling it is one that does."""
        if isinstance(fn, Remote) or _is_machinery(fn):
            return fn
        if type(fn) is functools.partial and _is_machinery(fn.func) and fn.args:
            # ProcessPoolExecutor.map submits partial(_process_chunk, fn)
            return functools.partial(fn.func, self.remote(fn.args[0]), *fn.args[1:],
                                     **fn.keywords)
        return Remote(self.ticket(), fn, texts, runs_here)

    def merge(self, pid: int, reports: list[Any]) -> None:
        """Merge the reports of the plugins' copies in process ``pid``."""
        for plugin, report in zip(self.context.plugins, reports, strict=True):
            if report is not None:
                plugin.merge_worker_report(report, pid)

    def collect(self, *, if_changed: bool = False) -> int:
        """Merge the reports workers have written since the last call into the context's
        plugins; returns how many were merged. ``if_changed``: only if the spool
        directory changed since it was last listed (one ``stat``: what a program's
        top-level calls check, ``splice.program``; a report written within the file
        system's timestamp resolution of the last listing waits for the next full
        collection)."""
        ticket = self._ticket
        if ticket is None:
            return 0
        if if_changed:
            try:
                changed = os.stat(ticket.spool).st_mtime_ns
            except FileNotFoundError:
                return 0
            if changed == self._listed_at:
                return 0
        merged = 0
        with self._lock:
            try:
                self._listed_at = os.stat(ticket.spool).st_mtime_ns
                names = sorted(n for n in os.listdir(ticket.spool) if n.endswith(".report"))
            except FileNotFoundError:
                return 0
            for name in names:
                if name in self._merged:
                    continue
                self._merged.add(name)
                with open(os.path.join(ticket.spool, name), "rb") as source:
                    pid, reports = pickle.load(source)
                self.merge(pid, reports)
                merged += 1
        return merged


#: channel key -> the parent's channel (weakly: a channel lives with its context)
_CHANNELS: weakref.WeakValueDictionary[str, Channel] = weakref.WeakValueDictionary()


def _pickled(plugins: tuple[Any, ...]) -> bytes:
    """The plugins pickled; if that fails, the error names the first plugin that cannot be
    pickled on its own."""
    try:
        return pickle.dumps(plugins)
    except Exception:
        for plugin in plugins:
            try:
                pickle.dumps(plugin)
            except Exception as exc:
                raise PluginSendError(type(plugin).__qualname__,
                                      f"{type(exc).__name__}: {exc}") from exc
        raise


def _is_machinery(fn: Any) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return type(fn) is types.FunctionType and any(
        module == m or module.startswith(m + ".") for m in _MACHINERY)


class Remote:
    """A function sent to another process under a context: pickles as
    ``enter_in_worker(ticket, fn)``, called in this process it runs ``fn`` there the same
    way (a ``Process`` target, forked: never pickled)."""

    __slots__ = ("ticket", "fn", "texts", "runs_here")

    def __init__(self, ticket: Ticket, fn: Any, texts: tuple[str, ...] = (),
                 runs_here: Callable[[], bool] | None = None) -> None:
        self.ticket = ticket
        self.fn = fn
        #: source texts for code the task pickles by value (splice.exec_sources)
        self.texts = texts
        #: whether the process unpickling the task runs it (None: every process does)
        self.runs_here = runs_here

    def __reduce__(self) -> tuple[Any, ...]:
        if self.texts or self.runs_here is not None:
            return (enter_in_worker, (self.ticket, self.fn, self.texts, self.runs_here))
        return (enter_in_worker, (self.ticket, self.fn))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return entered(self.ticket, self.fn)(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # named as its function (a Dask task's key is made from the function's name)
        if name in ("__name__", "__qualname__"):
            return getattr(self.fn, name)
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"<splice remote {self.fn!r}>"


# ------------------------------------------------------------------------ worker's side


class _Worker:
    """This process's copy of one sending context: its plugins, their context, and the
    report sent when the process ends."""

    def __init__(self, ticket: Ticket) -> None:
        from multiprocessing import util  # only workers need it (importing it costs ~6 ms)

        self.ticket = ticket
        self.pid = os.getpid()
        self.plugins: tuple[Any, ...] = pickle.loads(ticket.plugins)
        self.context = ticket.make_context(self.plugins)
        self.sent = False
        self.send_at_exit()
        # a Process target is unpickled (spawn, forkserver) or entered (fork) before
        # BaseProcess._bootstrap clears multiprocessing's exit functions and runs its
        # after-fork callbacks: register again there
        util.register_after_fork(self, _Worker.send_at_exit)
        atexit.register(self.send)

    def send_at_exit(self) -> None:
        """Send the report when the process ends normally: multiprocessing's exit functions
        (a worker's end), and ``atexit`` (a spawned process's interpreter exit)."""
        from multiprocessing import util

        util.Finalize(self, _Worker.send, args=(self,), exitpriority=100)

    def take(self) -> tuple[int, list[Any]] | None:
        """The plugins' reports, handed to the sender directly (a Dask client pulls them
        with ``Client.run``): nothing is written at exit then."""
        if self.sent:
            return None
        self.sent = True
        return self.pid, self._reports()

    def _reports(self) -> list[Any]:
        return [plugin.worker_report() for plugin in self.plugins]

    def send(self) -> None:
        """Write the plugins' reports to the spool (once, and only from the process that
        made this copy: not from a process forked from it)."""
        if self.sent or os.getpid() != self.pid:
            return
        self.sent = True
        # a SIGTERM arriving while the report is written (Pool.terminate racing a
        # worker's normal exit) kills the worker once the file is complete
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            self._write()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _write(self) -> None:
        reports = self._reports()
        if all(report is None for report in reports):
            return
        final = os.path.join(self.ticket.spool, f"{self.pid}-{next(_serials)}.report")
        partial = final + ".partial"
        try:
            with open(partial, "wb") as out:
                pickle.dump((self.pid, reports), out)
            os.replace(partial, final)
        except OSError:  # the sender is gone (its context, and the spool, with it)
            pass


#: (channel key, process id) -> this process's copy of that context
_WORKERS: dict[tuple[str, int], _Worker] = {}
_serials = itertools.count()
_workers_lock = fork_safe_lock()


def enter_in_worker(ticket: Ticket, fn: Any, texts: tuple[str, ...] = (),
                    runs_here: Callable[[], bool] | None = None) -> Any:
    """What a ``Remote`` unpickles as: in a process that runs it, ``fn`` entered under a
    copy of the sender's context (made once per process), the source ``texts`` shipped with
    it known for code pickled by value; in the sender's process (a library that pickles and
    unpickles a task to check it, or copies it) and in a process that only passes it on
    (``runs_here`` says no: a Dask scheduler) the ``Remote`` again, which pickles the same
    way when sent on."""
    if os.getpid() == ticket.parent or (runs_here is not None and not runs_here()):
        return Remote(ticket, fn, texts, runs_here)
    if texts:
        EXEC_SOURCES.ship(texts)
    return entered(ticket, fn)


def entered(ticket: Ticket, fn: Any) -> Any:
    """``fn`` entered under the context the ticket names: in the sending process that
    context itself, elsewhere a copy made from the ticket's plugins (once per process)."""
    pid = os.getpid()
    if pid == ticket.parent:
        channel = _CHANNELS.get(ticket.key)
        if channel is not None:
            return channel.context.enter(fn)
        # the sender's context is gone: an equal one, with nothing to report to (a worker's
        # exit functions and SIGTERM handler have no place in the program's own process)
        return ticket.make_context(pickle.loads(ticket.plugins)).enter(fn)
    key = (ticket.key, pid)
    worker = _WORKERS.get(key)
    if worker is None:
        with _workers_lock:
            worker = _WORKERS.get(key)
            if worker is None:
                try:
                    worker = _WORKERS[key] = _Worker(ticket)
                except Exception as exc:
                    # the task fails with the reason (the pool itself goes on)
                    problem = f"in process {pid}, {type(exc).__name__}: {exc}"
                    return functools.partial(_fail, PluginSendError(ticket.names, problem))
    return worker.context.enter(fn)


def _fail(error: BaseException, /, *args: Any, **kwargs: Any) -> Any:
    raise error


def take_reports(key: str) -> tuple[int, list[Any]] | None:
    """In a worker: the reports of this process's copy of the context of channel ``key``
    (None if it has none, or sent them already)."""
    worker = _WORKERS.get((key, os.getpid()))
    return None if worker is None else worker.take()


# ----------------------------------------------------------------------------- overlays

Overlay = Callable[..., Any]


def function_first(channel: Channel, method: types.FunctionType) -> Overlay:
    """``method(self, fn, ...)`` (``submit``, ``apply_async``, ``map``, ...) called under
    the context with ``fn`` sent as a ``Remote``."""
    run = channel.context.transformed(method)

    @functools.wraps(method)
    def overlay(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        return run(self, channel.remote(fn), *args, **kwargs)
    return overlay


def _process_start(channel: Channel, method: types.FunctionType) -> Overlay:
    """``Process.start()`` with the target sent as a ``Remote`` (put back if it fails)."""
    run = channel.context.transformed(method)

    @functools.wraps(method)
    def overlay(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        target = getattr(self, "_target", None)
        if target is None:
            return run(self, *args, **kwargs)
        self._target = channel.remote(target)
        try:
            return run(self, *args, **kwargs)
        except BaseException:
            self._target = target
            raise
    return overlay


def _bootstrap(channel: Channel, method: types.FunctionType) -> Overlay:
    """``Process._bootstrap`` (reached under the context only in a child forked from code
    running under it): the child's process machinery runs natively from here, and a
    ``Remote`` target runs under the plugins it carries."""
    @functools.wraps(method)
    def overlay(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        target = getattr(self, "_target", None)
        if isinstance(target, Remote):
            self._target = entered(target.ticket, target.fn)
        return method(self, *args, **kwargs)
    return overlay


#: (module, qualified name) of the methods that send work to other processes -> overlay
#: factory, or the ``module:name`` of one (an integration with a library splice does not
#: depend on: imported when that library's method is first called under a context)
STARTERS: dict[tuple[str, str], Callable[[Channel, types.FunctionType], Overlay] | str] = {
    ("concurrent.futures.process", "ProcessPoolExecutor.submit"): function_first,
    **{("multiprocessing.pool", f"Pool.{name}"): function_first for name in (
        "apply", "apply_async", "map", "map_async", "starmap", "starmap_async", "imap",
        "imap_unordered")},
    ("multiprocessing.process", "BaseProcess.start"): _process_start,
    ("multiprocessing.process", "BaseProcess._bootstrap"): _bootstrap,
    ("distributed.client", "Client.submit"): "splice.integrations.dask:send_function",
    ("distributed.client", "Client.map"): "splice.integrations.dask:send_function",
}


def starter(fn: types.FunctionType) -> Callable[[Channel, types.FunctionType], Overlay] | None:
    """The overlay factory for ``fn`` if it sends work to other processes."""
    module = fn.__module__
    if module is None or not module.startswith(_MACHINERY):
        return None
    found = STARTERS.get((module, fn.__qualname__))
    if isinstance(found, str):
        where, _, name = found.partition(":")
        found = getattr(importlib.import_module(where), name)
    return found

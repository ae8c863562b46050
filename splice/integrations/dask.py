"""Dask: the tasks a program submits to a ``distributed`` cluster from code running under
a plugin run on the workers under copies of that plugin, and what the copies collect comes
back to it.

Nothing to call: under a context, ``Client.submit`` and ``Client.map`` are overlays (found
through ``splice.runtime.processes.STARTERS``) that send the task's function as a
``Remote``, as for a process pool. Dask pickles it with the task; a worker unpickles the
function entered under a copy of the context's plugins (made once per worker process) and
runs it in its task threads. The task's key is made from the function's name, as natively.

Reports come back when the client closes: a cluster's workers may be on other machines,
where the spool directory of a process pool does not exist, so the client pulls them from
every worker with ``Client.run`` and merges them into the plugins. ``close`` is often
called from code that runs natively (``with Client(...)`` calls ``__exit__`` implicitly),
so the first task sent through a client shadows its ``close`` with an instance attribute
that pulls the reports, removes itself and closes the client.

Functions Dask pickles *by value* (those of ``__main__``: a script's, a notebook's cells')
reach the workers without their file: Dask pickles them with ``cloudpickle``, which names
their code ``<dynamic-code>``. The task then carries the source texts such code may come
from (the main script, the notebook's cells, modules registered with
``cloudpickle.register_pickle_by_value``), and splice matches each function to its exact
definition in them (``splice.exec_sources``); without them those functions would run
natively. The texts travel with every task that sends such a function.

The scheduler unpickles a graph's tasks too, and sends them on: a task unpickled there
stays a ``Remote`` (``in_a_worker``), so it reaches the worker as it was sent.

Limits: graphs built with ``dask.delayed``, ``dask.array`` and the other collections
(``client.compute``, ``dask.compute``) run their task functions natively; an asynchronous
client's reports stay in the workers.
"""

from __future__ import annotations

import functools
import linecache
import sys
import types
from typing import Any

from splice.pristine import BUILTINS
from splice.runtime.processes import Channel, Overlay, take_reports

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


def send_function(channel: Channel, method: types.FunctionType) -> Overlay:
    """``Client.submit(fn, ...)``/``Client.map(fn, ...)`` with ``fn`` sent as a
    ``Remote``, and the client's ``close`` made to pull the workers' reports first."""
    run = channel.context.transformed(method)

    @functools.wraps(method)
    def overlay(client: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        sent = channel.remote(fn, _by_value_texts(fn), in_a_worker)
        if "close" not in vars(client) and not getattr(client, "asynchronous", False):
            _pull_reports_on_close(client, channel)
        return run(client, sent, *args, **kwargs)
    return overlay


def _pull_reports_on_close(client: Any, channel: Channel) -> None:
    close = client.close

    def close_after_reports(*args: Any, **kwargs: Any) -> Any:
        if vars(client).get("close") is close_after_reports:
            del vars(client)["close"]
        ticket = channel.ticket_if_sent()
        if ticket is not None and getattr(client, "status", None) == "running":
            found = client.run(take_reports, ticket.key, on_error="ignore")
            for reported in found.values():
                if isinstance(reported, tuple):
                    channel.merge(*reported)
        return close(*args, **kwargs)
    client.close = close_after_reports


def in_a_worker() -> bool:
    """Whether this process is a Dask worker's (which runs the tasks it unpickles), not the
    scheduler's (which unpickles a graph's tasks and sends them on to workers)."""
    worker = sys.modules.get("distributed.worker")
    return worker is not None and bool(getattr(worker.Worker, "_instances", ()))


def _by_value_texts(fn: Any) -> tuple[str, ...]:
    """The source texts the workers need for ``fn`` if Dask pickles it by value (its module
    is ``__main__``, or registered for it, or not importable): the main script's, every
    notebook cell's (``linecache`` entries never checked against a file) and the
    registered modules'; none otherwise."""
    target = fn.func if isinstance(fn, functools.partial) else fn
    module = getattr(target, "__module__", None)
    registered = _registered_by_value()
    if not isinstance(module, str) or not (
            module == "__main__" or module not in sys.modules or
            any(module == name or module.startswith(name + ".") for name in registered)):
        return ()
    paths = [getattr(sys.modules.get(name), "__file__", None)
             for name in ("__main__", *registered)]
    texts = ["".join(linecache.getlines(path)) for path in paths if isinstance(path, str)]
    texts += ["".join(entry[2]) for entry in list(linecache.cache.values())
              if len(entry) == 4 and entry[1] is None]
    return tuple(text for text in dict.fromkeys(texts) if text)


def _registered_by_value() -> list[str]:
    """Modules registered with ``cloudpickle.register_pickle_by_value``."""
    cloudpickle = sys.modules.get("cloudpickle")
    listing = getattr(cloudpickle, "list_registry_pickle_by_value", None)
    return sorted(listing()) if listing is not None else []

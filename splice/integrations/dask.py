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

Limits: graphs built with ``dask.delayed``, ``dask.array`` and the other collections
(``client.compute``, ``dask.compute``) run their task functions natively; an asynchronous
client's reports stay in the workers.
"""

from __future__ import annotations

import functools
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
        sent = channel.remote(fn)
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

"""A script whose task functions live in ``__main__`` (run by tests/test_dask.py as
``python dask_script.py ADDRESS native|tracer``, its scheduler in another process): Dask
pickles them by value. It maps the same functions from an importable module too
(``by_value_program``, pickled by reference): the two copies are the same code on purpose.
Prints a JSON line: the results, and under the Tracer the calls recorded in worker
processes."""

from __future__ import annotations

import collections
import json
import os
import sys

import distributed

from tests.runtime import by_value_program


def steps(n: int) -> int:
    count = 0
    while n != 1:
        n = following(n)
        count += 1
    return count


def following(n: int) -> int:
    return n // 2 if n % 2 == 0 else 3 * n + 1


def work(address: str) -> list[int]:
    with distributed.Client(address) as client:
        own = client.gather(client.map(steps, [6, 7, 27]))
        imported = client.gather(client.map(by_value_program.steps, [6, 7, 27]))
        return [*own, *imported]


if __name__ == "__main__":
    address, plugin = sys.argv[1:]
    report: dict[str, object] = {}
    if plugin == "tracer":
        from splice.plugins import Tracer

        tracer = Tracer()
        report["results"] = tracer.run(work, address)
        report["on_workers"] = collections.Counter(
            c.name for t in tracer.threads() if t.pid != os.getpid() for c in t.walk())
    else:
        report["results"] = work(address)
    print(json.dumps(report))

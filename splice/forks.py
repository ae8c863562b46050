"""splice's process-wide locks, usable in a child forked while another thread held one.

``os.fork`` copies only the thread that calls it: a lock that another thread held at that
moment stays held in the child, and the child's first use of it waits forever. A program
under a plugin forks from code that runs under the plugin (``multiprocessing``'s ``fork``
start method, ``ProcessPoolExecutor`` on Linux before 3.14) while other threads of it may be
inside splice (compiling, making a context); the child then goes on under a copy of the
plugin (``splice.runtime.processes``) and needs those same locks.

Each module-level lock of splice is made here (``fork_safe_lock()``,
``fork_safe_rlock()``) and made new in every forked child, as CPython does for its own
locks (``threading._after_fork``). What
such a lock guards changes in steps that are each a single dict or list operation, so a
child that inherits it mid-update sees a consistent state. Locks of objects that a child
goes on using are the owner's affair: the registry of code owners is forgotten in a child
(``splice.cache.owners``), so the child compiles into owners of its own; contexts and
plugins a child makes from a pickled copy have new locks.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

#: the locks made new in a forked child
_LOCKS: list[Any] = []


def fork_safe_lock() -> threading.Lock:
    """A ``threading.Lock`` made new in each forked child."""
    made = threading.Lock()
    _LOCKS.append(made)
    return made


def fork_safe_rlock() -> threading.RLock:
    """A ``threading.RLock`` made new in each forked child."""
    made = threading.RLock()
    _LOCKS.append(made)
    return made


def _after_fork_in_child() -> None:
    for held in _LOCKS:
        held._at_fork_reinit()


os.register_at_fork(after_in_child=_after_fork_in_child)

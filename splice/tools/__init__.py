"""Tools that exercise splice on real code.

* :mod:`splice.tools.corpus` — lower, verify, print, regenerate and round-trip every function
  of the pure-Python standard library (``python -m splice.tools.corpus``).
* :mod:`splice.tools.rebuild` — replace every function and method of a module by its
  round-tripped version, in place, restorably (``rebuild_module``).
* :mod:`splice.tools.cpython_tests` — run CPython's own test modules natively and with the
  module under test rebuilt, and compare the outcome of every test
  (``python -m splice.tools.cpython_tests``).
"""

from __future__ import annotations

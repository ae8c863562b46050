"""The pytest plugin splice registers (entry point ``pytest11``): the ``splice_patch``
fixture.

::

    def test_checkout_charges_once(splice_patch):
        charges = []
        splice_patch.replace(billing.charge, lambda amount, card: charges.append(amount))
        splice_patch.run(shop.checkout, cart)
        assert charges == [cart.total]

The fixture is a fresh :class:`splice.plugins.Patch` for each test. A Patch changes no global
state, so there is nothing to undo after the test, and tests that run in parallel threads
(or share module state) cannot see each other's replacements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from splice.plugins.patch import Patch

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["splice_patch"]


@pytest.fixture
def splice_patch() -> Patch:
    """A fresh ``splice.plugins.Patch``: ``replace``/``setattr`` what the test needs, then
    ``splice_patch.run(fn, ...)`` runs ``fn`` with the replacements in its call graph."""
    # imported here: pytest loads this module in every session, splice only when asked
    from splice.plugins.patch import Patch

    return Patch()

"""Code caches: transformed code per owner and code object, the world counter, backedges,
and code instances (``splice.compile``/``splice.invoke``, docs/instances.md)."""

from splice.cache.world import add_backedge, advance, invalidate, world

__all__ = ["add_backedge", "advance", "invalidate", "world"]

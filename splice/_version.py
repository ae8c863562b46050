"""The version of splice (a module of its own: the code cache names it in its entries)."""

__version__ = "0.1.0"

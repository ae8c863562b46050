"""The compiler: the pipeline from lowered IR to a code object, and its passes.

``pipeline`` builds code instances (the typed stages); ``lowered`` caches lowered IR;
``route_calls``, ``route_implicit`` and ``constructors`` are the passes that send calls,
implicit calls and instantiation through a context; ``optimize``, ``direct``, ``proven`` and
``checks`` are the typed passes. docs/architecture.md has the map.
"""

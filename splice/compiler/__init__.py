"""The compiler: one list of named stages from lowered IR to a code object, and its passes.

``stages`` holds the list (``STAGES``), the compile state and the runner; ``pipeline`` the
two drivers (``build_code`` for contexts, ``build_instance`` for code instances) and the
instance cache's builder; ``params`` the compiler's limits. The passes: ``lowered`` (the
lowered-IR cache), ``inference`` (argument loads, inference under the plugins'
interpreter), ``optimize``, ``direct``, ``proven`` and ``checks`` (typed passes),
``route_calls``, ``route_implicit`` and ``constructors`` (sending calls, implicit calls
and instantiation through a context). docs/architecture.md has the map.
"""

"""Running code under plugins: contexts, dispatch tables, call-site routing, overlays."""

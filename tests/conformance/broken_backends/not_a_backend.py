"""Unresolvable as module:attribute: BACKEND is not a conformance.Backend."""

BACKEND = {"name": "looks like a backend", "module": "reference"}

"""Copies of the reference backend with one deliberate deviation each.

Every module re-exports the reference (``from broken_backends._reference import *``)
and replaces one thing.  ``tests/conformance/test_broken_backends.py`` says which
check must catch each one and what its message must name.
"""

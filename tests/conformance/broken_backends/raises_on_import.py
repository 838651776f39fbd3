"""Unresolvable: importing it raises."""

raise RuntimeError("this backend cannot be imported")

"""Runs of code whose absent imports are stood in for (the crater's runs of plugin code):
how a failure says that an exception is the code's own, not a stand-in's."""

from __future__ import annotations

#: Said after where an exception was raised, where the backend's own line raised it with
#: no stand-in among its names (an index past a list of its own).
OWN_RAISE = "(by its own code, no stand-in at hand)"

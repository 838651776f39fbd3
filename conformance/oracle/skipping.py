"""How a check skips: with a cause the report records, so every skip says why.

``skip(cause, reason)`` is ``pytest.skip(reason)`` whose exception carries ``cause``, one
of the schema's skip causes (``conformance/report/schema.json``); the run reads it off the
exception (:mod:`conformance.run.session`) and the record keeps it as ``skip_cause``.
"""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from conformance.report.schema import SKIP_CAUSES

#: The attribute of a skip's exception that holds its cause.
CAUSE_ATTRIBUTE = "conformance_skip_cause"


def skip(cause: str, reason: str) -> NoReturn:
    """Skip the check for ``reason``; the report names ``cause`` (a schema skip cause)."""
    if cause not in SKIP_CAUSES:
        raise ValueError(f"{cause!r} is no skip cause of the report's schema")
    error = pytest.skip.Exception(reason)
    setattr(error, CAUSE_ATTRIBUTE, cause)
    raise error


def cause_of(error: Any) -> str | None:
    """The cause :func:`skip` gave ``error``, or None."""
    cause = getattr(error, CAUSE_ATTRIBUTE, None)
    return cause if isinstance(cause, str) else None

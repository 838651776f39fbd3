"""How a check skips: with a cause the report records, so every skip says why.

``skip(cause, reason)`` is ``pytest.skip(reason)`` whose exception carries ``cause``, one
of the schema's skip causes (``conformance/report/schema.json``); the run reads it off the
exception (:func:`conformance.report.records.skip_cause_of`) and the record keeps it as
``skip_cause``.
"""

from __future__ import annotations

from typing import NoReturn

from conformance.oracle.skipping import skip_for
from conformance.report.schema import SKIP_CAUSES


def skip(cause: str, reason: str) -> NoReturn:
    """Skip the check for ``reason``; the report names ``cause`` (a schema skip cause)."""
    if cause not in SKIP_CAUSES:
        raise ValueError(f"{cause!r} is no skip cause of the report's schema")
    skip_for(cause, reason)

"""A skip that carries its cause: the exception a check (or the backend call it makes)
raises, and the attribute the run reads the cause off (:func:`conformance.report.records.
skip_cause_of`).  Below the checks and the report, so both reach it."""

from __future__ import annotations

from typing import NoReturn

import pytest

#: The attribute of a skip exception naming its cause (a schema skip cause).
SKIP_CAUSE_ATTRIBUTE = "conformance_skip_cause"


def skip_for(cause: str, reason: str) -> NoReturn:
    """``pytest.skip(reason)`` carrying ``cause``, unchecked (see ``checks._skips.skip``)."""
    error = pytest.skip.Exception(reason)
    setattr(error, SKIP_CAUSE_ATTRIBUTE, cause)
    raise error

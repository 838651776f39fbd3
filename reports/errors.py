"""The one exception the report raises for bad input.

Every problem a user can fix (a missing folder, a truncated file, a commit
with no results) becomes a :class:`ReportInputError` that names the file and
the fix; the command line turns it into one line on stderr and exit code 2
(4 for a conformance report: :class:`ConformanceInputError`).
"""

from __future__ import annotations

import os
from pathlib import Path


class ReportInputError(Exception):
    """Input the report cannot use, with the file at fault and how to fix it."""

    def __init__(
        self, problem: str, *, path: str | os.PathLike[str] | None = None, fix: str
    ) -> None:
        self.problem = problem
        self.path = Path(path) if path is not None else None
        self.fix = fix
        where = f"{self.path}: " if self.path is not None else ""
        super().__init__(f"{where}{problem}. Fix: {fix}")


class ConformanceInputError(ReportInputError):
    """A conformance report the report cannot use (exit code 4, as for
    ``python -m conformance``'s usage errors): missing, corrupt, not a report, or
    of a schema version this reader does not know."""

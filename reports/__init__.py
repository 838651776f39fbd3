"""asv and conformance results -> pandas -> tables and plots.

Reads files only; never imports ``reference``, ``conformance`` or
``benchmarks`` (DESIGN section 2).

    >>> from reports import load_results, load_conformance
    >>> frame = load_results(".asv/results")          # doctest: +SKIP
"""

from __future__ import annotations

from reports.asv_loader import load_results
from reports.conformance_loader import load_conformance
from reports.errors import ReportInputError

__all__ = ["ReportInputError", "load_conformance", "load_results"]

"""asv and conformance results -> pandas -> tables and plots.

Reads files only; never imports ``reference``, ``conformance`` or
``benchmarks`` (DESIGN section 2).

Start at :mod:`.cli` (``python -m reports``): the loaders (:mod:`.asv_loader`,
:mod:`.conformance_loader`) make the frames, :mod:`.targets` and :mod:`.releases`
compute on them, :mod:`.content` puts the report's sections (:mod:`.sections`, one
module each) together as data, and :mod:`.render_markdown` and :mod:`.render_html`
write it.

    >>> from reports import load_results, load_conformance
    >>> frame = load_results(".asv/results")          # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

#: The distribution this package is part of (vllm_outputs_suite_guard reads this line).
__distribution__ = "vllm-outputs-suite"

# Imported on first use: ``reports.conformance_schema`` (read from the conformance
# writer's schema file) must be importable without pandas.
_LAZY = {
    "load_results": "reports.asv_loader",
    "load_conformance": "reports.conformance_loader",
    "ReportInputError": "reports.errors",
}

__all__ = ["ReportInputError", "load_conformance", "load_results"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'reports' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

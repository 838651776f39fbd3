"""What a report is built from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from reports.compare import Comparison


@dataclass
class ReportInput:
    frame: pd.DataFrame  # every loaded row
    current: pd.DataFrame  # the rows the report describes (one commit per machine)
    results_dir: str
    conformance: pd.DataFrame | None = None
    plots: Sequence[tuple[str, str, Path | None]] = ()
    comparison: Comparison | None = None
    machines: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The vLLM texts the conformance reports judged, and their bumps.
    vllm_changes: Sequence[Any] = ()

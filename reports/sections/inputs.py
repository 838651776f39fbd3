"""What a report is built from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from reports.compare import Comparison
from reports.conformance_diff import ConformanceDiff
from reports.conformance_matrix import Duplicate


@dataclass
class ReportInput:
    frame: pd.DataFrame  # every loaded row
    current: pd.DataFrame  # the rows the report describes (one commit per machine)
    results_dir: str
    conformance: pd.DataFrame | None = None
    plots: Sequence[tuple[str, str, Path | None]] = ()
    comparison: Comparison | None = None
    machines: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Per commit, the path the reference's hot loops took when measured.
    reference_paths: dict[str, str] = field(default_factory=dict)
    #: Conformance reports set aside as repeats of a newer one of the same key.
    conformance_duplicates: Sequence[Duplicate] = ()
    #: ``--conformance-diff``: what changed between two runs.
    conformance_changes: ConformanceDiff | None = None
    #: The vLLM texts the conformance reports judged, and their bumps.
    vllm_changes: Sequence[Any] = ()

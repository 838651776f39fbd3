"""The gather target at the memory floor: a tie at the machine's bandwidth is decided there."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from result_rows import result_row

from reports import catalog, content, render_markdown, targets
from reports.document import PASS, UNDECIDED
from reports.sections import target_tables, verdict

GATHER = next(t for t in catalog.TARGETS if t.key == "gather_vs_vllm")
BESIDE = "gather.GatherLogprobsBesideVllm"
DRAM_BOUND = (1024, 151936, 0)
IN_CACHE = (64, 32000, 5)


def _track(method: str, value: float, shape: tuple[int, int, int], backend: str = "reference"):
    num_tokens, vocabulary, num_logprobs = shape
    return result_row(
        f"{BESIDE}.{method}", value, backend=backend, kind="track", unit="ratio",
        num_tokens=num_tokens, vocabulary=vocabulary, num_logprobs=num_logprobs,
    )  # fmt: skip


def _frame(ratio: float, floor: float | None, floor_backend: str = "reference") -> pd.DataFrame:
    """A clear pass in cache, and a DRAM-bound shape at ``ratio`` to vLLM's (with its
    floor track at ``floor`` when given)."""
    rows = [
        _track("track_gather_ratio_to_vllm", 0.6, IN_CACHE),
        _track("track_gather_ratio_to_read_floor", 1.9, IN_CACHE),
        _track("track_gather_ratio_to_vllm", ratio, DRAM_BOUND),
    ]
    if floor is not None:
        rows.append(_track("track_gather_ratio_to_read_floor", floor, DRAM_BOUND, floor_backend))
    return pd.DataFrame(rows)


def _verdict(frame: pd.DataFrame) -> pd.Series:
    (row,) = targets.verdicts(targets.measurements(frame, GATHER), GATHER).itertuples()
    return row


DRAM_SHAPE = "num_tokens=1024, vocabulary=151936, num_logprobs=0"


def test_a_tie_at_the_memory_floor_is_decided_as_a_pass() -> None:
    row = _verdict(_frame(ratio=0.98, floor=1.02))
    assert row.status == targets.PASSED
    assert row.at_floor_shapes == [DRAM_SHAPE] and row.too_close_shapes == []


@pytest.mark.parametrize(
    ("ratio", "floor", "floor_backend", "why"),
    [
        (0.98, None, "reference", "no floor measured"),
        (0.98, 1.30, "reference", "ours well above one plain read"),
        (0.98, 1.00, "other", "the floor of another backend"),
        (1.03, 1.00, "reference", "the median misses the limit"),
    ],
)
def test_a_close_shape_stays_too_close_unless_ours_is_at_the_floor_and_meets_the_limit(
    ratio: float, floor: float | None, floor_backend: str, why: str
) -> None:
    row = _verdict(_frame(ratio, floor, floor_backend))
    assert row.status == targets.UNDECIDED, why
    assert row.too_close_shapes == [DRAM_SHAPE] and row.at_floor_shapes == []


def test_a_clear_miss_fails_whatever_the_floor() -> None:
    row = _verdict(_frame(ratio=1.4, floor=1.0))
    assert row.status == targets.FAILED and row.at_floor_shapes == []


def test_the_report_says_which_shapes_the_floor_decided() -> None:
    frame = _frame(ratio=0.98, floor=1.02)
    data = content.ReportInput(frame=frame, current=frame, results_dir="r")
    items = verdict.verdict_section(data).blocks[0].items  # type: ignore[attr-defined]
    gather = next(v for v in items if v.subject == GATHER.title)
    assert gather.status == PASS
    assert f"1 shape(s) decided at the memory floor, {DRAM_SHAPE}" in gather.detail
    table = render_markdown.render(content.Report("t", [target_tables.targets_section(frame)]))
    assert "| decided at the memory floor |" in table
    assert "| 1 | **PASS** |" in table  # one shape decided there, and the target passes

    close = _frame(ratio=0.98, floor=1.3)
    data = content.ReportInput(frame=close, current=close, results_dir="r")
    items = verdict.verdict_section(data).blocks[0].items  # type: ignore[attr-defined]
    assert next(v for v in items if v.subject == GATHER.title).status == UNDECIDED


def test_the_floor_decides_only_a_slowdown_allowance() -> None:
    with pytest.raises(ValueError, match="only a slowdown allowance"):
        catalog.RatioTarget(
            key="k",
            title="t",
            family=catalog.GATHER,
            baseline=re.compile("b"),
            subject=re.compile("s"),
            limit=2.0,
            higher_is_better=True,
            ratio_label="x",
            floor=re.compile("f"),
        )

"""The decode step's memory target: a count of bytes, where a tie at the floor meets "at most"."""

from __future__ import annotations

import pandas as pd
import pytest
from result_rows import result_row

from reports import catalog, targets

MEMORY = next(t for t in catalog.TARGETS if t.key == "decode_step_memory_vs_vllm")
TARGETS = "decode_step.DecodeStepTargets"
ONE_TOKEN = (1024, 20, 0)
SPECULATIVE = (64, 20, 3)


def _track(method: str, value: float, shape: tuple[int, int, int]):
    num_reqs, num_logprobs, num_drafts = shape
    return result_row(
        f"{TARGETS}.{method}", value, backend="reference", kind="track", unit="ratio",
        num_reqs=num_reqs, num_logprobs=num_logprobs, num_drafts=num_drafts,
    )  # fmt: skip


def _verdict(ratio: float, floor: float | None) -> pd.Series:
    rows = [
        _track("track_decode_step_peak_bytes_ratio_to_vllm_0_33", 0.8, SPECULATIVE),
        _track("track_decode_step_peak_bytes_ratio_to_floor", float("nan"), SPECULATIVE),
        _track("track_decode_step_peak_bytes_ratio_to_vllm_0_33", ratio, ONE_TOKEN),
    ]
    if floor is not None:
        rows.append(_track("track_decode_step_peak_bytes_ratio_to_floor", floor, ONE_TOKEN))
    frame = pd.DataFrame(rows)
    (row,) = targets.verdicts(targets.measurements(frame, MEMORY), MEMORY).itertuples()
    return row


@pytest.mark.parametrize("ratio", [0.99, 1.0, 1.012])
def test_a_tie_with_ours_at_the_floor_passes(ratio: float) -> None:
    row = _verdict(ratio, floor=1.02)
    assert row.status == targets.PASSED and row.passed
    assert len(row.at_floor_shapes) == 1 and row.too_close_shapes == []


def test_a_tie_with_ours_above_the_floor_stays_too_close() -> None:
    row = _verdict(1.012, floor=1.3)
    assert row.status == targets.UNDECIDED
    assert len(row.too_close_shapes) == 1


@pytest.mark.parametrize("floor", [1.01, None])
def test_a_clear_miss_fails_at_the_floor_or_not(floor: float | None) -> None:
    row = _verdict(1.2, floor=floor)
    assert row.status == targets.FAILED and not row.passed and row.failing == 1


def test_the_gather_target_still_asks_a_tie_to_meet_its_limit() -> None:
    gather = next(t for t in catalog.TARGETS if t.key == "gather_vs_vllm")
    assert not gather.tie_at_floor_meets_limit and MEMORY.tie_at_floor_meets_limit

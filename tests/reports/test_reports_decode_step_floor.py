"""The decode step's two time targets of 0.34.0: within 1.2x of the floor of copies and
wait at every shape, and at most 0.5x of vLLM's own wherever that is at least 2x it."""

from __future__ import annotations

import pandas as pd
from result_rows import result_row

from reports import catalog, targets
from reports.document import Paragraph
from reports.sections.target_tables import targets_section

NEWEST = "decode_step.DecodeStepNewestTargets"
TO_FLOOR = next(t for t in catalog.TARGETS if t.key == "decode_step_vs_floor")
TO_VLLM = next(t for t in catalog.TARGETS if t.key == "decode_step_vs_vllm_0_34")
ONE_TOKEN = (1, 0, 0)
SPECULATIVE = (1024, -1, 3)


def _track(method: str, value: float, shape: tuple[int, int, int]) -> dict[str, object]:
    num_reqs, num_logprobs, num_drafts = shape
    return result_row(
        f"{NEWEST}.{method}", value, backend="reference", kind="track", unit="ratio",
        num_reqs=num_reqs, num_logprobs=num_logprobs, num_drafts=num_drafts,
    )  # fmt: skip


def _verdict(rows: list[dict[str, object]], target: catalog.RatioTarget) -> pd.Series:
    frame = pd.DataFrame(rows)
    (row,) = targets.verdicts(targets.measurements(frame, target), target).itertuples()
    return row


def test_the_floor_target_reads_ours_over_the_copies_and_wait_at_every_shape() -> None:
    on_floor = "track_decode_step_ratio_to_copies_floor_0_34"
    row = _verdict([_track(on_floor, 1.1, ONE_TOKEN), _track(on_floor, 1.6, SPECULATIVE)], TO_FLOOR)
    assert row.status == targets.FAILED and row.failing == 1 and row.shapes == 2
    assert row.worst_ratio == 1.6 and "num_reqs=1024" in row.worst_shape
    row = _verdict([_track(on_floor, 1.1, ONE_TOKEN), _track(on_floor, 1.0, SPECULATIVE)], TO_FLOOR)
    assert row.status == targets.PASSED and row.shapes == 2
    # vLLM's own step over the floor is another track of the same class: not ours.
    vllms = "track_vllm_0_34_ratio_to_copies_floor"
    row = _verdict([_track(on_floor, 1.1, ONE_TOKEN), _track(vllms, 3.0, ONE_TOKEN)], TO_FLOOR)
    assert row.shapes == 1 and row.status == targets.PASSED


def _to_vllm(ratios: tuple[float, float], vllm_over_floor: tuple[float | None, float | None]):
    rows = []
    for shape, ratio, over in zip((ONE_TOKEN, SPECULATIVE), ratios, vllm_over_floor, strict=True):
        rows.append(_track("track_decode_step_ratio_to_vllm_0_34", ratio, shape))
        if over is not None:
            rows.append(_track("track_vllm_0_34_ratio_to_copies_floor", over, shape))
    return _verdict(rows, TO_VLLM)


def test_half_of_vllms_time_is_asked_only_where_vllm_takes_twice_the_floor() -> None:
    # One token: vLLM at 1.4x the floor, so ours at 0.8x of it is not judged.
    row = _to_vllm((0.8, 0.45), (1.4, 3.3))
    assert row.status == targets.PASSED and row.shapes == 1
    assert "num_reqs=1024" in row.worst_shape
    # From 2x the floor on, the shape is judged, and 0.8x misses it.
    row = _to_vllm((0.8, 0.45), (2.0, 3.3))
    assert row.status == targets.FAILED and row.shapes == 2 and row.failing == 1


def test_a_shape_without_vllms_ratio_to_the_floor_stays_judged() -> None:
    row = _to_vllm((0.8, 0.45), (None, 3.3))
    assert row.status == targets.FAILED and row.shapes == 2


def test_the_report_says_where_the_half_is_asked() -> None:
    frame = pd.DataFrame(
        [
            _track("track_decode_step_ratio_to_vllm_0_34", 0.45, SPECULATIVE),
            _track("track_vllm_0_34_ratio_to_copies_floor", 3.3, SPECULATIVE),
        ]
    )
    texts = [b.text for b in targets_section(frame).blocks if isinstance(b, Paragraph)]
    assert any(
        "Judged only where vLLM 0.34.0's own time over the copies and the wait alone" in text
        and "`track_vllm_0_34_ratio_to_copies_floor`) is at least 2x" in text
        for text in texts
    )

"""Targets and --compare on hand-made frames: exact ratios, both directions."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from result_rows import TOLISTS_VS_NDARRAY

from reports import catalog, targets
from reports.compare import IMPROVED, NOISE, REGRESSED, UNCHANGED, compare
from reports.errors import ReportInputError
from reports.units import format_seconds, higher_is_better

UNPAD = next(t for t in catalog.TARGETS if t.key == "unpad_speedup")
TOLISTS = TOLISTS_VS_NDARRAY


def _row(benchmark: str, value: float, *, unit: str = "seconds", kind: str = "time", **params):
    base = {
        "benchmark": benchmark,
        "device": params.pop("device", "cpu"),
        "value": value,
        "unit": unit,
        "status": "ok",
        "type": kind,
        "params": ", ".join(f"{k}={v}" for k, v in params.items()),
        "commit": params.pop("commit", "a" * 40),
        "date": pd.Timestamp("2025-10-01", tz="UTC"),
        "machine": params.pop("machine", "m1"),
        "env": "existing",
        "version_mismatch": False,
        "ci_99_a": params.pop("ci_99_a", float("nan")),
        "ci_99_b": params.pop("ci_99_b", float("nan")),
    }
    base["params"] = ", ".join(f"{k}={v}" for k, v in params.items())
    return {**base, **params}


def _frame(*rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def test_unpad_pairs_our_time_with_vllms_on_the_same_shape():
    frame = _frame(
        _row("padding.Unpad.time_unpad_sampled_token_ids", 1.0, backend="reference", num_reqs=16),
        _row("padding.Unpad.time_unpad_vllm_mask_per_row", 3.0, backend="reference", num_reqs=16),
        _row("padding.Unpad.time_unpad_sampled_token_ids", 1.0, backend="reference", num_reqs=256),
        _row("padding.Unpad.time_unpad_vllm_mask_per_row", 1.5, backend="reference", num_reqs=256),
        _row("padding.Pad.time_pad_sampled_token_ids", 9.0, backend="reference", num_reqs=16),
    )
    pairs = targets.pairs(frame, UNPAD)
    assert sorted(pairs["ratio"]) == [1.5, 3.0]
    assert dict(zip(pairs["shape"], pairs["passed"], strict=True)) == {
        "backend=reference, num_reqs=16": True,
        "backend=reference, num_reqs=256": False,
    }
    verdict = targets.verdicts(pairs, UNPAD)
    record = verdict.to_dict("records")[0]
    # Two separate timings have no interval of their ratio.
    assert all(math.isnan(bound) for bound in record.pop("worst_ci"))
    assert record | {"measured_by": ""} == {
        "machine": "m1",
        "device": "cpu",
        "backend": "reference",
        "shapes": 2,
        "failing": 1,
        "worst_ratio": 1.5,
        "worst_shape": "backend=reference, num_reqs=256",
        "passed": False,
        "measured_by": "",
        "status": targets.FAILED,
        "too_close_shapes": [],
        "at_floor_shapes": [],
        # Two time_ benchmarks paired: their medians were timed apart.
        "timed_apart": True,
    }


def test_a_backend_called_vllm_is_not_mistaken_for_the_baseline():
    frame = _frame(
        _row("padding.Unpad.time_unpad_sampled_token_ids", 1.0, backend="vllm", num_reqs=16),
        _row("padding.Unpad.time_unpad_vllm_mask_per_row", 2.5, backend="vllm", num_reqs=16),
    )
    pairs = targets.pairs(frame, UNPAD)
    assert list(pairs["ratio"]) == [2.5]


def test_direct_ratio_track_is_preferred_over_separate_timings():
    frame = _frame(
        _row("tolists.ToLists.time_tolists", 1.0, num_tokens=64),
        _row("tolists.ToLists.time_ndarray_tolist", 1.0, num_tokens=64),
        _row(
            "tolists.ToLists.track_tolists_vs_ndarray_tolist",
            1.3,
            unit="ratio",
            kind="track",
            num_tokens=64,
        ),
    )
    measured = targets.measurements(frame, TOLISTS)
    assert list(measured["ratio"]) == [1.3]
    assert list(measured["passed"]) == [False]  # 1.3 > 1.2 allowed
    # Without the track, the timings pair up (ratio 1.0: passes).
    fallback = targets.measurements(frame.iloc[:2], TOLISTS)
    assert list(fallback["ratio"]) == [1.0] and list(fallback["passed"]) == [True]
    # The verdict says which it is: the track timed both sides, the fallback did not.
    assert list(targets.verdicts(measured, TOLISTS)["timed_apart"]) == [False]
    assert list(targets.verdicts(fallback, TOLISTS)["timed_apart"]) == [True]


def test_a_track_with_samples_says_how_steady_its_ratio_is():
    def track(ratio: float, low: float, high: float, num_tokens: int) -> dict:
        return _row(
            "tolists.ToLists.track_tolists_vs_ndarray_tolist",
            ratio,
            unit="ratio",
            kind="track",
            num_tokens=num_tokens,
            ci_99_a=low,
            ci_99_b=high,
        )

    frame = _frame(track(0.9, 0.85, 0.95, 64), track(1.1, 1.05, 1.25, 1024))
    verdict = targets.verdicts(targets.measurements(frame, TOLISTS), TOLISTS).iloc[0]
    assert bool(verdict["passed"])
    assert verdict["worst_ratio"] == 1.1 and verdict["worst_ci"] == (1.05, 1.25)
    # Only the shape whose interval holds the limit (1.2) could go either way.
    assert verdict["too_close_shapes"] == ["num_tokens=1024"]


def test_tolists_with_cu_is_not_held_to_the_plain_tolists_target():
    frame = _frame(
        _row("tolists.ToLists.time_tolists_with_cu", 5.0, num_tokens=64),
        _row("tolists.ToLists.time_ndarray_tolist", 1.0, num_tokens=64),
    )
    assert targets.pairs(frame, TOLISTS).empty


def test_no_matching_benchmarks_is_no_data_not_an_error():
    frame = _frame(_row("slice.Slice.time_slice", 1.0, num_reqs=4))
    for target in catalog.TARGETS:
        assert targets.verdicts(targets.measurements(frame, target), target).empty


def _transfer_row():
    """A transfer of 4096 tokens with 20 logprobs: its payload follows from its shape."""
    return _row(
        "transfer.TransferBandwidth.track_bandwidth",
        10.0,
        unit="GB/s",
        kind="track",
        num_tokens=4096,
        num_logprobs=20,
    )


def test_payload_bytes_follow_the_logprobs_layout():
    frame = _frame(
        _transfer_row(),
        _row("tolists.ToLists.time_tolists", 1.0, num_tokens=4096, num_logprobs=20),
    )
    out = catalog.with_payload_bytes(frame)
    # ids int32 + logprobs float32 over 21 columns, plus an int64 rank per row.
    assert out["payload_bytes"].iloc[0] == 4096 * (21 * 8 + 8)
    assert pd.isna(out["payload_bytes"].iloc[1])  # not a transfer


def test_a_plain_copys_own_payload_is_kept_beside_the_logprobs_ones():
    frame = _frame(
        _transfer_row(),
        _row("link.LinkBandwidth.track_gbps", 50.0, unit="GB/s", kind="track", payload_bytes=4096),
    )
    out = catalog.with_payload_bytes(frame)
    assert out["payload_bytes"].tolist() == [4096 * (21 * 8 + 8), 4096]
    assert catalog.TRANSFER.rows(out)["benchmark"].str.startswith("link.").sum() == 1


@pytest.mark.parametrize(
    ("unit", "higher"),
    [
        ("GB/s", True),
        ("speedup", True),
        ("seconds", False),
        ("ns/element", False),
        ("ratio", False),
        # A share of the link, or of a pinned copy, reached: less is a regression.
        ("fraction", True),
        (None, False),
    ],
)
def test_which_way_is_better(unit, higher):
    assert higher_is_better(unit) is higher


def test_compare_directions_and_threshold():
    a, b = "a" * 40, "b" * 40
    frame = _frame(
        _row("t.T.time_x", 1.0, commit=a),
        _row("t.T.time_x", 1.2, commit=b),  # 20 % slower: regression
        _row("t.T.track_gbps", 50.0, unit="GB/s", kind="track", commit=a),
        _row("t.T.track_gbps", 60.0, unit="GB/s", kind="track", commit=b),  # faster: improvement
        _row("t.T.time_y", 1.0, commit=a),
        _row("t.T.time_y", 1.05, commit=b),  # within 10 %
    )
    table = compare(frame, "aaaa", "bbbb", threshold=0.10).table.set_index("benchmark")
    assert table.loc["t.T.time_x", "change"] == REGRESSED
    assert table.loc["t.T.track_gbps", "change"] == IMPROVED
    assert table.loc["t.T.time_y", "change"] == UNCHANGED
    relaxed = compare(frame, "aaaa", "bbbb", threshold=0.25)
    assert relaxed.regressions.empty


def test_a_slowdown_inside_overlapping_confidence_intervals_is_noise():
    a, b = "a" * 40, "b" * 40
    frame = _frame(
        _row("t.T.time_x", 1.0, commit=a, ci_99_a=0.8, ci_99_b=1.3),
        _row("t.T.time_x", 1.2, commit=b, ci_99_a=1.1, ci_99_b=1.4),  # overlaps A's
        _row("t.T.time_y", 1.0, commit=a, ci_99_a=0.95, ci_99_b=1.05),
        _row("t.T.time_y", 1.2, commit=b, ci_99_a=1.15, ci_99_b=1.25),  # apart: real
    )
    table = compare(frame, "aaaa", "bbbb").table.set_index("benchmark")
    assert table.loc["t.T.time_x", "change"] == NOISE
    assert table.loc["t.T.time_y", "change"] == REGRESSED


def test_compare_without_shared_results_is_bad_input():
    frame = _frame(
        _row("t.T.time_x", 1.0, commit="a" * 40), _row("t.T.time_z", 1.0, commit="b" * 40)
    )
    with pytest.raises(ReportInputError, match="no benchmark result in common"):
        compare(frame, "aaaa", "bbbb")


@pytest.mark.parametrize(
    ("value", "text"), [(1.5e-9, "1.5 ns"), (2.5e-6, "2.5 µs"), (0.25, "250 ms"), (3.0, "3 s")]
)
def test_format_seconds_picks_the_scale(value, text):
    assert format_seconds(value) == text


def test_unpad_is_held_against_each_of_vllms_ways_separately():
    parse_output = next(t for t in catalog.TARGETS if t.key == "unpad_vs_parse_output")
    frame = _frame(
        _row("padding.Unpad.time_unpad_sampled_token_ids", 1.0, backend="reference", num_reqs=16),
        _row("padding.Unpad.time_unpad_vllm_mask_per_row", 3.0, backend="reference", num_reqs=16),
        _row(
            "padding.UnpadBesideVllm.time_unpad_vllm_parse_output",
            1.5,
            backend="reference",
            num_reqs=16,
        ),
    )
    assert list(targets.pairs(frame, UNPAD)["ratio"]) == [3.0]
    assert list(targets.pairs(frame, parse_output)["ratio"]) == [1.5]
    # Where the run timed the ratio interleaved, each target takes its own.
    frame = _frame(
        _row("padding.Unpad.track_unpad_speedup_over_vllm", 2.5, kind="track", unit="speedup",
             backend="reference", num_reqs=16),
        _row("padding.UnpadBesideVllm.track_unpad_speedup_over_vllm_parse_output", 4.0,
             kind="track", unit="speedup", backend="reference", num_reqs=16),
    )  # fmt: skip
    assert list(targets.measurements(frame, UNPAD)["ratio"]) == [2.5]
    assert list(targets.measurements(frame, parse_output)["ratio"]) == [4.0]


def test_a_vllm_release_timed_beside_the_backends_is_not_judged_by_the_targets():
    """nox -s bench-releases times vLLM's releases beside the reference: a release timed
    against vLLM's own way cannot be 2x faster than it, and is no backend under test."""
    track = "padding.Unpad.track_unpad_speedup_over_vllm"
    frame = _frame(
        _row(track, 2.5, kind="track", unit="speedup", backend="reference", num_reqs=16),
        _row(track, 1.0, kind="track", unit="speedup", backend="vllm-release:0.10.2",
             num_reqs=16),
    )  # fmt: skip
    verdict = targets.verdicts(targets.measurements(frame, UNPAD), UNPAD)
    assert list(verdict["backend"]) == ["reference"]
    assert list(verdict["status"]) == [targets.PASSED]


@pytest.mark.parametrize(
    ("ratios", "status"),
    [
        ((1.0, 1.1), targets.PASSED),  # every shape clearly under 1.2
        ((1.0, 1.4), targets.FAILED),  # one clearly over
        ((1.0, 1.22), targets.UNDECIDED),  # over, by less than processes disagree
        ((1.0, 1.18), targets.UNDECIDED),  # under, by as little
        ((1.22, 1.4), targets.FAILED),  # a clear miss decides, whatever the close one
    ],
)
def test_a_ratio_closer_to_the_limit_than_runs_agree_is_not_a_verdict(ratios, status):
    frame = _frame(
        *(
            _row("tolists.ToLists.track_tolists_vs_ndarray_tolist", r, unit="ratio",
                 kind="track", num_tokens=n)
            for r, n in zip(ratios, (64, 1024), strict=True)
        )
    )  # fmt: skip
    verdict = targets.verdicts(targets.measurements(frame, TOLISTS), TOLISTS).iloc[0]
    assert verdict["status"] == status

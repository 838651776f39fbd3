"""Plots degrade to "no data" instead of failing when their benchmarks are absent."""

from __future__ import annotations

import pandas as pd

from reports import plots, summary
from reports.asv_loader import BASE_COLUMNS


def _slice_only() -> pd.DataFrame:
    rows = [
        {
            **dict.fromkeys(BASE_COLUMNS),
            "benchmark": "lists_slice.Slice.time_slice_per_request",
            "device": "cpu",
            "value": 1e-6 * n,
            "unit": "seconds",
            "status": "ok",
            "type": "time",
            "params": f"num_reqs={n}",
            "commit": "a" * 40,
            "date": pd.Timestamp("2025-10-01", tz="UTC"),
            "machine": "m1",
            "env": "existing",
            "version_mismatch": False,
            "num_reqs": n,
        }
        for n in (1, 64, 1024)
    ]
    return pd.DataFrame(rows)


def test_missing_families_give_no_plot_and_no_data_in_the_summary(tmp_path):
    frame = _slice_only()
    assert plots.bandwidth(frame, tmp_path) is None
    assert plots.tolists_ns(frame, tmp_path) is None
    assert plots.unpad_speedup(frame, tmp_path) is None
    assert plots.conformance_matrix(None, tmp_path) is None
    latency = plots.latency(frame, tmp_path)
    assert latency is not None and latency.stat().st_size > 10_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latency.png"]
    drawn = [(name, text, fn(frame, tmp_path)) for name, text, fn in plots.PLOTS]
    text = summary.render(
        summary.SummaryInput(frame=frame, current=frame, results_dir="r", plots=drawn)
    )
    assert text.count("no data") >= 5  # 2 targets, GB/s, ns/element, 3 plots
    assert "`bandwidth.png`: no data" in text
    assert "| 1024 | 1.02 ms |" in text  # the latency table still has the slice numbers


def test_the_summary_says_why_a_target_has_no_data():
    frame = _slice_only()
    text = summary.render(summary.SummaryInput(frame=frame, current=frame, results_dir="r"))
    assert "no benchmark matching `unpad` has results" in text
    skipped = frame.assign(
        benchmark="padding.Unpad.track_unpad_speedup_over_vllm", status="skipped"
    )
    text = summary.render(summary.SummaryInput(frame=skipped, current=skipped, results_dir="r"))
    assert "its benchmarks were skipped everywhere" in text

"""Plots degrade to "no data" instead of failing when their benchmarks are absent."""

from __future__ import annotations

import pandas as pd

from reports import content, plots, render_markdown
from reports.asv_loader import BASE_COLUMNS


def _summary(data: content.ReportInput) -> str:
    return render_markdown.render(content.build(data))


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
    text = _summary(content.ReportInput(frame=frame, current=frame, results_dir="r", plots=drawn))
    assert text.count("no data") >= 5  # 2 targets, GB/s, ns/element, 3 plots
    assert "`bandwidth.png`: no data" in text
    assert "| 1024 | 1.02 ms |" in text  # the latency table still has the slice numbers


def test_the_summary_says_why_a_target_has_no_data():
    frame = _slice_only()
    text = _summary(content.ReportInput(frame=frame, current=frame, results_dir="r"))
    assert "no benchmark matching `unpad` has results" in text
    skipped = frame.assign(
        benchmark="padding.Unpad.track_unpad_speedup_over_vllm", status="skipped"
    )
    text = _summary(content.ReportInput(frame=skipped, current=skipped, results_dir="r"))
    assert "its benchmarks were skipped everywhere" in text


def _gpu_bandwidth() -> pd.DataFrame:
    rows = []
    for method, peak in (("pinned", 52.0), ("cpu", 26.0)):
        for tokens in (1, 256, 65536):
            rows.append(
                {
                    **dict.fromkeys(BASE_COLUMNS),
                    "benchmark": "transfer.TransferBandwidth.track_bandwidth",
                    "device": "cuda",
                    "value": peak * tokens / 65536,
                    "unit": "GB/s",
                    "status": "ok",
                    "type": "track",
                    "params": f"num_tokens={tokens}, num_logprobs=20, method='{method}'",
                    "commit": "a" * 40,
                    "date": pd.Timestamp("2025-10-01", tz="UTC"),
                    "machine": "h100",
                    "env": "existing",
                    "version_mismatch": False,
                    "num_tokens": tokens,
                    "num_logprobs": 20,
                    "method": method,
                }
            )
    return pd.DataFrame(rows)


def test_gpu_bandwidth_is_held_against_the_link_limit(tmp_path):
    frame = _gpu_bandwidth()
    path = plots.bandwidth(frame, tmp_path)
    assert path is not None and path.stat().st_size > 20_000
    text = _summary(content.ReportInput(frame=frame, current=frame, results_dir="r"))
    # 52 GB/s of 63 is 83 % of the link; 65536 tokens x (21 x 8 + 8) bytes = 11 MiB.
    assert (
        "| h100 | cuda | `TransferBandwidth.track_bandwidth` method=pinned | 52.00 | 11 MiB | 83% |"
        in text
    )
    assert (
        "Best device-to-host transfer: 52.0 GB/s on cuda@h100 = 83% of the PCIe Gen5 x16 limit"
        in text
    )


def test_a_link_rating_the_run_recorded_is_the_limit_it_is_held_against(tmp_path):
    """A run on a PCIe Gen6 host (OUTPUTS_LINK_GBPS=128) records the rating it measured
    against: the report's share of the link is of that, not of Gen5's 63 GB/s."""
    frame = _gpu_bandwidth()
    rating = {
        **frame.iloc[0].to_dict(),
        "benchmark": "link.LinkRating.track_rated_gbps",
        "value": 128.0,
        "unit": "GB/s rated",
        "params": "",
        "num_tokens": None,
        "num_logprobs": None,
        "method": None,
    }
    frame = pd.concat([frame, pd.DataFrame([rating])], ignore_index=True)
    text = _summary(content.ReportInput(frame=frame, current=frame, results_dir="r"))
    assert "| 52.00 | 11 MiB | 41% |" in text
    assert "= 41% of the rated link limit (128 GB/s)" in text
    assert "against the rated link limit (128 GB/s per direction)" in text


def _ns_per_element(num_logprobs: int = 5) -> pd.DataFrame:
    rows = [
        {
            **dict.fromkeys(BASE_COLUMNS),
            "benchmark": "tolists.ToLists.track_tolists_ns_per_element",
            "device": "cpu",
            "value": 2000.0 / tokens,
            "unit": "ns/element",
            "status": "ok",
            "type": "track",
            "params": f"backend='reference', num_tokens={tokens}, num_logprobs={num_logprobs}",
            "commit": "a" * 40,
            "date": pd.Timestamp("2025-10-01", tz="UTC"),
            "machine": "m1",
            "env": "existing",
            "version_mismatch": False,
            "backend": "reference",
            "num_tokens": tokens,
            "num_logprobs": num_logprobs,
        }
        for tokens in (1, 64, 1024)
    ]
    return pd.DataFrame(rows)


def test_min_and_max_name_only_the_axis_they_are_over():
    frame = _ns_per_element()
    text = _summary(content.ReportInput(frame=frame, current=frame, results_dir="r"))
    row = next(line for line in text.splitlines() if "track_tolists_ns_per_element" in line)
    # 2000 / tokens: the max is at one token, the min at 1024; num_logprobs and
    # the backend are the same on every row, so they say nothing about where.
    assert row.endswith("| 2.0 (num_tokens=1024) | 2000.0 (num_tokens=1) |"), row
    assert "num_logprobs" not in row and "backend" not in row

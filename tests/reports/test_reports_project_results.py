"""The report on results recorded from a real run of this project's benchmarks.

``fixtures/project-asv`` is what ``nox -s suite`` left in ``.asv/results`` on a
2-core CPU machine (one commit): only the cpu device ran, the accelerator
devices and the GB/s benchmarks skipped.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reports import load_results
from reports.cli import EXIT_OK, main

RESULTS = Path(__file__).parent / "fixtures" / "project-asv" / "results"


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return load_results(RESULTS, None)


def test_every_benchmark_of_the_suite_is_there_with_typed_parameters(frame):
    names = set(frame["benchmark"])
    assert {
        "padding.Unpad.track_unpad_speedup_over_vllm",
        "tolists.ToLists.track_tolists_vs_ndarray_tolist",
        "transfer.TransferBandwidth.track_bandwidth",
    } <= names
    assert frame["num_tokens"].dtype == "Int64"
    assert frame["num_reqs"].dtype == "Int64"
    assert set(frame["device"]) == {"cpu", "cuda", "mps", "xpu"}
    assert set(frame["method"].dropna()) == {"to_cpu_nonblocking", "cpu", "pinned"}
    # One row per parameter combination: e.g. Unpad is backend x 4 devices x 5 x 3.
    unpad = frame[frame["benchmark"] == "padding.Unpad.time_unpad_sampled_token_ids"]
    assert len(unpad) == len(unpad[["device", "num_reqs", "num_drafts"]].drop_duplicates()) == 60


def test_only_the_cpu_ran_and_the_rest_is_marked_skipped(frame):
    assert set(frame.loc[frame["status"] == "ok", "device"]) == {"cpu"}
    assert set(frame.loc[frame["device"] != "cpu", "status"]) == {"skipped"}
    bandwidth = frame[frame["benchmark"] == "transfer.TransferBandwidth.track_bandwidth"]
    assert set(bandwidth["status"]) == {"skipped"}  # no link on a CPU-only machine


def test_summary_of_the_real_run(frame, tmp_path):
    out = tmp_path / "out"
    assert main(["--quiet", "--results", str(RESULTS), "--out", str(out)]) == EXIT_OK
    text = (out / "summary.md").read_text(encoding="utf-8")
    speedups = frame.loc[
        (frame["benchmark"] == "padding.Unpad.track_unpad_speedup_over_vllm")
        & (frame["status"] == "ok"),
        "value",
    ]
    worst = speedups.min()
    unpad = next(line for line in text.splitlines() if line.startswith("- unpad_sampled"))
    assert ("**PASS**" in unpad) == (worst >= 2.0)
    assert f"worst {worst:.2f}x" in unpad
    # tolists() against ndarray.tolist() is measured, but no target any more.
    assert not any("of ndarray.tolist()" in line for line in text.splitlines())
    assert any("of torch's Tensor.tolist()" in line for line in text.splitlines())
    assert "skipped on every device here" in text  # why there is no GB/s
    assert "`bandwidth.png`: no data" in text
    for name in ("latency.png", "tolists_ns_per_element.png", "unpad_speedup.png"):
        assert (out / name).stat().st_size > 20_000, name

"""The loader and the command on results the installed asv writes now.

The other tests read results recorded from the same tiny project; this one
catches a change of asv's file format or API the recording would hide.
"""

from __future__ import annotations

from reports import load_results
from reports.cli import EXIT_OK, main


def test_installed_asv_results_load_with_typed_parameters(live_asv_project):
    frame = load_results(live_asv_project.results, None)
    # Unpad: 4 benchmarks x 2 devices x 2 sizes; ToLists: 2 x 2; time_plain.
    assert len(frame) == 4 * 2 * 2 + 2 * 2 + 1
    assert set(frame["machine"]) == {"m1"}
    assert set(frame["commit"]) == {live_asv_project.commit_1}
    assert frame["num_reqs"].dtype == "Int64"
    assert set(frame.loc[frame["device"] == "cuda", "status"]) == {"skipped"}
    speedups = frame[frame["benchmark"] == "bench_tiny.Unpad.track_unpad_speedup_over_vllm"]
    assert sorted(speedups.dropna(subset=["value"])["value"]) == [1.5, 3.0]


def test_installed_asv_results_make_a_report(live_asv_project, tmp_path):
    out = tmp_path / "out"
    assert (
        main(["--quiet", "--results", str(live_asv_project.results), "--out", str(out)]) == EXIT_OK
    )
    assert (out / "latency.png").stat().st_size > 10_000

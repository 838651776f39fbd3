"""Targets that hold on a GPU only (the fused gathering's): judged on cuda rows alone, and
a run without them says so rather than that nothing was timed."""

from __future__ import annotations

import pandas as pd
from result_rows import result_row

from reports import catalog, targets
from reports.sections import target_tables

ON_GPU = next(t for t in catalog.TARGETS if t.key == "gather_vs_vllm_on_gpu")
EVERYWHERE = next(t for t in catalog.TARGETS if t.key == "gather_vs_vllm")


def _ratio(value: float, device: str) -> dict[str, object]:
    row = result_row(
        "gather.GatherLogprobsBesideVllm.track_gather_ratio_to_vllm", value, kind="track",
        unit="ratio", num_tokens=64, vocabulary=151936, num_logprobs=5,
    )  # fmt: skip
    return {**row, "device": device}


def test_a_gpu_target_judges_only_the_gpus_rows() -> None:
    frame = pd.DataFrame([_ratio(0.9, "cpu"), _ratio(0.15, "cuda")])
    measured = targets.measurements(frame, ON_GPU)
    assert measured["device"].tolist() == ["cuda"] and measured["passed"].tolist() == [True]
    # The CPU's 0.9 meets the 1.0 everywhere, not the GPU's 0.2.
    assert targets.measurements(frame, EVERYWHERE)["passed"].tolist() == [True, True]
    frame = pd.DataFrame([_ratio(0.9, "cpu"), _ratio(0.3, "cuda")])
    assert targets.measurements(frame, ON_GPU)["passed"].tolist() == [False]


def test_a_cpu_run_says_the_gpu_target_was_not_measured() -> None:
    text = str(target_tables.targets_section(pd.DataFrame([_ratio(0.9, "cpu")])))
    assert "judged on cuda only (the fused Triton gathering's target" in text
    assert "which this run did not measure" in text

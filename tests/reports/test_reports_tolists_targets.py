"""The tolists target: torch's Tensor.tolist() at every shape, its per-call overhead
beside it; ndarray.tolist() is measured, no target (it never decided), and a target
judged from a size up keeps working (the mechanics, on the former ndarray target)."""

from __future__ import annotations

import pandas as pd
from result_rows import TOLISTS_VS_NDARRAY, result_row

from reports import catalog, content, render_html, render_markdown, targets
from reports.document import PASS, UNDECIDED
from reports.sections import target_tables, verdict

TORCH = next(t for t in catalog.TARGETS if t.key == "tolists_vs_torch")
NDARRAY = TOLISTS_VS_NDARRAY
BASELINES = "tolists.ToListsAgainstBaselines"


def _track(method: str, value: float, unit: str, num_tokens: int, backend: str = "reference"):
    return result_row(
        f"{BASELINES}.{method}", value, backend=backend, kind="track", unit=unit,
        num_tokens=num_tokens,
    )  # fmt: skip


def _frame() -> pd.DataFrame:
    rows = []
    # A fixed ~1.5 µs per call: 2.5x numpy's time at one token, 1.1x from 64 up.
    for n, vs_numpy, vs_torch, overhead in ((1, 2.5, 1.05, 1.5), (64, 1.1, 1.0, 1.6)):
        rows.append(_track("track_tolists_vs_ndarray_tolist", vs_numpy, "ratio", n))
        rows.append(_track("track_tolists_vs_torch_tolist", vs_torch, "ratio", n))
        rows.append(_track("track_tolists_overhead_over_ndarray_us", overhead, "us/call", n))
    return pd.DataFrame(rows)


def test_the_ndarray_target_is_judged_from_64_tokens_up() -> None:
    measured = targets.measurements(_frame(), NDARRAY)
    assert list(measured["num_tokens"]) == [64]
    verdict = targets.verdicts(measured, NDARRAY)
    assert verdict["passed"].all() and verdict["worst_ratio"].iloc[0] == 1.1


def test_the_torch_target_is_judged_at_every_shape() -> None:
    measured = targets.measurements(_frame(), TORCH)
    assert sorted(measured["num_tokens"]) == [1, 64]
    assert targets.verdicts(measured, TORCH)["worst_ratio"].iloc[0] == 1.05


def test_the_per_call_overhead_is_shown_beside_the_ratio() -> None:
    ranges = targets.overhead_us(_frame(), TORCH)
    assert ranges[["backend", "low_us", "high_us"]].values.tolist() == [["reference", 1.5, 1.6]]
    report = content.Report("t", [target_tables.targets_section(_frame())])
    text = render_markdown.render(report)
    assert "per-call overhead (µs)" in text
    assert "1.5 µs to 1.6 µs" in text


def test_ndarray_tolist_is_measured_but_no_target() -> None:
    assert not [t for t in catalog.TARGETS if t.baseline.search("time_ndarray_tolist")]
    text = render_markdown.render(content.Report("t", [target_tables.targets_section(_frame())]))
    assert "of ndarray.tolist()" not in text


def test_a_healthy_reference_with_a_fixed_per_call_cost_does_not_open_with_fail() -> None:
    data = content.ReportInput(frame=_frame(), current=_frame(), results_dir="r")
    verdicts = verdict.verdict_section(data).blocks[0].items  # type: ignore[attr-defined]
    tolists = [v for v in verdicts if "tolists()" in v.subject]
    assert len(tolists) == 1 and tolists[0].status == PASS
    assert "per-call overhead over the baseline 1.5 µs to 1.6 µs" in tolists[0].detail


def test_an_overhead_reads_as_plain_microseconds_and_a_negative_one_says_so() -> None:
    from reports.sections.formatting import fmt_us as _fmt_us

    assert _fmt_us(260.2) == "260 µs"  # not 2.6e+02
    assert _fmt_us(1.5) == "1.5 µs"
    assert _fmt_us(-200.4) == "-200 µs (cheaper than the baseline)"
    assert _fmt_us(float("nan")) == "n/a"


def test_the_verdict_and_the_table_say_how_steady_the_worst_ratio_was() -> None:
    frame = _frame()
    torch_rows = frame["benchmark"].str.endswith("track_tolists_vs_torch_tolist")
    frame.loc[torch_rows, "ci_99_a"] = [1.02, 0.97]
    frame.loc[torch_rows, "ci_99_b"] = [1.25, 1.03]
    data = content.ReportInput(frame=frame, current=frame, results_dir="r")
    verdicts = verdict.verdict_section(data).blocks[0].items  # type: ignore[attr-defined]
    torch_verdict = next(v for v in verdicts if "torch" in v.subject)
    # Every shape passes, but one's interval holds the limit: a rerun could turn it.
    assert torch_verdict.status == UNDECIDED
    assert "worst 1.05x (99% CI 1.02-1.25)" in torch_verdict.detail
    assert "1 shape(s) too close to call, num_tokens=1 (within 5%" in torch_verdict.detail
    table = render_markdown.render(content.Report("t", [target_tables.targets_section(frame)]))
    assert "| its 99% CI |" in table and "| 1.02-1.25 |" in table
    # Neither a pass nor a fail, in its own colour.
    page = render_html.render(content.Report("t", [verdict.verdict_section(data)]))
    assert (
        '<li class="undecided"><strong class="badge undecided">TOO CLOSE</strong> '
        "<strong>LogprobsTensors.tolists()"
    ) in page

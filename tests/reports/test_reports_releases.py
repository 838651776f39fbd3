"""The release-over-release view on a small synthetic results frame."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from result_rows import result_row

from reports import content, plots, releases, render_html, render_markdown
from reports.sections import release_view

SLICE = "lists_slice.Slice.time_slice_per_request"
PICKLE = "pickling.PickleModelRunnerOutput.time_dumps"
#: Median seconds of the slice benchmark per backend at num_reqs 1, 64, 1024.
SLICE_TIMES = {
    "reference": (1e-6, 10e-6, 100e-6),
    "vllm-release:0.10.2": (1e-6, 12e-6, 120e-6),
    "vllm-release:0.12.0": (2e-6, 8e-6, 90e-6),
    "vllm-release:0.13.0": (2e-6, 20e-6, 200e-6),  # 2.5x slower than 0.12.0 at 64
    "vllm-release:0.9.0": (5e-6, 50e-6, 500e-6),  # sorts first by version, not by text
}


def _row(benchmark: str, backend: str, value: float, **params: object) -> dict[str, object]:
    return result_row(benchmark, value, backend=backend, **params)


@pytest.fixture
def frame() -> pd.DataFrame:
    rows = [
        _row(SLICE, backend, value, num_reqs=n)
        for backend, values in SLICE_TIMES.items()
        for n, value in zip((1, 64, 1024), values, strict=True)
    ]
    rows += [
        _row(PICKLE, "reference", 4e-6, num_reqs=64, num_logprobs=5),
        _row(PICKLE, "vllm-release:0.12.0", 2e-6, num_reqs=64, num_logprobs=5),
    ]
    skipped = _row(SLICE, "vllm-release:0.11.0", float("nan"), num_reqs=64)
    skipped["status"] = "skipped"
    return pd.DataFrame([*rows, skipped])


def test_backends_sort_in_release_order_with_2025_10_after_0_11_0() -> None:
    backends = [
        "vllm-release:0.12.0",
        "my.plugin",
        "reference",
        "vllm-release:0.9.0",
        "reference@0.11.0",
        "vllm-release:0.11.1",
        "vllm-release:0.11.0",
        "vllm-release:0.10.2",
    ]
    assert releases.in_release_order(backends) == [
        "vllm-release:0.9.0",
        "vllm-release:0.10.2",
        "vllm-release:0.11.0",
        "reference@0.11.0",
        "reference",
        "vllm-release:0.11.1",
        "vllm-release:0.12.0",
        "my.plugin",
    ]


def test_representative_shapes_span_the_size_axis_at_the_middle_of_the_rest() -> None:
    rows = pd.DataFrame(
        [
            {"benchmark": "b", "num_tokens": t, "num_logprobs": k}
            for t in (1, 64, 1024, 8192)
            for k in (0, 5, 20)
        ]
    )
    assert releases.representative_shapes(rows) == [
        {"num_tokens": 1, "num_logprobs": 5},
        {"num_tokens": 64, "num_logprobs": 5},
        {"num_tokens": 8192, "num_logprobs": 5},
    ]
    one = pd.DataFrame([{"benchmark": "b", "num_reqs": 64, "num_logprobs": 5}])
    assert releases.representative_shapes(one) == [{"num_reqs": 64, "num_logprobs": 5}]


def test_each_backend_gets_its_median_and_ratio_to_the_reference(frame: pd.DataFrame) -> None:
    rows = releases.release_rows(frame)
    at_64 = rows[(rows["benchmark"] == SLICE) & (rows["shape"] == "num_reqs=64")]
    assert list(at_64["backend"]) == releases.in_release_order(SLICE_TIMES)
    ratios = dict(zip(at_64["backend"], at_64["ratio_to_reference"].round(6), strict=True))
    assert ratios == {
        "vllm-release:0.9.0": 5.0,
        "vllm-release:0.10.2": 1.2,
        "reference": 1.0,
        "vllm-release:0.12.0": 0.8,
        "vllm-release:0.13.0": 2.0,
    }
    # The skipped backend has no value, so no row.
    assert "vllm-release:0.11.0" not in set(rows["backend"])


def test_headline_names_the_fastest_release_and_the_worst_consecutive_step(
    frame: pd.DataFrame,
) -> None:
    by_benchmark = {h.benchmark: h for h in releases.headlines(releases.release_rows(frame))}
    slice_headline = by_benchmark[SLICE]
    assert slice_headline.shape == "num_reqs=64"
    assert slice_headline.fastest == "vllm-release:0.12.0"
    assert slice_headline.worst_step is not None
    before, after, ratio = slice_headline.worst_step
    assert (before, after) == ("vllm-release:0.12.0", "vllm-release:0.13.0")
    assert ratio == pytest.approx(2.5)
    assert by_benchmark[PICKLE].worst_step is None  # one release measured


def test_the_report_says_it_in_one_sentence_per_operation(frame: pd.DataFrame) -> None:
    section = release_view.release_section(frame)
    assert section is not None
    markdown = render_markdown.render(content.Report("t", [section]))
    assert (
        "`Slice.time_slice_per_request` (num_reqs=64, medians): fastest release 0.12.0 (8 µs); "
        "largest regression between consecutive releases 0.12.0 -> 0.13.0, 2.50x slower."
    ) in markdown
    assert "fastest release 0.12.0 (2 µs); only one release measured." in markdown
    assert "| vllm-release:0.13.0 | 2 µs (2.00x) | 20 µs (2.00x) | 200 µs (2.00x) |" in markdown
    html = render_html.render(content.Report("t", [section]))
    assert "largest regression between consecutive releases 0.12.0 -&gt; 0.13.0" in html


def test_one_backend_gives_no_release_view(frame: pd.DataFrame, tmp_path: Path) -> None:
    only_reference = frame[frame["backend"] == "reference"]
    assert not releases.several_backends(only_reference)
    assert release_view.release_section(only_reference) is None
    assert plots.release_latency(only_reference, tmp_path) is None


def test_the_plot_draws_a_panel_per_benchmark_with_several_backends(
    frame: pd.DataFrame, tmp_path: Path
) -> None:
    path = plots.release_latency(frame, tmp_path)
    assert path == tmp_path / "release_latency.png"
    assert path.read_bytes().startswith(b"\x89PNG")


def test_a_benchmark_measured_under_one_backend_stays_out_of_the_release_view(frame) -> None:
    # A run over many backends measures a baseline (or a producer only the
    # reference has) under one backend: no release over release to show.
    only_one = "padding.Unpad.time_unpad_sampled_token_ids"
    single = [_row(only_one, "reference", 2e-5, num_reqs=256, num_drafts=3)]
    rows = releases.release_rows(pd.concat([frame, pd.DataFrame(single)], ignore_index=True))
    assert only_one not in set(rows["benchmark"])
    assert {SLICE, PICKLE} <= set(rows["benchmark"])


SIDE = "side_by_side.SideBySide.track_ratio_to_partner"
SLICE_OPERATION = "Slice.time_slice_per_request(num_reqs=64)"
#: Interleaved with the reference: 0.12.0 -> 0.13.0 is the same code (1.0x) and
#: 0.10.2 -> 0.12.0 the real regression (3x), whatever the medians say.
SIDE_RATIOS = {
    "reference": 1.0,
    "vllm-release:0.9.0": 1.0,
    "vllm-release:0.10.2": 0.5,
    "vllm-release:0.12.0": 1.5,
    "vllm-release:0.13.0": 1.5,
}


def _side_row(backend: str, ratio: float, operation: str = SLICE_OPERATION) -> dict[str, object]:
    row = _row(SIDE, backend, ratio, operation=operation)
    row.update(unit="ratio", type="track")
    return row


@pytest.fixture
def with_side(frame: pd.DataFrame) -> pd.DataFrame:
    side = [_side_row(backend, ratio) for backend, ratio in SIDE_RATIOS.items()]
    # A malformed operation value is ignored, not a crash.
    side.append(_side_row("vllm-release:0.12.0", 9.0, operation="not an operation"))
    return pd.concat([frame, pd.DataFrame(side)], ignore_index=True)


def test_side_by_side_ratios_are_read_with_their_operation_and_shape(with_side) -> None:
    side = releases.side_by_side(with_side)
    assert set(side["operation"]) == {"Slice.time_slice_per_request"}
    assert set(side["shape"]) == {"num_reqs=64"}
    assert dict(zip(side["backend"], side["ratio"], strict=True)) == SIDE_RATIOS


def test_side_by_side_ratios_decide_the_headline_over_the_medians(with_side) -> None:
    rows = releases.release_rows(with_side)
    # The side-by-side track is a ratio, not a timing: no table of its own.
    assert SIDE not in set(rows["benchmark"])
    by_benchmark = {
        h.benchmark: h for h in releases.headlines(rows, releases.side_by_side(with_side))
    }
    headline = by_benchmark[SLICE]
    assert headline.side_by_side and headline.fastest_value is None
    assert headline.fastest == "vllm-release:0.10.2"
    assert headline.slowest == ("vllm-release:0.12.0", pytest.approx(3.0))
    assert headline.worst_step == ("vllm-release:0.10.2", "vllm-release:0.12.0", 3.0)
    # Without side-by-side ratios for it, a benchmark keeps the medians' verdict.
    assert not by_benchmark[PICKLE].side_by_side


def test_steps_are_quotients_of_ratios_to_the_same_partner(with_side) -> None:
    side = releases.side_by_side(with_side)
    assert releases.release_steps(side) == {
        "vllm-release:0.10.2": 0.5,
        "vllm-release:0.12.0": 3.0,
        "vllm-release:0.13.0": 1.0,
    }


def test_the_report_shows_each_step_side_by_side(with_side) -> None:
    section = release_view.release_section(with_side)
    assert section is not None
    markdown = render_markdown.render(content.Report("t", [section]))
    assert (
        "`Slice.time_slice_per_request` (num_reqs=64, side by side): fastest release 0.10.2, "
        "3.00x faster than the slowest, 0.12.0; largest regression between consecutive "
        "releases 0.10.2 -> 0.12.0, 3.00x slower."
    ) in markdown
    assert "step from the previous release, side by side (num_reqs=64) |" in markdown
    assert "| vllm-release:0.13.0 | 2 µs (2.00x) | 20 µs (2.00x) | 200 µs (2.00x) | 1.00x |" in (
        markdown
    )


@pytest.mark.parametrize(
    ("self_ratio", "said"),
    [
        # The reference against itself read 2.5x apart: the 3x spread says something, the
        # 3x step too; at 3.5x apart neither does.
        (2.5, "3.00x faster than the slowest, 0.12.0; largest regression between "
              "consecutive releases 0.10.2 -> 0.12.0, 3.00x slower."),
        (1 / 3.5, "every release within the run's noise (the reference against itself read "
                  "3.50x apart)."),
    ],
)  # fmt: skip
def test_a_release_sentence_says_nothing_the_runs_own_noise_could(
    with_side: pd.DataFrame, self_ratio: float, said: str
) -> None:
    """The reference timed side by side against itself shows how far apart the run put
    the same code: a spread or a step within that is no finding."""
    noisy = with_side.copy()
    own = (noisy["benchmark"] == SIDE) & (noisy["backend"] == "reference")
    noisy.loc[own, "value"] = self_ratio
    section = release_view.release_section(noisy)
    assert section is not None
    assert said in render_markdown.render(content.Report("t", [section]))


def test_the_side_by_side_plot_has_a_panel_per_operation(
    with_side: pd.DataFrame, frame: pd.DataFrame, tmp_path: Path
) -> None:
    path = plots.release_side_by_side(with_side, tmp_path)
    assert path == tmp_path / "release_side_by_side.png"
    assert path.read_bytes().startswith(b"\x89PNG")
    assert plots.release_side_by_side(frame, tmp_path / "none") is None

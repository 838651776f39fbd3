"""to_cpu_nonblocking() beside a plain pinned copy: a link's benchmark (skipped on CPU),
whose fraction is the pinned copy's time over ours, round by round."""

from __future__ import annotations

import itertools

import pytest

from benchmarks import transfer


def test_a_cpu_has_no_link_to_measure() -> None:
    with pytest.raises(NotImplementedError, match="cpu has no device-to-host link"):
        transfer.TransferBesidePinnedCopy().setup("reference", "cpu", 4096, 5)


def test_each_round_is_the_pinned_copys_time_over_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ours 2.0 ms then the pinned copy 1.9 ms, in turns: 95% of its rate every round.
    times = itertools.cycle([2.0e-3, 1.9e-3])
    timed = []

    def fake_seconds(device: str, call, repeats: int) -> float:
        timed.append(call)
        return next(times)

    monkeypatch.setattr(transfer, "median_device_seconds", fake_seconds)
    bench = transfer.TransferBesidePinnedCopy()
    bench.device = "cuda"
    result = bench.track_fraction_of_pinned_copy("reference", "cuda", 4096, 5)
    assert result["samples"] == pytest.approx([0.95] * bench.turns)
    assert len(timed) == 2 * bench.turns

"""The side-by-side timing of the targets: turns, blocks, and asv's sampled form.

The ways under test advance a fake clock by fixed amounts, so every number here is
exact whatever else runs on the machine.
"""

from __future__ import annotations

import pytest
from asv_runner.statistics import compute_stats

from benchmarks import interleaved


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.calls: list[str] = []

    def way(self, name: str, seconds: float, *, spoiled_every: int = 0):
        """A way that takes ``seconds`` per call (and every ``spoiled_every``-th call,
        100 times as long: another job took the core)."""
        count = 0

        def call() -> None:
            nonlocal count
            count += 1
            self.calls.append(name)
            spoiled = spoiled_every and count % spoiled_every == 0
            self.now += seconds * (100 if spoiled else 1)

        return call


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(interleaved.time, "perf_counter", lambda: fake.now)
    return fake


def test_ratio_samples_are_one_ratio_per_block_of_the_two_ways(clock: FakeClock) -> None:
    result = interleaved.ratio_samples(clock.way("a", 40e-6), clock.way("b", 20e-6), seconds=0.05)
    assert result["number"] == 1
    assert result["samples"] == pytest.approx([2.0] * interleaved.BLOCKS)


def test_the_ways_take_turns_sample_by_sample(clock: FakeClock) -> None:
    interleaved.block_minima(clock.way("a", 0.5e-3), clock.way("b", 0.5e-3), seconds=0.02)
    # Two calls make a sample of each (1 ms); the turns alternate after the warm-up.
    turns = [clock.calls[i] for i in range(0, len(clock.calls), 2)]
    assert turns == ["a", "b"] * (len(turns) // 2)


def test_a_spoiled_sample_does_not_move_the_ratio(clock: FakeClock) -> None:
    result = interleaved.ratio_samples(
        clock.way("a", 30e-6, spoiled_every=70), clock.way("b", 30e-6), seconds=0.25
    )
    # Each block keeps each way's best sample: interference only ever adds time.
    assert result["samples"] == pytest.approx([1.0] * interleaved.BLOCKS)


def test_asv_reads_the_samples_as_a_median_with_its_spread() -> None:
    result = interleaved.sampled([1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 1.02, 0.98, 1.01, 0.99])
    value, stats = compute_stats(result["samples"], result["number"])
    assert value == pytest.approx(interleaved.value_of(result)) == pytest.approx(1.0)
    assert stats["q_25"] <= value <= stats["q_75"]
    assert stats["ci_99_a"] <= value <= stats["ci_99_b"]
    assert stats["repeat"] == 10


def test_a_slow_call_still_gets_the_fewest_blocks_the_spread_needs(clock: FakeClock) -> None:
    minima = interleaved.block_minima(
        clock.way("slow", 0.01), clock.way("fast", 1e-6), seconds=0.001
    )
    assert len(minima) == interleaved.MIN_BLOCKS
    # A call longer than a sample is a sample: one warm-up, then one per block.
    assert clock.calls.count("slow") == 1 + interleaved.MIN_BLOCKS
    assert [best[0] for best in minima] == pytest.approx([0.01] * interleaved.MIN_BLOCKS)


def test_the_difference_is_scaled_per_block(clock: FakeClock) -> None:
    result = interleaved.difference_samples(
        clock.way("a", 50e-6), clock.way("b", 10e-6), 0.05, scale=1e6
    )
    assert interleaved.value_of(result) == pytest.approx(40.0)  # µs


def test_best_seconds_of_is_each_ways_best_over_every_block(clock: FakeClock) -> None:
    fast, slow = interleaved.best_seconds_of(
        clock.way("a", 10e-6, spoiled_every=250), clock.way("b", 100e-6), min_time=0.05
    )
    assert (fast, slow) == pytest.approx((10e-6, 100e-6))


def test_take_turns_fills_its_seconds_taking_turns_and_times_nothing(clock: FakeClock) -> None:
    # Powers of two: the fake clock's sums are exact.
    interleaved.take_turns(clock.way("a", 2**-10), clock.way("b", 2**-10), seconds=2**-3)
    assert clock.calls == ["a", "b"] * 64
    assert clock.now == 2**-3


@pytest.fixture
def dry_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.smoke import DRY_RUN_ENV_VAR

    monkeypatch.setenv(DRY_RUN_ENV_VAR, "1")


def test_a_dry_run_measures_one_round_and_warms_up_with_one_call_each(
    clock: FakeClock, dry_run: None
) -> None:
    # The smoke run keeps no number: each measurement runs every way, once.
    minima = interleaved.block_minima(clock.way("a", 1e-6), clock.way("b", 1e-6), seconds=1.0)
    assert len(minima) == 1
    clock.calls.clear()
    interleaved.take_turns(clock.way("a", 1e-6), clock.way("b", 1e-6), seconds=1.0)
    assert clock.calls == ["a", "b"]


@pytest.mark.parametrize("value", ["", "0", "false", "no"])
def test_a_dry_run_is_off_unless_switched_on(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from benchmarks.smoke import DRY_RUN_ENV_VAR

    monkeypatch.setenv(DRY_RUN_ENV_VAR, value)
    assert not interleaved.dry_run()
    monkeypatch.setenv(DRY_RUN_ENV_VAR, "1")
    assert interleaved.dry_run()

"""The side-by-side timing of the targets: turns, blocks, and asv's sampled form."""

from __future__ import annotations

import time

import pytest
from asv_runner.statistics import compute_stats

from benchmarks import interleaved


def _busy(seconds: float):
    def call() -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    return call


def test_ratio_samples_are_one_ratio_per_block_of_the_two_ways() -> None:
    result = interleaved.ratio_samples(_busy(40e-6), _busy(20e-6), seconds=0.05)
    assert result["number"] == 1
    assert len(result["samples"]) == interleaved.BLOCKS
    # Twice the work is about twice the time, whatever else runs here.
    assert 1.6 < interleaved.value_of(result) < 2.6


def test_asv_reads_the_samples_as_a_median_with_its_spread() -> None:
    result = interleaved.ratio_samples(_busy(30e-6), _busy(30e-6), seconds=0.05)
    value, stats = compute_stats(result["samples"], result["number"])
    assert value == pytest.approx(interleaved.value_of(result))
    assert stats["q_25"] <= value <= stats["q_75"]
    assert stats["ci_99_a"] <= value <= stats["ci_99_b"]
    assert stats["repeat"] == interleaved.BLOCKS


def test_a_slow_call_still_gets_the_fewest_blocks_the_spread_needs() -> None:
    calls = []

    def slow() -> None:
        calls.append(None)
        time.sleep(0.01)

    minima = interleaved.block_minima(slow, _busy(1e-6), seconds=0.001)
    assert len(minima) == interleaved.MIN_BLOCKS
    # A call longer than a sample is a sample: one warm-up, then one per block.
    assert len(calls) == 1 + interleaved.MIN_BLOCKS
    assert all(best[0] >= 0.01 for best in minima)


def test_the_difference_is_scaled_per_block() -> None:
    result = interleaved.difference_samples(_busy(50e-6), _busy(10e-6), 0.05, scale=1e6)
    assert 30 < interleaved.value_of(result) < 60  # µs


def test_best_seconds_of_is_each_ways_best_over_every_block() -> None:
    (fast, slow) = interleaved.best_seconds_of(_busy(10e-6), _busy(100e-6), min_time=0.05)
    assert 10e-6 <= fast < 30e-6
    assert 100e-6 <= slow < 150e-6

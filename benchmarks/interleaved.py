"""Timing ways side by side in one process: the targets' ratios and how steady they are.

A target is a ratio of two ways on the same data (ours over vLLM's, ours over
torch's ``tolist``).  Timed in two benchmarks, their ratio mixes two moments of the
machine; here the ways take turns, so both meet the same conditions.

Each turn is a *sample* of about a millisecond of calls: shorter than a scheduler
time slice, so when another job shares the core most samples still run
uninterrupted.  Samples are grouped in blocks; per block each way keeps its best
sample (interference only ever adds time).  A ratio benchmark reports the blocks'
ratios in asv's form of a sampled result (:func:`sampled`): asv keeps their median
as the value and their quartiles and 99% confidence interval beside it, which the
report shows as how steady the ratio was.  One slow call longer than a sample is a
sample of its own.

Wall time (``time.perf_counter``) by default: device work and torch's own threads
count.  Work that runs on the calling thread alone (the host conversions) is timed
by that thread's CPU time (:data:`THREAD_CPU`): while another job holds the core the
clock stops, so a call that is interrupted still measures its own work.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

from .smoke import DRY_RUN_ENV_VAR

#: Seconds of calls per sample (about; one call at least).
SAMPLE_SECONDS = 1e-3
Clock = Callable[[], float]
#: The calling thread's CPU time: for work that runs on that thread alone.
THREAD_CPU: Clock = time.thread_time
#: Blocks per measurement: the number of ratios asv gets.  Fewer (down to
#: ``MIN_BLOCKS``) only when the time asked for allows fewer rounds of samples.
BLOCKS = 10
MIN_BLOCKS = 5


def dry_run() -> bool:
    """Whether this is the smoke run (:data:`benchmarks.smoke.DRY_RUN_ENV_VAR`): every
    benchmark runs once to show it does not fail and no number is kept, so each
    measurement is one block of one round."""
    return os.environ.get(DRY_RUN_ENV_VAR, "").strip().lower() not in ("", "0", "false", "no")


def block_minima(
    *funcs: Callable[[], object], seconds: float, clock: Clock | None = None, blocks: int = BLOCKS
) -> list[list[float]]:
    """Per block, the best seconds per call of each of ``funcs``, taking turns.

    The garbage collector is off while timing, as in asv's ``time_`` benchmarks, so
    both kinds of result agree.  The first sample of each way (a warm-up) also tells
    how many calls make a sample; the rounds of samples then fill ``seconds``, with at
    least ``MIN_BLOCKS`` rounds whatever a call costs.  ``clock`` measures each sample
    (wall time when None); ``blocks``: the most blocks (ratios) to make.
    """
    clock = clock or time.perf_counter
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        calls = [_calls_per_sample(func, clock) for func in funcs]
        round_seconds = sum(n * per_call for n, per_call in calls)
        rounds = max(MIN_BLOCKS, int(seconds / round_seconds) if round_seconds else blocks)
        if dry_run():
            rounds = 1
        blocks = min(blocks, rounds)
        minima = []
        for _ in range(blocks):
            best = [math.inf] * len(funcs)
            for _ in range(rounds // blocks):
                for i, (func, (number, _)) in enumerate(zip(funcs, calls, strict=True)):
                    best[i] = min(best[i], _seconds_per_call(func, number, clock))
            minima.append(best)
        return minima
    finally:
        if was_enabled:
            gc.enable()


def take_turns(*funcs: Callable[[], object], seconds: float) -> None:
    """Call ``funcs`` in turn for about ``seconds`` (once each in a dry run), timing nothing.

    A warm-up before the first measurement of a process: right after setup a step can
    run at half its speed for a quarter of a second or more (seen at 64 requests with
    speculative rows: one process in three timed its first 0.25 s at 2x the next),
    which would decide a target on a transient rather than the steady state.
    """
    deadline = time.perf_counter() + (0.0 if dry_run() else seconds)
    while True:
        for func in funcs:
            func()
        if time.perf_counter() >= deadline:
            return


def best_seconds_of(*funcs: Callable[[], object], min_time: float = 0.05) -> list[float]:
    """The best seconds per call of each of ``funcs``, timed taking turns over ``min_time``.

    For ``track_`` benchmarks that report a derived number (ns per element).
    """
    return [min(column) for column in zip(*block_minima(*funcs, seconds=min_time), strict=True)]


def ratio_samples(
    numerator: Callable[[], object],
    denominator: Callable[[], object],
    seconds: float,
    clock: Clock | None = None,
    blocks: int = BLOCKS,
    plus: float = 0.0,
) -> dict[str, Any]:
    """Seconds per call of ``numerator`` over ``denominator``'s (plus ``plus`` seconds, a
    time stated rather than measured), one ratio per block (at most ``blocks``), as a
    sampled result (:func:`sampled`)."""
    minima = block_minima(numerator, denominator, seconds=seconds, clock=clock, blocks=blocks)
    return sampled(a / (b + plus) for a, b in minima)


def difference_samples(
    minuend: Callable[[], object],
    subtrahend: Callable[[], object],
    seconds: float,
    scale: float,
    clock: Clock | None = None,
) -> dict[str, Any]:
    """Seconds per call of ``minuend`` less ``subtrahend``'s, times ``scale`` (1e6: µs),
    one difference per block, as a sampled result."""
    minima = block_minima(minuend, subtrahend, seconds=seconds, clock=clock)
    return sampled((a - b) * scale for a, b in minima)


def sampled(values: Iterable[float]) -> dict[str, Any]:
    """A ``track_`` benchmark's result as asv stores a ``time_`` benchmark's: samples.

    asv reads a result with ``samples`` and ``number`` as sampled and keeps the
    median as the value with its quartiles and 99% confidence interval (the
    ``ci_99_a``/``ci_99_b``/``q_25``/``q_75`` columns of the report's results).
    """
    return {"samples": [float(v) for v in values], "number": 1}


def value_of(result: float | dict[str, Any]) -> float:
    """What asv keeps as the value of a track's result: the median of its samples."""
    return statistics.median(result["samples"]) if isinstance(result, dict) else float(result)


def _calls_per_sample(func: Callable[[], object], clock: Clock) -> tuple[int, float]:
    """Calls that fill a sample, and seconds per call, from calling ``func`` for one."""
    number = 0
    start = clock()
    elapsed = 0.0
    while number == 0 or elapsed < SAMPLE_SECONDS:
        func()
        number += 1
        elapsed = clock() - start
    return number, elapsed / number


def _seconds_per_call(func: Callable[[], object], number: int, clock: Clock) -> float:
    start = clock()
    for _ in range(number):
        func()
    return (clock() - start) / number

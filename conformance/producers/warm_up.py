"""Call every declared producer once before the checks, outside the per-check time limit.

A producer may compile on its first call (vLLM's ``gather_logprobs`` runs a
``torch.compile``d rank count: over a minute with inductor on 2 cores).  That is a
start-up cost, not a hang, so it is paid here and reported in the header.  Each call
gets a bound of its own (five times the per-check limit): a producer that fails or
does not finish is noted, and its checks report it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from conformance.backends.backend import Backend

#: The warm-up bound of each producer, in per-check time limits.
LIMITS_PER_PRODUCER = 5


@dataclass
class WarmUp:
    """Seconds per producer warmed up, and what went wrong with each that failed."""

    seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    skipped: str | None = None

    def header(self) -> str | None:
        if self.skipped is not None:
            return f"warm-up skipped: {self.skipped}"
        if not self.seconds:
            return None
        total = sum(self.seconds.values())
        each = ", ".join(f"{name} {s:.1f} s" for name, s in self.seconds.items())
        line = f"warm-up of {len(self.seconds)} producer(s) took {total:.1f} s ({each})"
        for name, error in self.errors.items():
            line += f"; {name} {error}"
        return line


def _gather(gather: Callable[..., Any]) -> None:
    # Two shapes: a compiled producer recompiles once with dynamic sizes, then stays.
    for rows, vocab in ((2, 64), (3, 1000)):
        logprobs = torch.randn(rows, vocab).log_softmax(-1)
        gather(logprobs, 2, torch.arange(rows, dtype=torch.int64))


def _pad(pad: Callable[..., Any]) -> None:
    pad([[101_000, 101_001], [101_002]])


def _unpad(unpad: Callable[..., Any]) -> None:
    unpad(torch.tensor([[101_000, -1], [101_001, 101_002]], dtype=torch.int32))


@contextmanager
def _async_output_calls(backend: Backend, revision: Any) -> Iterator[dict[str, Callable[[], None]]]:
    """Each async output's warm-up call (``make_async_output`` and every one of
    ``other_async_outputs``, a pooling one on a pooling step), by the name its header
    gives it; their device (a simulated runtime) held meanwhile.

    The runtime is entered here, not in the warm-up threads, so it is taken down even
    when a producer never returns.
    """
    from conformance.producers.pooling_steps import POOLING_CASES, build_pooling_step
    from conformance.producers.runtime import producer_devices, step_device
    from conformance.producers.steps import ONE_TOKEN_CASES, build_step

    producers = [
        *backend.async_output_producers("sampling"),
        *backend.async_output_producers("pooling"),
    ]
    usable = [d for d in producer_devices(backend) if d.skip is None]
    if not producers or not usable:
        yield {}
        return
    with step_device(usable[0].value) as device:

        def call(producer: Any) -> None:
            step = (
                build_pooling_step(backend, revision, POOLING_CASES[0], device)
                if producer.kind == "pooling"
                else build_step(backend, revision, ONE_TOKEN_CASES[1], device)
            )
            producer.make(step).get_output()

        yield {
            (
                "make_async_output"
                if producer.make is backend.make_async_output
                else f"other_async_outputs {producer.label}"
            ): partial(call, producer)
            for producer in producers
        }


def warm_up(
    backend: Backend,
    revision: Any,
    check_timeout: float,
    announce: Callable[[str | None], None] = lambda producer: None,
) -> WarmUp:
    """Call each declared producer once; ``check_timeout`` 0 means no bound.
    ``announce`` is told each producer before its call, and None after the last."""
    bound = check_timeout * LIMITS_PER_PRODUCER or None
    result = WarmUp()
    try:
        _warm_each(backend, revision, bound, result, announce)
    finally:
        announce(None)
    return result


def _warm_each(
    backend: Backend,
    revision: Any,
    bound: float | None,
    result: WarmUp,
    announce: Callable[[str | None], None],
) -> None:
    operations: dict[str, Callable[[Any], None]] = {
        "gather_logprobs": _gather,
        "pad_sampled_token_ids": _pad,
        "unpad_sampled_token_ids": _unpad,
    }
    for name, operation in operations.items():
        producer = getattr(backend, name)
        if producer is not None:
            announce(name)
            _timed(result, name, partial(operation, producer), bound)
    with _async_output_calls(backend, revision) as calls:
        for name, call in calls.items():
            announce(name)
            _timed(result, name, call, bound)


def _timed(result: WarmUp, name: str, call: Callable[[], None], bound: float | None) -> None:
    """Run ``call`` in a daemon thread for at most ``bound`` seconds; note how it went."""
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:  # the producer's failure is its checks' to report
            outcome.append(error)

    start = time.perf_counter()
    worker = threading.Thread(target=run, name=f"warm-up {name}", daemon=True)
    worker.start()
    worker.join(bound)
    result.seconds[name] = time.perf_counter() - start
    if worker.is_alive():
        result.errors[name] = f"did not finish within {bound:.0f} s (left running)"
    elif outcome:
        error = outcome[0]
        first = (str(error).splitlines() or [""])[0]
        result.errors[name] = f"failed: {type(error).__name__}: {first}"[:200]

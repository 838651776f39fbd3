"""Call every declared producer once before the checks, outside the per-check time limit.

A producer may compile on its first call (vLLM's ``gather_logprobs`` runs a
``torch.compile``d rank count: over a minute with inductor on 2 cores).  That is a
start-up cost, not a hang, so it is paid here and reported in the header; a
producer that fails here is noted and its checks report the failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from conformance.backend import Backend


@dataclass
class WarmUp:
    """Seconds per producer warmed up, and the error of each that failed."""

    seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def header(self) -> str | None:
        if not self.seconds:
            return None
        total = sum(self.seconds.values())
        each = ", ".join(f"{name} {s:.1f} s" for name, s in self.seconds.items())
        line = f"warm-up of {len(self.seconds)} producer(s) took {total:.1f} s ({each})"
        for name, error in self.errors.items():
            line += f"; {name} failed: {error}"
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


def _async_output(make: Callable[..., Any], backend: Backend, revision: Any) -> None:
    from conformance.checks._steps import ONE_TOKEN_CASES, build_step
    from conformance.producer_runtime import producer_devices, step_device

    usable = [d for d in producer_devices(backend) if d.skip is None]
    if not usable:
        return
    with step_device(usable[0].value) as device:
        make(build_step(backend, revision, ONE_TOKEN_CASES[1], device)).get_output()


def warm_up(backend: Backend, revision: Any) -> WarmUp:
    result = WarmUp()
    calls: dict[str, Callable[[], None]] = {}
    if backend.gather_logprobs is not None:
        calls["gather_logprobs"] = lambda: _gather(backend.gather_logprobs)  # type: ignore[arg-type]
    if backend.pad_sampled_token_ids is not None:
        calls["pad_sampled_token_ids"] = lambda: _pad(backend.pad_sampled_token_ids)  # type: ignore[arg-type]
    if backend.unpad_sampled_token_ids is not None:
        calls["unpad_sampled_token_ids"] = lambda: _unpad(backend.unpad_sampled_token_ids)  # type: ignore[arg-type]
    if backend.make_async_output is not None:
        make = backend.make_async_output
        calls["make_async_output"] = lambda: _async_output(make, backend, revision)
    for name, call in calls.items():
        start = time.perf_counter()
        try:
            call()
        except BaseException as error:  # a producer's failure is the checks' to report
            if isinstance(error, KeyboardInterrupt):
                raise
            first = (str(error).splitlines() or [""])[0]
            result.errors[name] = f"{type(error).__name__}: {first}"[:200]
        result.seconds[name] = time.perf_counter() - start
    return result

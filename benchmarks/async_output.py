"""The host side of a step's async output: the constructor, then ``get_output()``.

Each decode step vLLM's runner builds its async output from the step (the padded
sampled ids and the logprobs on the device, a copy stream) and the scheduler later
calls ``get_output()``, which waits for the copies, unpads the rows and drops the
discarded requests.  The backend's ``make_async_output`` producer is timed on the
runtime of the accelerator it is written for (``cuda`` for vLLM's own, ``npu`` for a
plugin declaring it): the device's own where it is present, else a simulated one
(:mod:`conformance.producers.simulated_device`, the one the conformance suite judges it
on there).  Every backend and release pays the same copies, so what differs is its own
host work; the copies' own costs are ``transfer.py``'s.  Steps: 1, 64 and 256 requests, one token each (one request
discarded), without logprobs and with 5 top logprobs.
"""

from __future__ import annotations

from contextlib import ExitStack
from functools import cache
from typing import Any, ClassVar

from .common import HostBenchmark, at_steady_state, backend_params, sizes

NUM_REQS = sizes([1, 64, 256], 64)
NUM_LOGPROBS = sizes([-1, 5], 5)  # -1: the step asks for no logprobs


@cache
def step_runtime(device_type: str) -> Any:
    """The runtime of ``device_type`` a benchmark process builds its steps on: the
    device's own where it is present (a step's copies and wait are the device's: on a GPU
    day the floor under every async output is the real one), else one simulated, installed
    until the process ends.  One per process: outputs of two backends timed side by side
    share its streams."""
    from conformance.backends.devices import is_present
    from conformance.producers.runtime import SIMULATED, step_device

    value = device_type if is_present(device_type) else f"{device_type}{SIMULATED}"
    # Held, not dropped: a collected context would uninstall a simulated runtime.
    _INSTALLED.append(ExitStack())
    return _INSTALLED[-1].enter_context(step_device(value))


_INSTALLED: list[ExitStack] = []


class AsyncOutput(HostBenchmark):
    """``make_async_output(step).get_output()`` of one step, on its device's runtime."""

    params: ClassVar[list[list[Any]]] = [
        backend_params("make_async_output"),
        NUM_REQS,
        NUM_LOGPROBS,
    ]
    param_names: ClassVar[list[str]] = ["backend", "num_reqs", "num_logprobs"]

    def setup(self, backend: str, num_reqs: int, num_logprobs: int) -> None:
        from conformance.producers.steps import StepCase, build_step

        subject = self.use_backend(backend)
        self.make = subject.producer("make_async_output")
        if subject.revision is None:
            raise NotImplementedError(f"{backend}: no revision data to build its runner's step")
        # Ids in the tens of thousands (no small-int caching), request 0 discarded.
        rows = tuple((101_000 + 37 * i,) for i in range(num_reqs))
        case = StepCase("bench", rows, invalid_req_indices=(0,))
        case = case.with_logprobs(num_logprobs if num_logprobs >= 0 else None)
        self.step = build_step(
            subject, subject.revision, case, step_runtime(subject.async_output_device)
        )
        # The first calls pay imports and thread starts, and the reference's unpadding
        # tiers up to its list builder.
        at_steady_state(lambda: self.make(self.step).get_output())

    def time_async_output_get_output(self, backend: str, num_reqs: int, num_logprobs: int) -> None:
        self.make(self.step).get_output()

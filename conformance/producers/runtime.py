"""Where an async output producer is judged: a device type and the runtime that orders its copies.

A backend's async output is written for its device's runtime (``torch.cuda``,
``torch.npu``): streams, events, non-blocking copies.  On a machine that has the
device, the real runtime judges it.  Where the device is absent, the first
accelerator the backend declares for its producers is *simulated*
(:mod:`conformance.producers.simulated_device`): the producer runs unchanged against a
runtime of threads, so its ordering (and the race check) is judged on any CPU.
The parameter value says which: ``cuda`` (real) or ``cuda-simulated``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from conformance.backends import devices
from conformance.backends.backend import Backend
from conformance.producers.simulated_device import SimulatedRuntime, installed

SIMULATED = "-simulated"


@dataclass(frozen=True)
class ProducerDevice:
    """One parameter value of the async output checks and why it may not run."""

    value: str
    skip: devices.DeviceSkip | None = None


#: The skip cause of the async output checks on CPU for a backend that lists CPU among
#: its devices (for its types) beside an accelerator its async output is written for.
STEP_NOT_BUILT_ON_DEVICE = "step-not-built-on-device"


def _cpu_not_applicable(backend: Backend) -> devices.DeviceSkip | None:
    """Why the async output is not judged on CPU, or None where it is.

    vLLM's runners hand an async output its step (a copy stream, a main stream, an
    event) on an accelerator; a plugin's async output is written for that runtime
    (``torch.npu``) and is never built on CPU.  So where ``devices`` lists CPU beside an
    accelerator and ``producer_devices`` does not say that the async output runs on CPU
    too, the checks there are not applicable: judged on CPU, a correct producer would
    fail on the step's missing streams."""
    accelerators = [kind for kind in backend.devices if kind != "cpu"]
    if backend.producer_devices is not None or not accelerators:
        return None
    return devices.DeviceSkip(
        STEP_NOT_BUILT_ON_DEVICE,
        "not applicable on cpu: the backend's runner builds its async output's step "
        f"(copy stream, main stream, event) on {', '.join(accelerators)}, not on cpu "
        '(devices= lists cpu for the types); declare producer_devices=("cpu", ...) '
        "to have it judged on cpu too",
    )


def producer_devices(backend: Backend) -> list[ProducerDevice]:
    """The devices the backend's async output is judged on here, in declaration order."""
    found: list[ProducerDevice] = []
    simulated = False
    for kind in backend.async_output_devices:
        if kind == "cpu" and (skip := _cpu_not_applicable(backend)) is not None:
            found.append(ProducerDevice(kind, skip))
        elif kind == "cpu" or devices.is_present(kind):
            found.append(ProducerDevice(kind))
        elif not simulated:
            found.append(ProducerDevice(kind + SIMULATED))
            simulated = True
        else:
            found.append(
                ProducerDevice(
                    kind,
                    devices.DeviceSkip(
                        devices.DEVICE_NOT_PRESENT,
                        f"device {kind}: declared, but not on this machine (only the first "
                        "absent accelerator is simulated)",
                    ),
                )
            )
    return found


def is_accelerator(value: str) -> bool:
    return value != "cpu"


@dataclass(frozen=True)
class StepDevice:
    """The device a step lives on: its type, and the simulated runtime when there is one."""

    kind: str
    simulated: SimulatedRuntime | None = None

    def tensor(self, host: torch.Tensor, label: str | None = None) -> torch.Tensor:
        """``host``'s values on this device, the copy finished; ``label`` names it in the
        simulated runtime's race reports (the step's field)."""
        if self.simulated is not None:
            return self.simulated.device_tensor(host, label)
        if self.kind == "cpu":
            return host.clone()
        return devices.to_device(self.kind, host)

    def stream(self) -> Any:
        """A copy stream of this device's runtime (None on CPU and runtimes without streams)."""
        if self.simulated is not None:
            made = self.simulated.Stream()
            made.name = "the step's copy stream"
            return made
        stream = getattr(devices.device_module(self.kind), "Stream", None)
        return stream() if stream is not None and self.kind not in ("cpu", "mps") else None

    def main_stream(self) -> Any:
        """The stream the step's values are computed on: the runtime's current one (None on CPU)."""
        runtime = self._runtime()
        current = getattr(runtime, "current_stream", None)
        return current() if current is not None else None

    def event(self) -> Any:
        """A new event of this device's runtime (None on CPU and runtimes without events)."""
        runtime = self._runtime()
        event = getattr(runtime, "Event", None)
        return event() if event is not None else None

    def synchronize(self) -> None:
        """Wait until every copy and kernel queued on this device is done (its writes landed)."""
        if self.simulated is not None:
            self.simulated.synchronize()
        else:
            devices.synchronize(self.kind)

    def _runtime(self) -> Any:
        if self.simulated is not None:
            return self.simulated
        if self.kind in ("cpu", "mps"):
            return None
        return devices.device_module(self.kind)

    def describe(self, busy: bool = False) -> str:
        """``a simulated npu runtime``, ``cuda``; ``busy``: ``a busy simulated npu runtime``."""
        if self.simulated:
            return f"a {'busy ' if busy else ''}simulated {self.kind} runtime"
        return f"a busy {self.kind}" if busy else self.kind


@contextmanager
def step_device(value: str) -> Iterator[StepDevice]:
    """The :class:`StepDevice` of a parameter value; a simulated runtime is installed meanwhile,
    and a tensor the producer makes for its device is one of it."""
    if not value.endswith(SIMULATED):
        yield StepDevice(value)
        return
    kind = value.removesuffix(SIMULATED)
    with installed(SimulatedRuntime(kind)) as runtime, runtime.device_factories():
        yield StepDevice(kind, runtime)

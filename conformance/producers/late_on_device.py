"""A busy real accelerator for the race check: a step's tensors written after long work.

The race check needs the device still computing the step's values when the producer
queues its copies.  On a real device, a step built after the long work was queued is
not enough: building it moves other tensors to the device with ordinary (pageable)
copies, and each of those waits, on the host, for everything queued before it, the
long work included, so the device is idle again before the producer is called.  Here
every tensor is placed on the device first (holding zeros), the step is built from
them, and only then is the long work queued on the current stream (the runner's main
stream), followed by the writes of the real values into those same tensors.

The simulated runtime's counterpart is :meth:`SimulatedRuntime.write_later`; this class
offers the same three calls (``device_tensor``, ``write_later``, ``idle``), so the
check builds its step one way for both.
"""

from __future__ import annotations

from typing import Any

import torch

from conformance.backends.devices import new_event, synchronize, to_device

#: A square matrix multiplied by itself this many times keeps a data-centre GPU busy for
#: about a tenth of a second (fp32, no tensor cores: 2048**3 * 2 * 400 = 6.9 TFLOP).
BUSY_SIZE = 2048
BUSY_ITERATIONS = 400


class LateOnDevice:
    """The step's device tensors of one race case on a real accelerator ``kind``."""

    def __init__(self, kind: str, iterations: int = BUSY_ITERATIONS) -> None:
        self.kind = kind
        self.iterations = iterations
        self._writes: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._done: Any = None
        self._started = False

    def device_tensor(self, host: torch.Tensor, label: str = "") -> torch.Tensor:
        """``host`` (zeros) on the device, the copy finished; ``label`` is the simulated
        runtime's name for it and unused here."""
        return to_device(self.kind, host)

    def write_later(self, tensor: torch.Tensor, values: torch.Tensor, delay: float = 0.0) -> None:
        """Write ``values`` into ``tensor`` once the long work is done (:meth:`start`);
        ``delay`` is the simulated runtime's and unused here."""
        self._writes.append((tensor, to_device(self.kind, values.to(tensor.dtype))))

    def idle(self) -> bool:
        """Whether the device is done with the long work and the writes: True before
        :meth:`start` (nothing is queued yet); after it, False where the runtime has no
        events to ask (MPS), as the check cannot tell."""
        if not self._started:
            return True
        return self._done is not None and bool(self._done.query())

    def start(self) -> None:
        """Queue the long work, then every write, on the current stream, and return at once.

        A rehearsal runs first, into scratch tensors, and is waited for: CUDA loads a
        kernel at its first launch (lazy module loading, the default since CUDA 11.7) and
        may synchronize the whole context to do so.  What is queued behind the long work
        (the zero it yields, the writes) was first launched on the first race step of a
        process: on an H200 ``x[0, 0] * 0`` held the host until the work was done, so
        that step found the device idle whatever the producer did."""
        synchronize(self.kind)
        self._queue(1, [torch.empty_like(tensor) for tensor, _ in self._writes])
        synchronize(self.kind)
        self._queue(self.iterations, [tensor for tensor, _ in self._writes])
        self._done = new_event(self.kind)
        if self._done is not None:
            self._done.record()
        self._started = True

    def _queue(self, iterations: int, targets: list[torch.Tensor]) -> None:
        """``iterations`` of the long work, then each write's values into ``targets``."""
        x = torch.rand(BUSY_SIZE, BUSY_SIZE, device=self.kind)
        for _ in range(iterations):
            x = torch.tanh(x @ x)  # bounded, so the zero below is a real zero
        zero = x[0, 0] * 0
        for target, (_, values) in zip(targets, self._writes, strict=True):
            torch.add(values, zero.to(values.dtype), out=target)

"""Stand-ins the race check's self-tests put into vLLM's classes to make them race: a copy
stream that never waits, and an event nobody waits for.

Each works on the simulated runtime and on a real CUDA device alike: there torch takes
only its own stream types (``torch.cuda.stream``, ``record_stream``), so the stream is a
real one over the same CUDA stream, and an event may be a ``torch.Event`` whose methods
cannot be replaced on the instance, so the event is wrapped, not patched.
"""

from __future__ import annotations

from typing import Any

import torch


class StreamThatNeverWaits:
    """The copy stream, but ``wait_stream`` does nothing: as if the class never called it.

    ``StreamThatNeverWaits(stream)`` gives, for a real CUDA stream, a real
    ``torch.cuda.Stream`` over the same CUDA stream with that one method changed."""

    def __new__(cls, stream: Any) -> Any:
        # torch's own base, not torch.cuda.Stream: the simulated runtime installs its
        # own class under that name.
        if isinstance(stream, torch._C._CudaStreamBase):
            return _CudaStreamThatNeverWaits(stream.cuda_stream, device=stream.device)
        return super().__new__(cls)

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def wait_stream(self, other: Any) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _CudaStreamThatNeverWaits(torch.cuda.ExternalStream):
    def wait_stream(self, stream: Any) -> None:
        return None


class EventNeverWaitedFor:
    """``event``, but ``synchronize`` returns at once: as if its owner never waited."""

    def __init__(self, event: Any) -> None:
        self._event = event

    def synchronize(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._event, name)

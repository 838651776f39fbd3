"""The host copy of each step's sampled ids lands in one buffer kept for the shape.

Caught only where the next step's async output is made before this one is read, as
vLLM's async scheduling does: both steps' copies land in the same memory.
"""

import torch

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput

_BUFFERS: dict[tuple[tuple[int, ...], torch.dtype], torch.Tensor] = {}


def _buffer_like(ids: torch.Tensor) -> torch.Tensor:
    key = (tuple(ids.shape), ids.dtype)
    if key not in _BUFFERS:
        _BUFFERS[key] = torch.empty(ids.shape, dtype=ids.dtype)
    return _BUFFERS[key]


class CopiesIntoOneBuffer(RunnerAsyncModelRunnerOutput):
    def __init__(self, **handed_over) -> None:
        super().__init__(**handed_over)  # built like vLLM's: by keyword
        ids = handed_over["sampled_token_ids"]
        buffer = _buffer_like(ids)
        if self._event is None:
            buffer.copy_(ids)
        else:
            stream = handed_over["async_output_copy_stream"]
            with self._runtime.stream(stream):
                buffer.copy_(ids, non_blocking=True)
                self._event = self._runtime.Event()
                self._event.record(stream)
        self._host = (buffer, self._host[1])


BACKEND = backend_with(__name__, make_async_output=CopiesIntoOneBuffer)

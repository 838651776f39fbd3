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
    def __init__(
        self,
        model_runner_output,
        sampled_token_ids,
        logprobs_tensors=None,
        invalid_req_indices=(),
        async_output_copy_stream=None,
        vocab_size=None,
    ) -> None:
        super().__init__(
            model_runner_output,
            sampled_token_ids,
            logprobs_tensors,
            invalid_req_indices,
            async_output_copy_stream,
            vocab_size,
        )
        buffer = _buffer_like(sampled_token_ids)
        if self._event is None:
            buffer.copy_(sampled_token_ids)
        else:
            with self._runtime.stream(async_output_copy_stream):
                buffer.copy_(sampled_token_ids, non_blocking=True)
                self._event = self._runtime.Event()
                self._event.record(async_output_copy_stream)
        self._host = (buffer, self._host[1])


BACKEND = backend_with(__name__, make_async_output=CopiesIntoOneBuffer)

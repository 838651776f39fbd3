"""The first runner's own AsyncGPUModelRunnerOutput of the release on the path, changed to
race every way its copies can go wrong.

``make()``: a backend judging the mutants side by side (the race check's self-test for
that runner, on a simulated runtime and on a real device alike):

- ``without-wait``: ``get_output()`` no longer waits for its copy event;
- ``copy-first``: the copies no longer wait for the compute stream (the copy stream's
  ``wait_stream(default_stream)`` gone);
- ``event-first``: the event ``get_output()`` waits for is recorded before the copies
  are queued, so the wait covers none of them;
- ``logprobs-after-event`` (releases whose class copies logprobs, 0.12.0 on): the
  logprobs copies are queued after the event, the sampled ids' copy before it.

Import it only with a release (installed or a stub tree) first on the path.
"""

from __future__ import annotations

import inspect

import torch
import vllm
from racing_streams import StreamThatNeverWaits
from vllm.v1 import outputs
from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput
from vllm_without_synchronize import WithoutSynchronize

from conformance import Backend, constructed_like_vllm
from conformance.backends.backend import AsyncOutputProducer

# 0.10.2-0.11.0 name the event _async_copy_ready_event, later releases without the underscore.
EVENT_NAMES = ("async_copy_ready_event", "_async_copy_ready_event")
COPIES_LOGPROBS = "logprobs_tensors" in inspect.signature(AsyncGPUModelRunnerOutput).parameters


class CopyFirst(AsyncGPUModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        kwargs["async_output_copy_stream"] = StreamThatNeverWaits(
            kwargs["async_output_copy_stream"]
        )
        super().__init__(*args, **kwargs)


class EventFirst(AsyncGPUModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        # Recorded on the copy stream before anything is queued there.
        early = torch.cuda.Event()
        with torch.cuda.stream(kwargs["async_output_copy_stream"]):
            early.record()
        super().__init__(*args, **kwargs)
        for name in EVENT_NAMES:
            if getattr(self, name, None) is not None:
                setattr(self, name, early)


class LogprobsAfterEvent(AsyncGPUModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        logprobs = kwargs.pop("logprobs_tensors")
        super().__init__(*args, logprobs_tensors=None, **kwargs)
        # The class's own copy, once its event is recorded: the same stream, after it.
        self._logprobs_tensors = logprobs
        if logprobs is not None:
            with torch.cuda.stream(kwargs["async_output_copy_stream"]):
                self._logprobs_tensors_cpu = logprobs.to_cpu_nonblocking()


def mutants() -> list[tuple[str, type]]:
    """Each mutant this release's class admits, with its label."""
    found: list[tuple[str, type]] = [
        ("without-wait", WithoutSynchronize),
        ("copy-first", CopyFirst),
        ("event-first", EventFirst),
    ]
    if COPIES_LOGPROBS:
        found.append(("logprobs-after-event", LogprobsAfterEvent))
    return found


def make() -> Backend:
    (_, first), *others = mutants()
    producers = []
    for label, cls in others:
        made = constructed_like_vllm(cls)
        producers.append(AsyncOutputProducer(label, made, runner=made.runner))
    return Backend(
        name="vllm-first-runner-mutants",
        module=outputs,
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        spec_revision=vllm.__version__,
        make_async_output=constructed_like_vllm(first),
        other_async_outputs=tuple(producers),
    )

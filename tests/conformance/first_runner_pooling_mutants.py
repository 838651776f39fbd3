"""The first runner's own AsyncGPUPoolingModelRunnerOutput of the release on the path, changed
to race.

``make()``: a backend judging two mutants of the class side by side (the pooling race
check's self-test for that runner): ``without-wait``, whose ``get_output()`` no longer waits
for its copy event, and ``copy-first``, whose copy no longer waits for the compute stream
(its ``async_output_copy_stream.wait_stream(default_stream)`` gone).  ``swapped()``: one
that waits but hands the first two requests each other's rows; ``cast()``: one that hands
them over in float16; ``rebuilt()``: one that returns a new ModelRunnerOutput of the request
ids and rows alone; ``one_buffer()``: one that copies the rows into one host buffer reused
step after step.  ``unchanged()``: the
class as vLLM ships it, declared by a plugin.  Import it only with a release (installed or
a stub tree) first on the path.
"""

from __future__ import annotations

import torch
import vllm
from racing_streams import EventNeverWaitedFor, StreamThatNeverWaits
from vllm.v1 import outputs
from vllm.v1.worker.gpu_model_runner import AsyncGPUPoolingModelRunnerOutput

from conformance import Backend, constructed_like_vllm
from conformance.backends.backend import AsyncOutputProducer


class WithoutWait(AsyncGPUPoolingModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.async_copy_ready_event = EventNeverWaitedFor(self.async_copy_ready_event)


class CopyFirst(AsyncGPUPoolingModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        kwargs["async_output_copy_stream"] = StreamThatNeverWaits(
            kwargs["async_output_copy_stream"]
        )
        super().__init__(*args, **kwargs)


class SwapsRows(AsyncGPUPoolingModelRunnerOutput):
    def get_output(self):
        output = super().get_output()
        rows = output.pooler_output
        if rows is not None and len(rows) >= 2:
            rows[0], rows[1] = rows[1], rows[0]
        return output


class CastsRows(AsyncGPUPoolingModelRunnerOutput):
    def get_output(self):
        output = super().get_output()
        if output.pooler_output is not None:
            output.pooler_output = [
                row.half() if row is not None else None for row in output.pooler_output
            ]
        return output


class RebuildsOutput(AsyncGPUPoolingModelRunnerOutput):
    def get_output(self):
        output = super().get_output()
        return outputs.ModelRunnerOutput(
            req_ids=output.req_ids,
            req_id_to_index=output.req_id_to_index,
            pooler_output=output.pooler_output,
        )


_POOLED = {}


class PoolsIntoOneBuffer(AsyncGPUPoolingModelRunnerOutput):
    """Copies the rows into one host buffer kept for their shape, reused step after step."""

    def __init__(
        self, model_runner_output, raw_pooler_output, finished_mask, async_output_copy_stream
    ):
        super().__init__(
            model_runner_output, raw_pooler_output, finished_mask, async_output_copy_stream
        )
        key = (tuple(raw_pooler_output.shape), raw_pooler_output.dtype)
        if key not in _POOLED:
            _POOLED[key] = torch.empty(raw_pooler_output.shape, dtype=raw_pooler_output.dtype)
        buffer = _POOLED[key]
        with torch.cuda.stream(async_output_copy_stream):
            buffer.copy_(raw_pooler_output, non_blocking=True)
            self.async_copy_ready_event.record()
        model_runner_output.pooler_output = [
            row if kept else None for row, kept in zip(buffer, finished_mask, strict=True)
        ]


def _backend(name: str, *classes: tuple[str, type]) -> Backend:
    producers = []
    for label, cls in classes:
        made = constructed_like_vllm(cls)
        producers.append(AsyncOutputProducer(label, made, kind="pooling", runner=made.runner))
    return Backend(
        name=name,
        module=outputs,
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        spec_revision=vllm.__version__,
        other_async_outputs=tuple(producers),
    )


def make() -> Backend:
    return _backend(
        "vllm-first-runner-pooling-mutants",
        ("without-wait", WithoutWait),
        ("copy-first", CopyFirst),
    )


def unchanged() -> Backend:
    return _backend(
        "plugin-with-first-runner-pooling", ("pooling", AsyncGPUPoolingModelRunnerOutput)
    )


def swapped() -> Backend:
    return _backend("vllm-first-runner-pooling-swapped", ("swaps-rows", SwapsRows))


def cast() -> Backend:
    return _backend("vllm-first-runner-pooling-cast", ("casts-rows", CastsRows))


def rebuilt() -> Backend:
    return _backend("vllm-first-runner-pooling-rebuilt", ("rebuilds", RebuildsOutput))


def one_buffer() -> Backend:
    return _backend("vllm-first-runner-pooling-one-buffer", ("one-buffer", PoolsIntoOneBuffer))

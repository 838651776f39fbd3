"""vLLM's own async output of the release on the path, with its event's synchronize() removed.

For the race check's self-test: the same class that passes must fail once it no longer
waits.  Import it only with a release (installed or a stub tree) first on the path.
"""

from __future__ import annotations

import vllm
from racing_streams import EventNeverWaitedFor
from vllm.v1 import outputs
from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput

from conformance import Backend, constructed_like_vllm


class WithoutSynchronize(AsyncGPUModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # 0.10.2-0.11.0 name it _async_copy_ready_event, later releases without the underscore.
        for name in ("async_copy_ready_event", "_async_copy_ready_event"):
            event = getattr(self, name, None)
            if event is not None:
                setattr(self, name, EventNeverWaitedFor(event))


def make() -> Backend:
    return Backend(
        name="vllm-without-synchronize",
        module=outputs,
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        spec_revision=vllm.__version__,
        make_async_output=constructed_like_vllm(WithoutSynchronize),
    )

"""The example plugin's async output with its event's synchronize() removed."""

from example_npu_plugin import conformance_backend, worker

from conformance import Backend, constructed_like_vllm


class WithoutSynchronize(worker.NPUAsyncModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._copied.synchronize = lambda: None


def make() -> Backend:
    from dataclasses import replace

    return replace(
        conformance_backend.BACKEND,
        make_async_output=constructed_like_vllm(WithoutSynchronize),
    )

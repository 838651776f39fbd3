"""get_output() ignores invalid_req_indices: a discarded request keeps its sampled token."""

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput


class KeepsDiscarded(RunnerAsyncModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        kwargs["invalid_req_indices"] = []
        super().__init__(*args, **kwargs)


BACKEND = backend_with(__name__, make_async_output=KeepsDiscarded)

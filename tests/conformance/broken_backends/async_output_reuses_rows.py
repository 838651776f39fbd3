"""get_output() returns rows the producer keeps and refills for the next step.

A host buffer reused across steps: the scheduler's copy of one step changes under it
when the next step is produced.
"""

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput

_ROWS: list[list[int]] = []


class ReusesRows(RunnerAsyncModelRunnerOutput):
    def get_output(self):
        output = super().get_output()
        _ROWS[:] = [[] for _ in output.sampled_token_ids]
        for kept, row in zip(_ROWS, output.sampled_token_ids, strict=True):
            kept.extend(row)
        output.sampled_token_ids = _ROWS
        return output


BACKEND = backend_with(__name__, make_async_output=ReusesRows)

"""get_output() gives a step of one token per request as numpy rows (lists only for rows
of several tokens): the step of every decode without drafts."""

import numpy as np

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput


class OneTokenRowsAsArrays(RunnerAsyncModelRunnerOutput):
    def get_output(self):
        output = super().get_output()
        rows = output.sampled_token_ids
        if rows and all(len(row) <= 1 for row in rows):
            output.sampled_token_ids = [np.array(row, dtype=np.int64) for row in rows]
        return output


BACKEND = backend_with(__name__, make_async_output=OneTokenRowsAsArrays)

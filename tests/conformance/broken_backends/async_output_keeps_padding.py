"""get_output() leaves the -1 padding in rows of several tokens."""

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput


class KeepsPadding(RunnerAsyncModelRunnerOutput):
    def get_output(self):
        output = super().get_output()
        output.sampled_token_ids = self._host[0].tolist()
        return output


BACKEND = backend_with(__name__, make_async_output=KeepsPadding)

"""AsyncModelRunnerOutput.get_output is a plain method, so the class is not abstract."""

from broken_backends._reference import *  # noqa: F403


class AsyncModelRunnerOutput:
    def get_output(self):
        raise NotImplementedError

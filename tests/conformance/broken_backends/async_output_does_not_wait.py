"""get_output() does not wait for the device-to-host copies (caught by the race check)."""

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput


class NoWait(RunnerAsyncModelRunnerOutput):
    def _wait_for_copies(self) -> None:
        return None


BACKEND = backend_with(__name__, make_async_output=NoWait)

"""get_output() never returns: it waits for a copy that never completes."""

import time

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput


class NeverReady(RunnerAsyncModelRunnerOutput):
    def get_output(self):
        while True:
            time.sleep(3600)  # the event it waits for is never recorded


BACKEND = backend_with(__name__, make_async_output=NeverReady)

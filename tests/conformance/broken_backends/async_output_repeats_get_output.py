"""get_output() is idempotent on purpose: a second call returns the same output under a lock.

Not broken: "called once" is the caller's obligation (one real plugin does this because
two threads race for the same step).  The suite must pass it.
"""

import threading

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput


class CachedUnderALock(RunnerAsyncModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._cached = None

    def get_output(self):
        with self._lock:
            if self._cached is None:
                self._cached = super().get_output()
            return self._cached


BACKEND = backend_with(__name__, make_async_output=CachedUnderALock)

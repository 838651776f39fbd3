"""get_output() can be called twice."""

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import DeviceAsyncModelRunnerOutput


class AgainAndAgain(DeviceAsyncModelRunnerOutput):
    def get_output(self):
        output = super().get_output()
        self._consumed = False
        return output


BACKEND = backend_with(__name__, make_async_output=AgainAndAgain)

"""LogprobsTensors.tolists() takes no cu argument (vLLM 0.11.0)."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(_LogprobsTensors):
    def tolists(self):
        return super().tolists()

"""LogprobsTensors.to_cpu_nonblocking copies on CPU instead of returning self."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(_LogprobsTensors):
    def to_cpu_nonblocking(self) -> "LogprobsTensors":
        return LogprobsTensors(*(t.to("cpu", copy=True) for t in self))

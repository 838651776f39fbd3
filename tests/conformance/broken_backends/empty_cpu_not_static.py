"""LogprobsTensors.empty_cpu is a classmethod instead of a staticmethod."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(_LogprobsTensors):
    @classmethod
    def empty_cpu(cls, num_positions: int, num_tokens_per_position: int) -> "LogprobsTensors":
        return cls(*_LogprobsTensors.empty_cpu(num_positions, num_tokens_per_position))

"""LogprobsTensors.to_cpu_nonblocking copies the ids and ranks and forgets the logprobs.

On a CPU-only machine the device path runs nowhere but on the simulated runtime.
"""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(_LogprobsTensors):
    def to_cpu_nonblocking(self) -> "LogprobsTensors":
        if self.logprob_token_ids.device.type == "cpu":
            return self
        return LogprobsTensors(
            self.logprob_token_ids.to("cpu", non_blocking=True),
            self.logprobs,
            self.selected_token_ranks.to("cpu", non_blocking=True),
        )

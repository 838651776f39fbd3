"""A correct to_cpu_nonblocking the way device plugins write it: pinned host buffers
filled under the tensor's device context (only the simulated runtime has neither here)."""

import torch

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(_LogprobsTensors):
    def to_cpu_nonblocking(self) -> "LogprobsTensors":
        if self.logprob_token_ids.device.type == "cpu":
            return self
        with torch.cuda.device(self.logprob_token_ids.device):
            pinned = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in self]
            for host, device in zip(pinned, self, strict=True):
                host.copy_(device, non_blocking=True)
        return LogprobsTensors(*pinned)

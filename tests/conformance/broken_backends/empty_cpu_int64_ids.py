"""LogprobsTensors.empty_cpu allocates int64 token ids instead of int32."""

import torch

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(_LogprobsTensors):
    @staticmethod
    def empty_cpu(num_positions: int, num_tokens_per_position: int) -> "LogprobsTensors":
        ids = torch.empty((num_positions, num_tokens_per_position), dtype=torch.int64)
        return LogprobsTensors(
            ids,
            torch.empty(ids.shape, dtype=torch.float32),
            torch.empty(num_positions, dtype=torch.int32),
        )

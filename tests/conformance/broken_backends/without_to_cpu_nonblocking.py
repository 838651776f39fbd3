"""LogprobsTensors has no to_cpu_nonblocking (vLLM 0.11.0)."""

from typing import NamedTuple

import torch

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(NamedTuple):
    logprob_token_ids: torch.Tensor
    logprobs: torch.Tensor
    selected_token_ranks: torch.Tensor

    tolists = _LogprobsTensors.tolists
    empty_cpu = staticmethod(_LogprobsTensors.empty_cpu)

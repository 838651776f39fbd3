"""SamplerOutput is a frozen dataclass."""

from dataclasses import dataclass

import torch

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors


@dataclass(frozen=True)
class SamplerOutput:
    sampled_token_ids: torch.Tensor
    logprobs_tensors: LogprobsTensors | None

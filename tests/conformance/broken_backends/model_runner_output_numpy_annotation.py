"""ModelRunnerOutput.sampled_token_ids is annotated list[np.ndarray] (vLLM 0.11.1)."""

from dataclasses import dataclass

import numpy as np
import torch

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import KVConnectorOutput, LogprobsLists, LogprobsTensors


@dataclass
class ModelRunnerOutput:
    req_ids: list[str]
    req_id_to_index: dict[str, int]
    sampled_token_ids: list[np.ndarray]
    logprobs: LogprobsLists | None
    prompt_logprobs_dict: dict[str, LogprobsTensors | None]
    pooler_output: list[torch.Tensor | None]
    kv_connector_output: KVConnectorOutput | None = None
    num_nans_in_logits: dict[str, int] | None = None

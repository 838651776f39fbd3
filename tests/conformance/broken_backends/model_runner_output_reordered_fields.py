"""ModelRunnerOutput lists sampled_token_ids before req_id_to_index."""

from dataclasses import dataclass

import torch

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import KVConnectorOutput, LogprobsLists, LogprobsTensors


@dataclass
class ModelRunnerOutput:
    req_ids: list[str]
    sampled_token_ids: list[list[int]]
    req_id_to_index: dict[str, int]
    logprobs: LogprobsLists | None
    prompt_logprobs_dict: dict[str, LogprobsTensors | None]
    pooler_output: list[torch.Tensor | None]
    kv_connector_output: KVConnectorOutput | None = None
    num_nans_in_logits: dict[str, int] | None = None

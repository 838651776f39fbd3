"""ModelRunnerOutput has vLLM 0.11.1's extra field ec_connector_output."""

from dataclasses import dataclass

import torch

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import KVConnectorOutput, LogprobsLists, LogprobsTensors


@dataclass
class ModelRunnerOutput:
    req_ids: list[str]
    req_id_to_index: dict[str, int]
    sampled_token_ids: list[list[int]]
    logprobs: LogprobsLists | None
    prompt_logprobs_dict: dict[str, LogprobsTensors | None]
    pooler_output: list[torch.Tensor | None]
    kv_connector_output: KVConnectorOutput | None = None
    ec_connector_output: object | None = None
    num_nans_in_logits: dict[str, int] | None = None

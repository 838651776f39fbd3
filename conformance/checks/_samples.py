"""Sample values the checks share (realistic token ids: above the small-int cache)."""

from __future__ import annotations

import torch

LOGPROBS_TENSORS_FIELDS = ("logprob_token_ids", "logprobs", "selected_token_ranks")


def sample_tensors(num_rows: int = 3, width: int = 3) -> tuple[torch.Tensor, ...]:
    ids = torch.arange(70000, 70000 + num_rows * width, dtype=torch.int32).reshape(num_rows, width)
    logprobs = -torch.arange(num_rows * width, dtype=torch.float32).reshape(num_rows, width) / 4
    ranks = torch.arange(1, num_rows + 1, dtype=torch.int64)
    return ids, logprobs, ranks

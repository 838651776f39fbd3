"""pad_sampled_token_ids puts the -1 padding before the tokens."""

import torch

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403


def pad_sampled_token_ids(token_ids, *, max_len=None, device="cpu"):
    width = max((len(r) for r in token_ids), default=0) if max_len is None else max_len
    rows = [[-1] * (width - len(r)) + list(r) for r in token_ids]
    return torch.tensor(rows, dtype=torch.int32, device=device).reshape(len(rows), width)


BACKEND = backend_with(__name__, pad_sampled_token_ids=pad_sampled_token_ids)

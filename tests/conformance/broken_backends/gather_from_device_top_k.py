"""gather_logprobs reads the sampled token's logprob and rank from a device top-32 only.

A token outside the top-32 gets rank 0 and the top-1's logprob (as a real plugin did):
invisible on small vocabularies, wrong on any real one.
"""

import torch

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors

_CANDIDATES = 32


def gather_logprobs(logprobs, num_logprobs, token_ids):
    width = min(_CANDIDATES, logprobs.shape[1])
    top_values, top_ids = torch.topk(logprobs, width, dim=1)
    hit = top_ids == token_ids.unsqueeze(1)
    found = hit.any(dim=1)
    position = hit.int().argmax(dim=1)
    ranks = torch.where(found, position + 1, torch.zeros_like(position))
    chosen = top_values.gather(1, position.unsqueeze(1))
    ids = torch.cat((token_ids.unsqueeze(1), top_ids[:, :num_logprobs]), dim=1)
    values = torch.cat((chosen, top_values[:, :num_logprobs]), dim=1)
    return LogprobsTensors(ids.to(torch.int32), values, ranks.to(torch.int64))


BACKEND = backend_with(__name__, gather_logprobs=gather_logprobs)

"""gather_logprobs returns int64 logprob token ids (vLLM narrows them to int32)."""

import torch

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors
from reference import gather_logprobs as _gather


def gather_logprobs(logprobs, num_logprobs, token_ids):
    ids, values, ranks = _gather(logprobs, num_logprobs, token_ids)
    return LogprobsTensors(ids.to(torch.int64), values, ranks)


BACKEND = backend_with(__name__, gather_logprobs=gather_logprobs)

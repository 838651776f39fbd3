"""gather_logprobs returns 0-based ranks."""

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors
from reference import gather_logprobs as _gather


def gather_logprobs(logprobs, num_logprobs, token_ids):
    ids, values, ranks = _gather(logprobs, num_logprobs, token_ids)
    return LogprobsTensors(ids, values, ranks - 1)


BACKEND = backend_with(__name__, gather_logprobs=gather_logprobs)

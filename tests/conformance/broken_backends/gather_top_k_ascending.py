"""gather_logprobs sorts the top-k ascending."""

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors
from reference import gather_logprobs as _gather


def gather_logprobs(logprobs, num_logprobs, token_ids):
    ids, values, ranks = _gather(logprobs, num_logprobs, token_ids)
    ids[:, 1:] = ids[:, 1:].flip(1)
    values[:, 1:] = values[:, 1:].flip(1)
    return LogprobsTensors(ids, values, ranks)


BACKEND = backend_with(__name__, gather_logprobs=gather_logprobs)

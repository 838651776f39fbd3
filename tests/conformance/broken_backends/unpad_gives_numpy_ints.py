"""unpad_sampled_token_ids returns numpy integers instead of Python ints."""

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403


def unpad_sampled_token_ids(sampled, *, vocab_size=None):
    array = sampled.cpu().numpy()
    return [[t for t in row if t != -1 and (vocab_size is None or t < vocab_size)] for row in array]


BACKEND = backend_with(__name__, unpad_sampled_token_ids=unpad_sampled_token_ids)

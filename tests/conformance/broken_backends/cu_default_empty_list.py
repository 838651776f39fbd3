"""LogprobsLists.cu_num_generated_tokens defaults to [] instead of None."""

from typing import NamedTuple

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsLists as _LogprobsLists


class LogprobsLists(NamedTuple):
    logprob_token_ids: list[list[int]]
    logprobs: list[list[float]]
    sampled_token_ranks: list[int]
    cu_num_generated_tokens: list[int] | None = []  # noqa: RUF012 - the deviation

    slice = _LogprobsLists.slice

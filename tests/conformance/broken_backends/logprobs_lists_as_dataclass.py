"""LogprobsLists is a dataclass instead of a NamedTuple."""

from dataclasses import dataclass

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsLists as _LogprobsLists


@dataclass
class LogprobsLists:
    logprob_token_ids: list[list[int]]
    logprobs: list[list[float]]
    sampled_token_ranks: list[int]
    cu_num_generated_tokens: list[int] | None = None

    slice = _LogprobsLists.slice

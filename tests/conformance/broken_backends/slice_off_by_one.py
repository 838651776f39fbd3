"""LogprobsLists.slice takes one row too many without cu."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsLists as _LogprobsLists


class LogprobsLists(_LogprobsLists):
    def slice(self, start_req_idx: int, end_req_idx: int):
        if self.cu_num_generated_tokens:
            return super().slice(start_req_idx, end_req_idx)
        end = end_req_idx + 1
        return LogprobsLists(
            self.logprob_token_ids[start_req_idx:end],
            self.logprobs[start_req_idx:end],
            self.sampled_token_ranks[start_req_idx:end],
            None,
        )

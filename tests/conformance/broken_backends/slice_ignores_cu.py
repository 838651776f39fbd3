"""LogprobsLists.slice treats request indices as row indices even with cu."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsLists as _LogprobsLists


class LogprobsLists(_LogprobsLists):
    def slice(self, start_req_idx: int, end_req_idx: int):
        s, e = start_req_idx, end_req_idx
        cu = self.cu_num_generated_tokens
        return LogprobsLists(
            self.logprob_token_ids[s:e],
            self.logprobs[s:e],
            self.sampled_token_ranks[s:e],
            cu[s:e] if cu else None,
        )

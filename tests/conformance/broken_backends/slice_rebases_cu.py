"""LogprobsLists.slice rebases cu to 0 and keeps end + 1 entries (vLLM 0.11.1's behaviour)."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsLists as _LogprobsLists


class LogprobsLists(_LogprobsLists):
    def slice(self, start_req_idx: int, end_req_idx: int):
        result = super().slice(start_req_idx, end_req_idx)
        cu = self.cu_num_generated_tokens
        if not cu:
            return LogprobsLists(*result)
        base = cu[start_req_idx]
        return LogprobsLists(*result[:3], [c - base for c in cu[start_req_idx : end_req_idx + 1]])

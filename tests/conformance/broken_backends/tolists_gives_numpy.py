"""LogprobsTensors.tolists returns numpy arrays (as vLLM 0.11.1 does) instead of lists."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsLists
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(_LogprobsTensors):
    def tolists(self, cu_num_generated_tokens: list[int] | None = None):
        return LogprobsLists(
            self.logprob_token_ids.cpu().numpy(),
            self.logprobs.cpu().numpy(),
            self.selected_token_ranks.cpu().numpy(),
            cu_num_generated_tokens,
        )

"""LogprobsTensors.tolists returns tuples of rows instead of lists."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsLists
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(_LogprobsTensors):
    def tolists(self, cu_num_generated_tokens: list[int] | None = None):
        return LogprobsLists(
            [tuple(r) for r in self.logprob_token_ids.tolist()],
            [tuple(r) for r in self.logprobs.tolist()],
            self.selected_token_ranks.tolist(),
            cu_num_generated_tokens,
        )

"""LogprobsLists.slice(start, end): vLLM 0.11.0's parameter names."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsLists as _LogprobsLists


class LogprobsLists(_LogprobsLists):
    def slice(self, start: int, end: int):
        return super().slice(start, end)

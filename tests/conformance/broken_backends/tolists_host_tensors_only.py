"""LogprobsTensors.tolists reads its tensors with numpy(), never copying device tensors to
the host: right on CPU, a TypeError on the sampler's device tensors."""

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsLists
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(_LogprobsTensors):
    def tolists(self, cu_num_generated_tokens=None):
        return LogprobsLists(*(t.numpy().tolist() for t in self[:3]), cu_num_generated_tokens)

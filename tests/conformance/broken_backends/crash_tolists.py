"""LogprobsTensors.tolists() dereferences a null pointer (a segfault in native code)."""

import ctypes

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors as _LogprobsTensors


class LogprobsTensors(_LogprobsTensors):
    def tolists(self, cu_num_generated_tokens=None):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
        return super().tolists(cu_num_generated_tokens)

"""A CPU platform's types: its tensors are always on the host, so to_cpu_nonblocking
returns them as they are.  It declares cpu only: vLLM never hands it device tensors."""

import sys

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import LogprobsTensors as _LogprobsTensors
from conformance import Backend


class LogprobsTensors(_LogprobsTensors):
    def to_cpu_nonblocking(self) -> "LogprobsTensors":
        return self


BACKEND = Backend(name="cpu-platform", module=sys.modules[__name__], devices=("cpu",))

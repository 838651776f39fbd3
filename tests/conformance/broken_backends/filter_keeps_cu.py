"""LogprobsTensors.filter that gives its result request boundaries (``cu=[0]``) at 0.34.0,
where vLLM's leaves them None: a later ``tolists()`` would read them."""

import types
from dataclasses import replace

from conformance.backends.known import reference_backend

_REFERENCE = reference_backend("0.34.0")


class LogprobsTensors(_REFERENCE.module.LogprobsTensors):
    __slots__ = ()

    def filter(self, mask):
        kept = super().filter(mask)
        return type(self)(*kept[:3], cu_num_generated_tokens=[0])


_module = types.ModuleType(__name__ + ".outputs")
_module.__dict__.update(
    {k: v for k, v in vars(_REFERENCE.module).items() if not k.startswith("__")}
)
_module.LogprobsTensors = LogprobsTensors
BACKEND = replace(_REFERENCE, name="filter-keeps-cu", module=_module)

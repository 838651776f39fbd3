"""vLLM 0.23.0's types (the reference's) with an EMPTY_MODEL_RUNNER_OUTPUT holding a request."""

import sys

from conformance import Backend
from reference.revisions import reference_module

_RELEASE = reference_module("0.23.0")
globals().update(
    {name: value for name, value in vars(_RELEASE).items() if not name.startswith("_")}
)

EMPTY_MODEL_RUNNER_OUTPUT = _RELEASE.ModelRunnerOutput(
    req_ids=["req-0"], req_id_to_index={"req-0": 0}
)

BACKEND = Backend(
    name="empty-output-holds-a-request", module=sys.modules[__name__], spec_revision="0.23.0"
)

"""An async output written for a runner that builds one token per request and discards none
(as Tenstorrent's: no speculative decoding, no partial prefills under async scheduling).

Its get_output() neither unpads rows of several tokens nor empties discarded rows.
``BACKEND`` declares the steps its runner builds (logprobs, an empty batch): nothing fails,
the other kinds are not applicable.  ``UNDECLARED`` is the same producer judged on every
step the revision's runner builds; ``DISCARDS_DECLARED`` declares discarded rows it gets
wrong: both fail.
"""

from dataclasses import replace

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput


class OneTokenPerRequest(RunnerAsyncModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        kwargs["invalid_req_indices"] = []  # its runner never discards a request's token
        super().__init__(*args, **kwargs)

    def get_output(self):
        output = super().get_output()
        output.sampled_token_ids = self._host[0].tolist()  # one token per row: no unpadding
        return output


UNDECLARED = backend_with(__name__, make_async_output=OneTokenPerRequest)
BACKEND = replace(UNDECLARED, name="one-token-per-request", steps=("logprobs", "empty-batch"))
DISCARDS_DECLARED = replace(
    UNDECLARED, name="one-token-discards-declared", steps=("logprobs", "discarded-rows")
)

"""get_output() unpads rows of several tokens by the -1 padding alone: ids at or beyond
the vocabulary, which vLLM's ``parse_output`` drops, are kept."""

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput


class KeepsIdsBeyondVocabulary(RunnerAsyncModelRunnerOutput):
    def get_output(self):
        output = super().get_output()
        rows = self._host[0].tolist()
        if rows and len(rows[0]) > 1:
            output.sampled_token_ids = [
                [] if i in self._invalid_req_indices else [t for t in row if t != -1]
                for i, row in enumerate(rows)
            ]
        return output


BACKEND = backend_with(__name__, make_async_output=KeepsIdsBeyondVocabulary)

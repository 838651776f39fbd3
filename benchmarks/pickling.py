"""Pickling a decode step's ``ModelRunnerOutput``: it crosses a process boundary every step.

vLLM's workers pickle the step's output to the engine process (vLLM's own
comment on the type: prefer lists to tensors there).  The output is a decode
step of ``num_reqs`` requests, one sampled token each, with their logprobs as
the revision's own ``tolists()`` returns them (Python lists up to 2025.10, numpy
arrays from 0.11.1 on) and ``sampled_token_ids`` typed as the revision types it.
``track_pickled_bytes`` is what crosses the boundary.
"""

from __future__ import annotations

import pickle
from typing import Any, ClassVar

from .common import HostBenchmark, logprobs_tensors, rng, sizes, token_ids
from .revision_calls import model_runner_output, sampled_token_ids

NUM_REQS = sizes([1, 64, 1024], 64)
NUM_LOGPROBS = sizes([0, 5, 20], 5)
PROTOCOL = pickle.HIGHEST_PROTOCOL


def decode_step_output(spec: str, subject: Any, num_reqs: int, num_logprobs: int) -> Any:
    """The backend's ``ModelRunnerOutput`` of one decode step (see module docstring)."""
    req_ids = [f"req-{i}" for i in range(num_reqs)]
    sampled = token_ids(rng(), (num_reqs, 1)).tolist()
    return model_runner_output(
        subject,
        {
            "req_ids": req_ids,
            "req_id_to_index": {r: i for i, r in enumerate(req_ids)},
            "sampled_token_ids": sampled_token_ids(subject, sampled),
            "logprobs": logprobs_tensors(spec, num_reqs, num_logprobs).tolists(),
            "prompt_logprobs_dict": {},
            "pooler_output": [],
        },
    )


class PickleModelRunnerOutput(HostBenchmark):
    """``pickle.dumps`` and ``pickle.loads`` of one step's output, highest protocol."""

    params: ClassVar[list[list[Any]]] = [*HostBenchmark.params, NUM_REQS, NUM_LOGPROBS]
    param_names: ClassVar[list[str]] = [*HostBenchmark.param_names, "num_reqs", "num_logprobs"]

    def setup(self, backend: str, num_reqs: int, num_logprobs: int) -> None:
        subject = self.use_backend(backend)
        self.output = decode_step_output(backend, subject, num_reqs, num_logprobs)
        self.pickled = pickle.dumps(self.output, protocol=PROTOCOL)

    def time_dumps(self, backend: str, num_reqs: int, num_logprobs: int) -> None:
        pickle.dumps(self.output, protocol=PROTOCOL)

    def time_loads(self, backend: str, num_reqs: int, num_logprobs: int) -> None:
        pickle.loads(self.pickled)

    def track_pickled_bytes(self, backend: str, num_reqs: int, num_logprobs: int) -> int:
        return len(self.pickled)

    track_pickled_bytes.unit = "bytes"  # type: ignore[attr-defined]

"""``LogprobsTensors.empty_cpu``: allocating the host tensors prompt logprobs are gathered into."""

from __future__ import annotations

from typing import Any, ClassVar

from .common import HostBenchmark, sizes

NUM_POSITIONS = sizes([1, 1024, 65536], 1024)
NUM_TOKENS_PER_POSITION = sizes([1, 21], 21)


class EmptyCpu(HostBenchmark):
    """Allocation time of ``empty_cpu(num_positions, num_tokens_per_position)``."""

    params: ClassVar[list[list[Any]]] = [
        *HostBenchmark.params,
        NUM_POSITIONS,
        NUM_TOKENS_PER_POSITION,
    ]
    param_names: ClassVar[list[str]] = [
        *HostBenchmark.param_names,
        "num_positions",
        "num_tokens_per_position",
    ]

    def setup(self, backend: str, num_positions: int, num_tokens_per_position: int) -> None:
        subject = self.use_backend(backend, "LogprobsTensors.empty_cpu")
        self.empty_cpu = subject.type("LogprobsTensors").empty_cpu

    def time_empty_cpu(
        self, backend: str, num_positions: int, num_tokens_per_position: int
    ) -> None:
        self.empty_cpu(num_positions, num_tokens_per_position)

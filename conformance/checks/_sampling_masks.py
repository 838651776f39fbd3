"""Sample SamplingMaskLists contents shared by its check modules (vLLM 0.28.0 on).

A SamplingMaskLists is a CSR layout: position i keeps the token ids
``token_ids[offsets[i]:offsets[i + 1]]``; ``cu_num_generated_tokens`` says which
positions belong to which request.
"""

from __future__ import annotations

from itertools import accumulate

import numpy as np

# Five positions keeping 2, 0, 1, 3 and 1 token ids.
POSITIONS: list[list[int]] = [[50001, 50002], [], [50003], [50004, 50005, 50006], [50007]]
# Three requests owning 2, 1 and 2 positions.
CU: list[int] = [0, 2, 3, 5]


def token_ids(positions: list[list[int]]) -> np.ndarray:
    return np.array([t for p in positions for t in p], dtype=np.int32)


def offsets(positions: list[list[int]]) -> np.ndarray:
    return np.array([0, *accumulate(map(len, positions))], dtype=np.int64)


def make(cls, positions: list[list[int]] = POSITIONS, cu: list[int] | None = None):
    return cls(token_ids(positions), offsets(positions), cu)


def describe(positions: list[list[int]], cu: list[int] | None) -> str:
    return f"SamplingMaskLists(<{len(positions)} positions>, cu={cu})"

"""The fused gathering's kernels compile for the GPUs they are written for, here, without
one: Triton lowers them to PTX and its bundled ptxas to machine code for a named target,
which catches what its interpreter never sees (types, layouts, loop-carried values)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None,
    reason="Triton is not installed here (nox -s kernels installs it)",
)

#: Compiled in a process of its own, where Triton is not interpreting (it decides at import).
COMPILE_EVERY_SPECIALISATION = """
import sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from reference_speedups import fused_gather as fused

def compiled(kernel, types, constants, capability):
    signature = {
        name: "constexpr" if name in constants else types[name] for name in kernel.arg_names
    }
    source = ASTSource(kernel, signature, constants)
    return triton.compile(source, target=GPUTarget("cuda", capability, 32))

for capability in (80, 90):
    for values_type in ("*fp32", "*bf16"):
        for k in (0, 1, 5, 20, fused.MAX_NUM_LOGPROBS):
            for normalise in (False, True):
                common = dict(values_ptr=values_type, row_stride="i32", token_ids_ptr="*i64",
                              workspace_ptr="*i32", vocab="i32", chunks="i32")
                compiled(fused._chunk_kernel, {**common, "chunk_size": "i32"}, dict(
                    K=k, K_POW2=triton.next_power_of_2(max(k, 1)), BLOCK=fused._BLOCK,
                    NORMALISE=normalise, EMPTY_ID=fused._EMPTY_ID, NO_ID=fused._NO_ID,
                ), capability)
                compiled(fused._row_kernel, {**common, "out_ids_ptr": "*i32",
                         "out_values_ptr": "*fp32", "out_ranks_ptr": "*i64"}, dict(
                    K=k, CHUNKS_POW2=256,
                    CANDIDATES_POW2=triton.next_power_of_2(max(k * 64, 1)),
                    NORMALISE=normalise, NO_ID=fused._NO_ID,
                ), capability)
print("compiled")
"""


def test_every_specialisation_compiles_for_ampere_and_hopper() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", COMPILE_EVERY_SPECIALISATION],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]

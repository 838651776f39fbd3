"""Where the fused Triton gathering cannot build or launch, the reference gathers with
torch's way, says why once, and keeps raising what the device itself raised.

The kernels are stood in for (no Triton needed): these run in every CI."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from types import SimpleNamespace

import pytest
import torch

import reference
import reference_speedups
from reference.logprobs_ops import _gathered


def _logprobs(rows: int = 3, vocab: int = 2000) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(7)
    logprobs = torch.randn(rows, vocab, generator=generator).log_softmax(-1)
    return logprobs, torch.randint(0, vocab, (rows,), generator=generator)


def _kernels(monkeypatch: pytest.MonkeyPatch, fused_gather: Callable[..., object]) -> list:
    """Kernels that serve CPU tensors and fail as ``fused_gather`` does; its calls."""
    calls: list = []

    def recorded(*args: object, **kwargs: object) -> object:
        calls.append(kwargs)
        return fused_gather(*args, **kwargs)

    stand_in = SimpleNamespace(MAX_NUM_LOGPROBS=128, fused_gather=recorded)
    monkeypatch.setattr(reference_speedups, "_TRITON_DEVICES", ("cpu",))
    monkeypatch.setattr(reference_speedups, "_fused_gathering", lambda: stand_in)
    monkeypatch.setattr(reference_speedups, "_FUSED_FAILURE", [])
    return calls


def _unbuildable(*args: object, **kwargs: object) -> object:
    raise RuntimeError("PTX .version 9.9 does not support .target sm_90\nmore detail")


def test_kernels_that_fail_to_build_leave_torchs_way_and_say_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logprobs, token_ids = _logprobs()
    wanted = _gathered(logprobs, 5, token_ids)  # torch's way, before the kernels stand in
    calls = _kernels(monkeypatch, _unbuildable)
    with pytest.warns(RuntimeWarning, match="fused Triton gathering failed.*PTX .version 9.9"):
        found = reference.gather_logprobs(logprobs, 5, token_ids)
    assert torch.equal(found.logprob_token_ids, wanted[0])
    assert torch.equal(found.logprobs, wanted[1])
    assert torch.equal(found.selected_token_ranks, wanted[2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # given up: no second try, no second warning
        reference.gather_logprobs(logprobs, 5, token_ids)
    assert len(calls) == 1
    path = reference_speedups.path()
    assert "torch (the fused Triton kernels failed: RuntimeError: PTX" in path
    assert "more detail" not in path


@pytest.mark.parametrize(
    "device_error",
    [torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")]
    + (
        [torch.AcceleratorError("CUDA error: an illegal memory access")]
        if hasattr(torch, "AcceleratorError")
        else []
    ),
    ids=type,
)
def test_an_error_of_the_device_is_raised_and_the_kernels_kept(
    monkeypatch: pytest.MonkeyPatch, device_error: Exception
) -> None:
    # Out of memory now, or a device that failed: torch's way meets the same, so the
    # caller gets the error and a later call tries the kernels again.
    def failing(*args: object, **kwargs: object) -> object:
        raise device_error

    calls = _kernels(monkeypatch, failing)
    logprobs, token_ids = _logprobs()
    for _ in range(2):
        with pytest.raises(type(device_error)):
            reference.gather_logprobs(logprobs, 5, token_ids)
    assert len(calls) == 2 and reference_speedups._FUSED_FAILURE == []


def test_threads_failing_together_warn_once(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = 4
    everyone_failing = threading.Barrier(threads)

    def unbuildable_together(*args: object, **kwargs: object) -> object:
        everyone_failing.wait(timeout=30)
        return _unbuildable()

    _kernels(monkeypatch, unbuildable_together)
    logprobs, token_ids = _logprobs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        workers = [
            threading.Thread(target=reference.gather_logprobs, args=(logprobs, 5, token_ids))
            for _ in range(threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
    failed = [w for w in caught if "fused Triton gathering failed" in str(w.message)]
    assert len(failed) == 1 and len(reference_speedups._FUSED_FAILURE) == 1


def test_a_triton_that_fails_to_import_leaves_torchs_way_and_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pytest.TempPathFactory
) -> None:
    # A Triton pip sees but that cannot load (a missing libcuda, another torch's ABI):
    # the kernels' module fails to import, on a machine with a GPU.
    logprobs, token_ids = _logprobs()
    wanted = _gathered(logprobs, 5, token_ids)  # torch's way, before Triton breaks
    broken = tmp_path / "triton"  # type: ignore[operator]
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('libcuda.so.1: cannot open')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "reference_speedups.fused_gather", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(reference_speedups, "_TRITON_DEVICES", ("cpu",))
    monkeypatch.setattr(reference_speedups, "_FUSED_FAILURE", [])
    monkeypatch.setattr(reference_speedups, "_fused_gathering", _uncached_fused_gathering())
    with pytest.warns(RuntimeWarning, match="fused Triton gathering failed.*libcuda.so.1"):
        found = reference.gather_logprobs(logprobs, 5, token_ids)
    assert torch.equal(found.logprob_token_ids, wanted[0])
    assert torch.equal(found.selected_token_ranks, wanted[2])
    assert "the fused Triton kernels failed: ImportError: libcuda.so.1" in (
        reference_speedups.path()
    )


def _uncached_fused_gathering() -> Callable[[], object]:
    """The module's own lookup, uncached: its process-wide answer is not this test's."""
    return reference_speedups._fused_gathering.__wrapped__  # type: ignore[attr-defined]

"""The reference on accelerators (cuda, xpu, mps): results land on the right device,
agree with CPU, and ``get_output()`` waits for the device work it depends on.

Every test takes the ``accelerator`` fixture (tests/reference/conftest.py), which
runs it once per accelerator torch sees and skips it, with the reason, where
there is none.  The waiting checks keep the device busy on purpose: a copy that
does not wait for the compute stream then reads the placeholder values written
before the busy work instead of the ids written after it.
"""

from __future__ import annotations

import pytest
import torch
from speed_paths import DispatchedOps

from reference import (
    DeviceAsyncModelRunnerOutput,
    LogprobsTensors,
    SamplerOutput,
    gather_logprobs,
    pad_sampled_token_ids,
    unpad_sampled_token_ids,
)

pytestmark = pytest.mark.accelerator

ROWS = [[31_000, 31_001, 31_002], [], [7], [128_000, 5]]


def synchronize(device: torch.device) -> None:
    getattr(torch, device.type).synchronize()


def keep_busy(device: torch.device, size: int = 2048, rounds: int = 16) -> torch.Tensor:
    """Queue a few milliseconds of work on the current stream; returns its result."""
    x = torch.randn(size, size, device=device)
    for _ in range(rounds):
        x = torch.tanh(x @ x)
    return x


def test_pad_places_int32_ids_on_the_accelerator(accelerator):
    padded = pad_sampled_token_ids(ROWS, max_len=4, device=accelerator)
    assert padded.device.type == accelerator.type
    assert padded.dtype == torch.int32
    assert torch.equal(padded.cpu(), pad_sampled_token_ids(ROWS, max_len=4))


def test_unpad_reads_accelerator_tensors(accelerator):
    padded = pad_sampled_token_ids(ROWS, device=accelerator)
    assert unpad_sampled_token_ids(padded) == ROWS
    assert unpad_sampled_token_ids(padded, vocab_size=100_000) == [
        [31_000, 31_001, 31_002],
        [],
        [7],
        [5],
    ]


# One request, one request with drafts, four with drafts (the C extension's path).
UNPAD_SHAPES = [(1, 1), (1, 9), (4, 9)]


@pytest.mark.parametrize("shape", UNPAD_SHAPES)
def test_unpad_waits_for_the_work_that_writes_the_ids(accelerator, shape):
    rows, width = shape
    ids = torch.arange(50_000, 50_000 + rows * width, dtype=torch.int32).reshape(shape)
    ids[:, width // 2 + 1 :] = -1
    busy = keep_busy(accelerator)
    # Written on the device after milliseconds of work: a read that does not wait for
    # the stream sees memory not yet written.
    offset = (busy[0, 0] * 0).to(torch.int32) + 1
    sampled = torch.where(ids.to(accelerator) != -1, ids.to(accelerator) + offset, -1)
    expected = [[int(t) + 1 for t in row if t != -1] for row in ids.tolist()]
    assert unpad_sampled_token_ids(sampled, vocab_size=100_000) == expected


@pytest.mark.parametrize("shape", UNPAD_SHAPES)
def test_unpad_copies_a_cuda_batch_once_into_pinned_memory(accelerator, shape):
    # The one copy goes straight into pinned host memory (one DMA, where ``.cpu()``'s
    # pageable copy is staged by the driver); nothing else runs on the device.
    if accelerator.type != "cuda":
        pytest.skip(f"pinned copies are cuda's path; {accelerator.type} copies with .cpu()")
    sampled = torch.full(shape, 70_000, dtype=torch.int32, device=accelerator)
    sampled[:, -1] = -1
    unpad_sampled_token_ids(sampled)  # the caching host allocator's first block
    with DispatchedOps() as ops:
        rows = unpad_sampled_token_ids(sampled)
    copies = [args for func, args in ops.calls if func._schema.name == "aten::copy_"]
    assert len(copies) == 1, ops.names
    destination, source = copies[0][:2]
    assert source is sampled
    assert destination.device.type == "cpu" and destination.is_pinned()
    assert all(name == "aten::copy_" or name.startswith("aten::empty") for name in ops.names)
    assert rows == [[70_000] * (shape[1] - 1)] * shape[0]


def test_gather_logprobs_stays_on_the_accelerator_and_agrees_with_cpu(accelerator):
    generator = torch.Generator().manual_seed(1)
    logprobs = torch.randn(5, 1000, generator=generator).log_softmax(-1)
    logprobs[:, 10:20] = logprobs[:, 10:11]  # ties
    token_ids = torch.tensor([3, 15, 999, 0, 12])
    expected = gather_logprobs(logprobs, 4, token_ids)
    result = gather_logprobs(logprobs.to(accelerator), 4, token_ids.to(accelerator))
    for tensor in result:
        assert tensor.device.type == accelerator.type
    assert result.logprob_token_ids.dtype == torch.int32
    assert result.logprobs.dtype == torch.float32
    assert torch.equal(result.logprob_token_ids[:, 0].cpu(), expected.logprob_token_ids[:, 0])
    assert torch.equal(result.logprobs.cpu(), expected.logprobs)
    assert torch.equal(result.selected_token_ranks.cpu(), expected.selected_token_ranks)
    # Tied top-k ids may come in another order, but each must carry its listed value.
    top_ids = result.logprob_token_ids[:, 1:].cpu().long()
    assert torch.equal(logprobs.gather(1, top_ids), expected.logprobs[:, 1:])


def test_gather_logprobs_only_queues_work_on_the_accelerator(accelerator):
    stream = getattr(getattr(torch, accelerator.type), "current_stream", None)
    if stream is None or not hasattr(stream(), "query"):
        pytest.skip(f"{accelerator.type} has no stream to ask whether its work is done")
    logprobs = torch.randn(64, 32000, device=accelerator).log_softmax(-1)
    token_ids = torch.randint(0, 32000, (64,), device=accelerator)
    gather_logprobs(logprobs, 5, token_ids)  # the first call's one-off costs
    synchronize(accelerator)
    keep_busy(accelerator)
    result = gather_logprobs(logprobs, 5, token_ids)
    # Had the call waited for the device (reading the ids back to check them, say),
    # the busy work queued before it would be done by now.
    assert not stream().query(), "gather_logprobs waited for the device"
    synchronize(accelerator)
    assert result.selected_token_ranks.device.type == accelerator.type


def test_to_cpu_nonblocking_returns_cpu_tensors_with_the_values(accelerator):
    tensors = LogprobsTensors(
        torch.arange(12, dtype=torch.int32, device=accelerator).reshape(4, 3),
        torch.linspace(-3, 0, 12, device=accelerator).reshape(4, 3),
        torch.arange(4, dtype=torch.int32, device=accelerator),
    )
    host = tensors.to_cpu_nonblocking()
    assert host is not tensors
    assert type(host) is LogprobsTensors
    synchronize(accelerator)
    for copied, source in zip(host, tensors, strict=True):
        assert copied.device == torch.device("cpu")
        assert copied.dtype == source.dtype
        assert torch.equal(copied, source.cpu())


def test_get_output_waits_for_values_written_after_busy_device_work(accelerator):
    ids = pad_sampled_token_ids(ROWS, device=accelerator)
    generator = torch.Generator().manual_seed(2)
    logprobs_in = torch.randn(ids.numel(), 64, generator=generator).to(accelerator).log_softmax(-1)
    token_ids = ids.flatten().clamp(min=0).remainder(64)
    # The final values are computed up front and written into fresh buffers later,
    # after the busy work.
    final = gather_logprobs(logprobs_in, 2, token_ids)
    synchronize(accelerator)

    sampled = torch.full_like(ids, 12_345)
    logprobs = LogprobsTensors(*(torch.zeros_like(t) for t in final))
    keep_busy(accelerator)
    # Written only after the busy work, on the compute stream, as a sampler would;
    # nothing between here and the constructor waits for the device.
    sampled.copy_(ids)
    for destination, source in zip(logprobs, final, strict=True):
        destination.copy_(source)
    async_output = DeviceAsyncModelRunnerOutput(
        SamplerOutput(sampled, logprobs), [f"r{i}" for i in range(len(ROWS))]
    )
    # Drop our references: the async output must keep the device memory alive
    # until its copies are done, even while new allocations reuse the pool.
    del sampled, logprobs
    for _ in range(4):
        torch.full((len(ROWS), 3), -7, dtype=torch.int32, device=accelerator)
        torch.full((ids.numel(), 3), -7.0, device=accelerator)
        keep_busy(accelerator, size=512, rounds=2)

    output = async_output.get_output()
    assert output.sampled_token_ids == ROWS
    assert output.logprobs.cu_num_generated_tokens == [0, 3, 3, 4, 6]
    keep = ids.flatten().cpu() != -1
    expected = LogprobsTensors(*(t.cpu()[keep] for t in final))
    assert output.logprobs.logprob_token_ids == expected.logprob_token_ids.tolist()
    assert output.logprobs.logprobs == expected.logprobs.tolist()
    assert output.logprobs.sampled_token_ranks == expected.selected_token_ranks.tolist()
    with pytest.raises(RuntimeError):
        async_output.get_output()

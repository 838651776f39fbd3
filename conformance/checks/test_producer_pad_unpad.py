"""The backend's pad_sampled_token_ids / unpad_sampled_token_ids.

Padding gives SamplerOutput.sampled_token_ids: int32 [num_reqs, max_len] on the
requested device, each row its tokens followed by PLACEHOLDER_TOKEN_ID (-1) only
as trailing padding.  Unpadding gives lists of Python ints without -1 (and, with
vocab_size, without ids >= vocab_size), and is the inverse of padding.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given

from conformance.checks._support import expect_same, producer
from conformance.oracle import strategies
from conformance.oracle.failing import attempt, fail
from conformance.oracle.invariants import sampler_output_violations

pytestmark = pytest.mark.spec_type("SamplerOutput")


def _of_producer(name: str):
    """Marks a check of the backend's producer ``name`` (skipped when it declares none)."""

    def mark(check):
        return pytest.mark.producer(name)(pytest.mark.behaviour(f"producer.{name}")(check))

    return mark


PAD = _of_producer("pad_sampled_token_ids")
UNPAD = _of_producer("unpad_sampled_token_ids")

BATCHES = {
    "empty-batch": [],
    "only-empty-rows": [[], []],
    "single-row": [[70001]],
    "one-token-per-request": [[70001], [70002], [70003]],
    "mixed-lengths": [[70001, 70002, 70003], [], [70004], [70005, 70006]],
}


def _padded(rows: list[list[int]], max_len: int) -> list[list[int]]:
    return [row + [-1] * (max_len - len(row)) for row in rows]


class _Sampled:
    """Lets the SamplerOutput invariants check a bare padded tensor."""

    def __init__(self, ids: torch.Tensor) -> None:
        self.sampled_token_ids = ids
        self.logprobs_tensors = None


def _expect_padding(
    found: object, rows: list[list[int]], max_len: int, device: str, where: str
) -> None:
    if not isinstance(found, torch.Tensor):
        fail(f"{where}: expected a torch.Tensor, found {type(found).__name__}")
    if found.dtype != torch.int32:
        fail(f"{where}: expected dtype torch.int32, found {found.dtype}")
    if found.device.type != device:
        fail(f"{where}: expected a tensor on {device}, found one on {found.device}")
    if tuple(found.shape) != (len(rows), max_len):
        fail(f"{where}: expected shape [{len(rows)}, {max_len}], found {list(found.shape)}")
    violations = sampler_output_violations(_Sampled(found))
    if violations:
        fail(*(v.replace("SamplerOutput.sampled_token_ids", where) for v in violations))
    expect_same(found.cpu().tolist(), _padded(rows, max_len), where)


@PAD
@pytest.mark.parametrize("batch", list(BATCHES))
def test_pad_puts_tokens_first_and_minus_one_after(backend, device: str, batch: str) -> None:
    pad = producer(backend, "pad_sampled_token_ids")
    rows = BATCHES[batch]
    longest = max(map(len, rows), default=0)
    where = f"pad_sampled_token_ids(<{batch}>, device={device!r})"
    found = attempt(where, pad, rows, device=device)
    _expect_padding(found, rows, longest, device, where)


@PAD
def test_pad_to_a_larger_max_len(backend, device: str) -> None:
    pad = producer(backend, "pad_sampled_token_ids")
    rows = BATCHES["mixed-lengths"]
    where = f"pad_sampled_token_ids(<mixed-lengths>, max_len=5, device={device!r})"
    _expect_padding(attempt(where, pad, rows, max_len=5, device=device), rows, 5, device, where)


@PAD
@given(rows=strategies.token_id_rows)
def test_pad_agrees_with_reference(backend, reference_backend, rows) -> None:
    pad = producer(backend, "pad_sampled_token_ids")
    expected = reference_backend.pad_sampled_token_ids(rows)
    where = f"pad_sampled_token_ids({rows})"
    found = attempt(where, pad, rows)
    _expect_padding(found, rows, expected.shape[1], "cpu", where)


@UNPAD
@pytest.mark.parametrize("batch", list(BATCHES))
def test_unpad_drops_padding_and_gives_python_ints(
    backend, reference_backend, device: str, batch: str
) -> None:
    unpad = producer(backend, "unpad_sampled_token_ids")
    rows = BATCHES[batch]
    padded = reference_backend.pad_sampled_token_ids(rows, device=device)
    where = f"unpad_sampled_token_ids(<{batch} padded, on {device}>)"
    expect_same(attempt(where, unpad, padded), rows, where)


@UNPAD
def test_unpad_with_vocab_size_drops_ids_beyond_the_vocabulary(backend, reference_backend) -> None:
    unpad = producer(backend, "unpad_sampled_token_ids")
    padded = reference_backend.pad_sampled_token_ids([[5, 1000, 7], [999], [1001, 1002]])
    where = "unpad_sampled_token_ids(<[[5, 1000, 7], [999], [1001, 1002]]>, vocab_size=1000)"
    expect_same(attempt(where, unpad, padded, vocab_size=1000), [[5, 7], [999], []], where)


@UNPAD
@given(rows=strategies.token_id_rows)
def test_unpad_inverts_pad(backend, rows) -> None:
    pad = producer(backend, "pad_sampled_token_ids")
    unpad = producer(backend, "unpad_sampled_token_ids")
    padded = attempt(f"pad_sampled_token_ids({rows})", pad, rows)
    where = f"unpad_sampled_token_ids(pad_sampled_token_ids({rows}))"
    expect_same(attempt(where, unpad, padded), rows, where)

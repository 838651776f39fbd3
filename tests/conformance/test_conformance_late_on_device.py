"""The race check's busy real device (conformance/producers/late_on_device.py), run on CPU.

On the first H200 run every real-CUDA race record was skipped "inconclusive": the step
was built after the long work was queued, and building it moved tensors to the device
with pageable copies that waited, on the host, for that work.  The step is now built
from tensors already on the device and the long work queued after it; these tests hold
that order on CPU (where every call runs at once, so what is checked is what was
queued, in which order, and what the tensors hold)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance import load_backend
from conformance.checks import test_producer_async_output as race
from conformance.oracle import revisions
from conformance.producers import late_on_device
from conformance.producers.late_on_device import LateOnDevice
from conformance.producers.runtime import StepDevice


@pytest.fixture(autouse=True)
def _short_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(late_on_device, "BUSY_SIZE", 8)


def test_tensors_hold_zeros_until_the_work_then_their_values() -> None:
    late = LateOnDevice("cpu", iterations=2)
    values = torch.tensor([[70001, 70002], [70003, -1]], dtype=torch.int32)
    tensor = late.device_tensor(torch.zeros_like(values), label="sampled_token_ids")
    late.write_later(tensor, values, 0.2)
    assert late.idle()  # nothing queued yet
    assert tensor.tolist() == [[0, 0], [0, 0]]
    late.start()
    assert tensor.tolist() == values.tolist()
    assert tensor.dtype == torch.int32
    assert tensor.data_ptr() != values.data_ptr()  # written by the work, not aliased
    # CPU has no events to ask: the check cannot tell it idle, so it is not.
    assert not late.idle()


def test_float_values_pass_through_the_long_work_unchanged() -> None:
    late = LateOnDevice("cpu", iterations=3)
    values = torch.tensor([-0.5, -1.25, -3.0])
    tensor = late.device_tensor(torch.zeros_like(values))
    late.write_later(tensor, values)
    late.start()
    assert torch.equal(tensor, values)


@pytest.mark.parametrize("release", ["0.33.0", "0.34.0"])
def test_every_tensor_of_a_real_race_step_is_written_after_the_work(
    release: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race step on a real device: the ids (and, for Model Runner V2, what its
    sampler left), every logprobs part and the extras hold zeros when the step is built,
    and the case's values once the work queued after the building has run."""
    started: list[list[torch.Tensor]] = []
    start = LateOnDevice.start

    def noting_start(self: LateOnDevice) -> None:
        started.append([tensor.clone() for tensor, _ in self._writes])
        start(self)

    monkeypatch.setattr(LateOnDevice, "start", noting_start)
    backend = load_backend(f"reference@{release}")
    revision = revisions.revision(release)
    case = race._race_cases(revision)[0]
    producer = backend.async_output_producers("sampling")[0]
    step, busy = race._race_step(backend, producer, revision, StepDevice("cpu"), case)
    (before,) = started
    assert len(before) >= 5  # the ids, the logprobs' three parts and the NaN counts
    assert all(not tensor.any() for tensor in before), "written before the work"
    assert step.sampled_token_ids.tolist() == case.padded().tolist()
    assert step.sampler_output.sampled_token_ids is step.sampled_token_ids
    assert step.logprobs_tensors is not None
    assert step.logprobs_tensors.logprob_token_ids.any()
    assert busy()  # no event on CPU: taken as busy, as the check cannot tell


def _noting_steps(release: str):
    """The reference of ``release``, its revision, its sampling async output producer
    noting every step it is handed, and the list they are noted in."""
    backend = load_backend(f"reference@{release}")
    producer = backend.async_output_producers("sampling")[0]
    steps: list = []
    make = producer.make

    def noting(step):
        steps.append(step)
        return make(step)

    noted = dataclasses.replace(producer, make=noting)
    return backend, revisions.revision(release), noted, steps


def test_on_a_real_device_the_producer_is_called_once_before_the_busy_step() -> None:
    """Its first call's one-time costs (on an H200, longer than the busy work) are paid
    on a plain step, so the race step finds the device still busy."""
    backend, revision, producer, steps = _noting_steps("0.34.0")
    case = race._race_cases(revision)[0]
    race.test_get_output_waits_for_the_device(backend, producer, revision, StepDevice("cpu"), case)
    assert len(steps) == 2
    warm, raced = steps
    # The first is a plain step of the case; the second the late one, of the same shape
    # and no value in the same place (a host buffer the first filled cannot pass for it).
    assert warm.sampled_token_ids.tolist() == case.padded().tolist()
    assert warm.sampled_token_ids.shape == raced.sampled_token_ids.shape
    assert not (warm.sampled_token_ids == raced.sampled_token_ids).any()
    assert not (warm.logprobs_tensors.logprobs == raced.logprobs_tensors.logprobs).any()
    assert warm.sampled_token_ids is not raced.sampled_token_ids


def test_no_two_race_steps_of_a_run_write_the_same_values() -> None:
    """On the H200, mutants that never wait passed: their host buffers, reused from the
    step before, already held the same case's values.  Each race step is salted."""
    backend, revision, producer, raced = _noting_steps("0.33.0")
    for case in race._race_cases(revision):
        for _ in range(2):
            race.test_get_output_waits_for_the_device(
                backend, producer, revision, StepDevice("cpu"), case
            )
    late = raced[1::2]  # each call's second step (the first is the plain warm-up)
    assert len(late) == 4
    for i, a in enumerate(late):
        for b in late[i + 1 :]:
            if a.sampled_token_ids.shape == b.sampled_token_ids.shape:
                same = (a.sampled_token_ids == b.sampled_token_ids) & (a.sampled_token_ids >= 0)
                assert not same.any()
                assert not (a.logprobs_tensors.logprobs == b.logprobs_tensors.logprobs).any()


def test_a_salted_case_keeps_its_shape_and_padding_within_the_vocabulary() -> None:
    case = race._race_cases(revisions.revision("0.33.0"))[1]
    assert case.salted(1000).salt == 1  # the shift wraps, never to 0
    salted = case.salted(999)
    assert salted.salt == 999 and salted.name == case.name
    assert salted.padded().shape == case.padded().shape
    assert ((salted.padded() < 0) == (case.padded() < 0)).all()
    kept = case.padded() >= 0
    assert (salted.padded()[kept] == case.padded()[kept] + 999).all()
    assert int(salted.padded().max()) < case.vocab_size
    assert case.salted(0) == case


def _launches(call) -> list[tuple[str, tuple]]:
    """The operators ``call`` runs, each with its tensors' dtypes and shapes: the kernels
    a device would launch."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[tuple[str, tuple]] = []

    class Noting(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            tensors = [*args, *(kwargs or {}).values()]
            seen.append(
                (
                    str(func),
                    tuple(
                        (t.dtype, tuple(t.shape)) for t in tensors if isinstance(t, torch.Tensor)
                    ),
                )
            )
            return func(*args, **(kwargs or {}))

    with Noting():
        call()
    return seen


def test_every_kernel_queued_behind_the_work_was_launched_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the H200, even with the producer called once before, the first race step of each
    run found the device idle: the writes queued behind the long work were their kernels'
    first launches, and CUDA's lazy loading may synchronize the device for one.  So
    ``start`` rehearses them, into scratch tensors, before it queues the real work."""
    late = LateOnDevice("cpu", iterations=3)
    ids = late.device_tensor(torch.zeros(2, 3, dtype=torch.int32))
    logprobs = late.device_tensor(torch.zeros(2, 3))
    late.write_later(ids, torch.tensor([[5, 6, 7], [8, 9, 10]], dtype=torch.int32))
    late.write_later(logprobs, torch.full((2, 3), -0.25))
    phases: list[list[tuple[str, tuple]]] = []
    queue = LateOnDevice._queue

    def noting_queue(self: LateOnDevice, iterations: int, targets: list[torch.Tensor]) -> None:
        if phases:  # the real pass: nothing written to the step's tensors before it
            assert not ids.any() and not logprobs.any(), "the rehearsal wrote the step"
        phases.append(_launches(lambda: queue(self, iterations, targets)))

    monkeypatch.setattr(LateOnDevice, "_queue", noting_queue)
    late.start()
    rehearsal, real = phases
    assert set(real) <= set(rehearsal), set(real) - set(rehearsal)
    assert any("add" in name for name, _ in real)  # the writes are among them
    assert ids.tolist() == [[5, 6, 7], [8, 9, 10]]
    assert torch.equal(logprobs, torch.full((2, 3), -0.25))


@pytest.mark.parametrize("stale_logprobs", [False, True])
def test_stale_counts_unpadded_to_other_lengths_are_counted_as_missing_tokens(
    stale_logprobs: bool,
) -> None:
    """On the H200 a Model Runner V2 mutant read a stale ``num_sampled`` and unpadded every
    row to nothing: the message said "0 of 64 token ids differ".  Stale logprobs beside
    stale ids are named in the same failure."""
    backend = load_backend("reference@0.34.0")
    revision = revisions.revision("0.34.0")
    producer = backend.async_output_producers("sampling")[0]
    make = producer.make

    made: list[object] = []

    class EmptiedRows:
        """Stale only on the busy step (the check's second call, after its warm-up): the
        same step with the device idle comes out right, as a race's would."""

        def __init__(self, step):
            made.append(step)
            self._stale = len(made) == 2
            self._made = make(step)

        def get_output(self):
            output = self._made.get_output()
            if not self._stale:
                return output
            output.sampled_token_ids = [[] for _ in output.sampled_token_ids]
            if stale_logprobs:
                output.logprobs = output.logprobs._replace(logprobs=output.logprobs.logprobs * 0)
            return output

    producer = dataclasses.replace(producer, make=EmptiedRows)
    case = race._race_cases(revision)[0]
    with pytest.raises(
        pytest.fail.Exception,
        match=r"stale data in sampled_token_ids \(64 of 64 token ids differ or are missing\)",
    ) as raised:
        race.test_get_output_waits_for_the_device(
            backend, producer, revision, StepDevice("cpu"), case
        )
    named = "; logprobs.logprobs: array values differ"
    named = named in str(raised.value)
    assert named == stale_logprobs, str(raised.value)


@pytest.mark.skipif(not (RELEASES / "producers-mrv2").is_dir(), reason=SKIP_REASON)
@pytest.mark.parametrize(("release", "on_device"), [("0.33.0", False), ("0.34.0", True)])
def test_only_model_runner_v2_is_handed_the_boundaries_on_the_device(
    release: str, on_device: bool
) -> None:
    """Only Model Runner V2's sampler sets ``cu_num_generated_tokens_tensor``: vLLM
    0.33.0's first runner's async output is never handed one, 0.34.0's (Model Runner
    V2's) is."""
    backend = load_backend(f"vllm-release:{release}")
    revision = revisions.revision(release)
    case = race._race_cases(revision)[0]
    producer = backend.async_output_producers("sampling")[0]
    step, _ = race._race_step(backend, producer, revision, StepDevice("cpu"), case, landed=True)
    held = step.logprobs_tensors.cu_num_generated_tokens_tensor
    assert (held is not None) is on_device

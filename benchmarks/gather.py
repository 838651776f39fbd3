"""``gather_logprobs`` beside vLLM's own, at the shapes real models have.

Rows of log-probabilities (1 to 1024 tokens) over Llama 2's and Qwen 2's
vocabularies (32000, 151936), ``k`` = 0, 5, 20 top logprobs.  The peer is vLLM's
own ``Sampler.gather_logprobs`` where vLLM imports (it ``torch.compile``s its rank
count; the compile is paid in ``setup``, as is the reference's background one),
else a baseline written from its
description: ``topk``, the sampled token's logprob by ``gather``, the rank as the
count of entries ``>=`` it, eagerly.  ``track_gather_ratio_to_vllm`` is the
target's number: ours over the peer's, timed interleaved in one process, after
checking both give identical tensors; ``track_gather_ratio_to_read_floor`` says
how far ours is from one plain read of the input (the memory floor, where a
ratio near 1.0 is a tie at the machine's bandwidth).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from functools import cache
from typing import Any, ClassVar

import torch

from .backends import DEFAULT_RUNNER_PEER, release_text, vllm_own_at_hand, vllm_own_producer
from .common import (
    DeviceBenchmark,
    at_steady_state,
    backend_params,
    baseline,
    device_params,
    sizes,
)
from .device_memory import memory_gbps
from .interleaved import ratio_samples

NUM_TOKENS = sizes([1, 64, 1024], 64)
VOCABULARY = sizes([32000, 151936], 151936)
NUM_LOGPROBS = sizes([0, 5, 20], 5)


@cache
def _inputs(num_tokens: int, vocabulary: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded log-probabilities and sampled ids of ``num_tokens + 1`` rows on ``device``,
    cached per process: the measured batch is the first ``num_tokens``, the whole the
    batch of another size a peer sees first (:meth:`_BesideAPeer.their_steady`).  One
    draw for both, made on the device itself: at 1024 x 151936 a draw on the host is
    seconds, most of a setup.

    The ids are uniform over the vocabulary: the rank count reads every entry
    wherever the token ranks, and most of them fall outside any top-k.
    """
    generator = torch.Generator(device=device).manual_seed(num_tokens * 7 + vocabulary)
    shape = (num_tokens + 1, vocabulary)
    logits = torch.randn(shape, generator=generator, device=device)
    token_ids = torch.randint(0, vocabulary, (num_tokens + 1,), generator=generator, device=device)
    return logits.mul_(4).log_softmax(-1), token_ids


def gather_as_described(logprobs: torch.Tensor, k: int, token_ids: torch.Tensor) -> tuple:
    """vLLM's gathering, written from its description, without its compile step."""
    top_logprobs, top_ids = torch.topk(logprobs, k, dim=-1)
    token_ids = token_ids.unsqueeze(-1)
    token_logprobs = logprobs.gather(-1, token_ids)
    ranks = (logprobs >= token_logprobs).sum(-1)
    ids = torch.cat((token_ids, top_ids), dim=1).to(torch.int32)
    return ids, torch.cat((token_logprobs, top_logprobs), dim=1), ranks


@cache
def vllm_gather() -> Callable[..., Any] | None:
    """vLLM's own ``Sampler.gather_logprobs``: the installed vLLM's where it imports here,
    else that of the peer release's texts; else None."""
    return vllm_own_producer("gather_logprobs")


class _BesideAPeer(DeviceBenchmark):
    """The backend's ``gather_logprobs`` and a peer's on the same device tensors.

    No benchmark of its own: the two classes below say which peer and what they time.
    """

    params: ClassVar[list[list[Any]]] = [
        backend_params("gather_logprobs"),
        device_params(),
        NUM_TOKENS,
        VOCABULARY,
        NUM_LOGPROBS,
    ]
    param_names: ClassVar[list[str]] = [
        *DeviceBenchmark.param_names,
        "num_tokens",
        "vocabulary",
        "num_logprobs",
    ]
    peer_name = ""

    def peer(self) -> Callable[..., Any]:
        raise NotImplementedError

    def setup(
        self, backend: str, device: str, num_tokens: int, vocabulary: int, num_logprobs: int
    ) -> None:
        self.gather = self.use(backend, device).producer("gather_logprobs")
        self.their_gather = self.peer()
        self.other_logprobs, self.other_ids = _inputs(num_tokens, vocabulary, device)
        self.logprobs, self.token_ids = self.other_logprobs[:-1], self.other_ids[:-1]
        self.k = num_logprobs
        self.their_steady()
        self.our_steady()
        self.sync()

    def their_steady(self) -> None:
        """The peer at a serving loop's steady state, its compile paid here.

        A runner's batch size changes from step to step: vLLM's ``torch.compile``d
        rank count compiles for the first size, recompiles once with a dynamic batch
        dimension at the second (dynamo's automatic dynamic) and keeps that kernel,
        so the peer sees another batch size first, as the conformance warm-up does.
        """
        self.their_gather(self.other_logprobs, self.k, self.other_ids)
        self.their_gather(self.logprobs, self.k, self.token_ids)

    def our_steady(self) -> None:
        """Ours at steady state too: the reference's rank count tiers up after repeated
        large calls off the CPU, compiling in the background
        (``reference_speedups.compiled_count``)."""
        at_steady_state(
            lambda: self.gather(self.logprobs, self.k, self.token_ids), timeout=self.timeout / 2
        )

    def ours(self) -> None:
        self.gather(self.logprobs, self.k, self.token_ids)
        self.sync()

    def theirs(self) -> None:
        self.their_gather(self.logprobs, self.k, self.token_ids)
        self.sync()

    def read_once(self) -> None:
        self.logprobs.sum(-1)
        self.sync()

    def ratio(self) -> dict[str, Any]:
        """Ours over the peer's, interleaved, once both are known to give the same tensors."""
        found = self.gather(self.logprobs, self.k, self.token_ids)
        wanted = self.their_gather(self.logprobs, self.k, self.token_ids)
        self.require_same(found, wanted)
        return ratio_samples(self.ours, self.theirs, 0.5)

    def require_same(self, found: Any, wanted: Any, atol: float = 0.0) -> None:
        """Raise unless both ways gave the same tensors (log-probabilities within ``atol``)."""
        for name, a, b in zip(_FIELDS, found[:3], wanted[:3], strict=True):
            a, b = a.cpu(), b.cpu().to(a.dtype)
            close = a.is_floating_point() and torch.allclose(a, b, rtol=0, atol=atol)
            if not (close or torch.equal(a, b)):
                raise AssertionError(f"gather_logprobs and {self.peer_name} differ in {name}")


_FIELDS = ("logprob_token_ids", "logprobs", "selected_token_ranks")


class GatherLogprobs(_BesideAPeer):
    """The backend's ``gather_logprobs`` beside vLLM's way as described (eager, no compile)."""

    peer_name = "vLLM's way as described"

    def peer(self) -> Callable[..., Any]:
        return gather_as_described

    def time_gather_logprobs(self, *params: Any) -> None:
        self.ours()

    @baseline
    def time_gather_vllm_described(self, *params: Any) -> None:
        self.theirs()

    def track_gather_ratio_to_described(self, *params: Any) -> dict[str, Any]:
        return self.ratio()

    track_gather_ratio_to_described.unit = "ratio"  # type: ignore[attr-defined]


class GatherLogprobsBesideVllm(_BesideAPeer):
    """The backend's ``gather_logprobs`` beside vLLM's own (skipped where vLLM does not import)."""

    # The target (at most 1.0x at every shape): its grid stays whole in the main job
    # where vLLM is installed; elsewhere one shape says why it is skipped.
    params: ClassVar[list[list[Any]]] = [
        *_BesideAPeer.params[:2],
        sizes([1, 64, 1024], 64, target=vllm_own_at_hand()),
        sizes([32000, 151936], 151936, target=vllm_own_at_hand()),
        sizes([0, 5, 20], 5, target=vllm_own_at_hand()),
    ]

    # vLLM's first call compiles (over a minute with inductor on 2 cores).
    timeout = 600.0
    peer_name = "vLLM's own Sampler.gather_logprobs"

    def peer(self) -> Callable[..., Any]:
        found = vllm_gather()
        if found is None:
            raise NotImplementedError(
                "vLLM's Sampler.gather_logprobs neither imports here nor comes from the peer "
                "release's texts (python -m conformance.cli.fetch_releases --all)"
            )
        return found

    @baseline
    def time_gather_vllm_own(self, *params: Any) -> None:
        self.theirs()

    def track_gather_ratio_to_vllm(self, *params: Any) -> dict[str, Any]:
        return self.ratio()

    def track_gather_ratio_to_read_floor(self, *params: Any) -> dict[str, Any]:
        """Ours over one plain read of the same logprobs, interleaved: the memory floor.

        Every gathering reads each entry once at least (the rank counts the whole
        row), so a plain ``sum(-1)`` over the input is the least work there is.
        Where ours runs at it, a ratio to vLLM's close to 1.0 is a tie at the
        machine's bandwidth (the report's target decides such a shape there).
        """
        return ratio_samples(self.ours, self.read_once, 0.5)

    track_gather_ratio_to_vllm.unit = "ratio"  # type: ignore[attr-defined]
    track_gather_ratio_to_read_floor.unit = "ratio"  # type: ignore[attr-defined]


class GatherAtTheMemoryLimit(_BesideAPeer):
    """The backend's ``gather_logprobs`` against the least any gathering costs: one read of
    its input at the device memory's rated bandwidth (:mod:`benchmarks.device_memory`)
    plus one kernel launch and the wait, timed in the same run (the smallest kernel
    queued, then the wait, as ``ours`` waits).  On a GPU; skipped where the device's
    bandwidth is not known (a CPU: ``$OUTPUTS_MEMORY_GBPS`` states one)."""

    peer_name = "one read of the input at the rated bandwidth"

    def setup(
        self, backend: str, device: str, num_tokens: int, vocabulary: int, num_logprobs: int
    ) -> None:
        self.gbps = memory_gbps(device)
        super().setup(backend, device, num_tokens, vocabulary, num_logprobs)
        self.scratch = torch.zeros(1, device=device)

    def peer(self) -> Callable[..., Any]:
        return gather_as_described  # never timed: the floor is no gathering

    def their_steady(self) -> None:
        pass

    def launch_once(self) -> None:
        self.scratch.add_(1)
        self.sync()

    def track_gather_ratio_to_bandwidth_floor(self, *params: Any) -> dict[str, Any]:
        """Ours over (input bytes / rated bandwidth + one launch and wait), interleaved."""
        read_seconds = self.logprobs.numel() * self.logprobs.element_size() / (self.gbps * 1e9)
        return ratio_samples(self.ours, self.launch_once, 0.5, plus=read_seconds)

    def track_memory_gbps(self, *params: Any) -> float:
        """The rated bandwidth the floor was computed with (GB/s), for the report."""
        return self.gbps

    track_gather_ratio_to_bandwidth_floor.unit = "ratio"  # type: ignore[attr-defined]
    # A rating, not a throughput measured: the reports' GB/s tables leave it out.
    track_memory_gbps.unit = "GB/s rated"  # type: ignore[attr-defined]


#: The release whose Model Runner V2 gathering is timed: the newest's.
MRV2_RELEASE = DEFAULT_RUNNER_PEER


@cache
def mrv2_gathering() -> Callable[..., Any]:
    """The newest release's Model Runner V2 gathering from its texts; skipped where it cannot run.

    A Triton kernel (``compute_topk_scores``): it runs on a GPU, or on CPU under Triton's
    interpreter (``TRITON_INTERPRET=1``: the benchmark's path proved, its numbers no
    measure of anything).
    """
    from conformance.backends.vllm_producers import mrv2_gathering_of_release_text

    if importlib.util.find_spec("triton") is None:
        raise NotImplementedError("Model Runner V2's gathering is a Triton kernel: no Triton here")
    text = release_text(MRV2_RELEASE)
    found = mrv2_gathering_of_release_text(text, MRV2_RELEASE)
    if found is None:
        raise NotImplementedError(f"vLLM {MRV2_RELEASE}'s texts hold no Model Runner V2 gathering")
    return found


class GatherBesideModelRunnerV2(_BesideAPeer):
    """The backend's way from logits (its ``gather_logprobs_of_logits`` where it has one,
    as the reference does; else the first runner's: ``log_softmax``, then its
    ``gather_logprobs``) beside Model Runner V2's Triton gathering of the same logits
    (the newest release's ``compute_topk_scores``: log-probabilities of the gathered ids
    only, never the whole row).  On cuda; on CPU only under Triton's interpreter.

    The inputs are log-probabilities, which are logits too (``log_softmax`` of them is
    themselves): both ways give the same ids and ranks, and log-probabilities equal to
    float32 rounding (checked before timing).
    """

    timeout = 300.0
    peer_name = f"vLLM {MRV2_RELEASE}'s Model Runner V2 compute_topk_scores"

    def setup(
        self, backend: str, device: str, num_tokens: int, vocabulary: int, num_logprobs: int
    ) -> None:
        if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
            raise NotImplementedError("a Triton kernel: on cpu only under TRITON_INTERPRET=1")
        subject = self.use(backend, device)
        gather = subject.producer("gather_logprobs")
        self.of_logits = getattr(
            subject.module,
            "gather_logprobs_of_logits",
            lambda logits, k, token_ids: gather(logits.log_softmax(-1), k, token_ids),
        )
        super().setup(backend, device, num_tokens, vocabulary, num_logprobs)

    def peer(self) -> Callable[..., Any]:
        return mrv2_gathering()

    def our_steady(self) -> None:
        at_steady_state(
            lambda: self.of_logits(self.logprobs, self.k, self.token_ids), timeout=self.timeout / 2
        )

    def ours_of_logits(self) -> None:
        self.of_logits(self.logprobs, self.k, self.token_ids)
        self.sync()

    @baseline
    def time_gather_mrv2_triton(self, *params: Any) -> None:
        self.theirs()

    def time_gather_of_logits(self, *params: Any) -> None:
        self.ours_of_logits()

    def track_gather_ratio_to_mrv2_triton(self, *params: Any) -> dict[str, Any]:
        found = self.of_logits(self.logprobs, self.k, self.token_ids)
        wanted = self.their_gather(self.logprobs, self.k, self.token_ids)
        self.require_same(found, wanted, atol=1e-4)
        return ratio_samples(self.ours_of_logits, self.theirs, 0.5)

    track_gather_ratio_to_mrv2_triton.unit = "ratio"  # type: ignore[attr-defined]

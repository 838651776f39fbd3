"""What the report knows about this project's benchmarks: families, limits, targets.

The benchmarks are matched by name patterns and parameter names, never by an
exact list, so a renamed or added benchmark still lands in the right table
and a missing one shows up as "no data" instead of an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

#: PCIe Gen5 x16, per direction (DESIGN section 5): the link's limit where a run did not
#: record the one it measured against (:data:`LINK_RATING`).
LINK_LIMIT_GBPS = 63.0
LINK_NAME = "PCIe Gen5 x16"
#: The benchmark recording the link's rated GB/s a machine's run measured against
#: (``$OUTPUTS_LINK_GBPS``, else PCIe Gen5 x16's).
LINK_RATING = re.compile(r"^link\.LinkRating\.track_rated_gbps$")
#: What pinned device-to-host copies reach on H100-class machines.
PINNED_D2H_GBPS = (52.0, 57.0)
#: Where copies stop being latency-bound.
LATENCY_BOUND_BYTES = 1 << 20

# The size parameters of this project's own benchmarks (benchmarks/*.py), and the
# payload column ``with_payload_bytes`` derives for transfers.
#: Columns that give a payload size in bytes.
BYTES_PARAMS = ("payload_bytes",)
#: Parameters that give a problem size (x axis of latency plots), best first.
SIZE_PARAMS = (*BYTES_PARAMS, "num_tokens", "num_reqs", "num_positions")
#: Parameters that give a batch size (x axis of the tolists and unpad plots), best first.
BATCH_PARAMS = ("num_reqs", "num_tokens")


@dataclass(frozen=True)
class Family:
    """A group of benchmarks about one operation, found by name."""

    key: str
    title: str
    pattern: re.Pattern[str]

    def rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["benchmark"].str.contains(self.pattern, na=False)]


TRANSFER = Family(
    "transfer", "Device-to-host transfer", re.compile(r"transfer|d2h|to_cpu|copy|^link\.", re.I)
)
TOLISTS = Family("tolists", "tolists", re.compile(r"tolist", re.I))
UNPAD = Family("unpad", "Unpad sampled token ids", re.compile(r"unpad", re.I))
GATHER = Family("gather", "gather_logprobs", re.compile(r"gather", re.I))
DECODE_STEP = Family(
    "decode_step",
    "A whole decode step (async output: get_output())",
    re.compile(r"decode_step", re.I),
)

#: A unit that is a throughput in GB/s.
GBPS_UNIT = re.compile(r"^\s*Gi?B/s\s*$", re.I)
#: A unit that is a cost in ns per element.
NS_PER_ELEMENT_UNIT = re.compile(r"ns\s*(?:/|per)\s*(?:elem|element|item|token|value)", re.I)


@dataclass(frozen=True)
class RatioTarget:
    """A target stated as a ratio of two timings measured side by side.

    ``baseline`` is the way we measure against: a row is on its side when its
    benchmark name or one of its string parameters matches it.  The other
    rows of the family whose name matches ``subject`` are our way.  With ``higher_is_better`` the target is
    ``baseline_time / subject_time >= limit`` (a speed-up), otherwise
    ``subject_time / baseline_time <= limit`` (a slowdown allowance).
    """

    key: str
    title: str
    family: Family
    baseline: re.Pattern[str]
    subject: re.Pattern[str]
    limit: float
    higher_is_better: bool
    ratio_label: str
    #: A ``track_`` benchmark that already reports this ratio, timed interleaved
    #: in one process (fairer than two separate timings); preferred when present.
    direct: re.Pattern[str] | None = None
    #: ``(parameter, smallest value)``: the target holds only from that size up
    #: (a fixed per-call cost dominates below it); None: at every shape.
    from_size: tuple[str, int] | None = None
    #: A ``track_`` benchmark reporting the per-call overhead in microseconds,
    #: shown beside the ratio (what a ratio hides at small shapes).
    overhead: re.Pattern[str] | None = None
    #: A ``track_`` benchmark of our time over one plain read of the same input (the
    #: least work any way must do: the memory floor).  A shape too close to call
    #: whose ratio meets the limit is decided there when ours runs at that floor:
    #: the peer cannot read the input meaningfully faster either, so the two tie.
    #: Only for a slowdown allowance (``higher_is_better`` False).
    floor: re.Pattern[str] | None = None
    #: At the floor, a ratio within the spread of the limit is a tie that meets it
    #: (a count of bytes both sides must hold); otherwise it must meet the limit itself
    #: (a time, where the floor is measured apart from the peer).
    tie_at_floor_meets_limit: bool = False
    #: What the floor is and why being at it decides, as the report says it after "ours
    #: runs within 5% of" (a time floor by default).
    floor_meaning: str = (
        "one plain read of the same input, which the peer must read too, so it cannot be "
        "meaningfully faster: the two tie at the machine's bandwidth"
    )
    #: The device types the target holds on (a GPU kernel's target), with why; None:
    #: every device.
    devices: tuple[str, ...] | None = None
    devices_why: str = ""

    #: ``(track, least)``: the target holds only at the shapes where that ``track_``
    #: benchmark (a ratio over the same shapes) reads at least ``least``: where the peer
    #: runs so close to what every way must do that the limit lies below that floor, no
    #: way can meet it.  A shape it did not measure stays judged.  None: every shape.
    only_where: tuple[re.Pattern[str], float] | None = None
    #: What ``only_where`` measures, as the report says it after "judged only where".
    only_where_meaning: str = ""

    def __post_init__(self) -> None:
        if self.floor is not None and self.higher_is_better:
            raise ValueError(f"{self.key}: a memory floor decides only a slowdown allowance")


#: tolists() against ndarray.tolist() is measured (``track_tolists_vs_ndarray_tolist``)
#: but no target: it weighs torch's Tensor.tolist(), the spec's own way, against
#: numpy's, 1.10 to 1.21 from run to run beside a 1.2 limit, so no run decided it.
#: What a step pays for tolists() is judged in the whole decode step instead.
#: What the floor of a decode step's peak memory is (the least any async output holds).
HELD_FLOOR_MEANING = (
    "the least any conforming async output of the step holds, which the peer "
    'cannot hold meaningfully less than: a tie, which meets an "at most"'
)

TARGETS = (
    RatioTarget(
        key="transfer_vs_pinned_copy",
        title="LogprobsTensors.to_cpu_nonblocking() at least 95% of the rate of a plain copy "
        "into host buffers pinned in advance, every shape (on a device with a link)",
        family=TRANSFER,
        baseline=re.compile(r"pinned", re.I),
        subject=re.compile(r"to_cpu_nonblocking", re.I),
        limit=0.95,
        higher_is_better=True,
        ratio_label="the pinned copy's time / ours (fraction of its rate)",
        direct=re.compile(r"track_fraction_of_pinned_copy$", re.I),
    ),
    RatioTarget(
        key="unpad_speedup",
        title="unpad_sampled_token_ids >= 2x faster than vLLM's mask-per-row way, every shape",
        family=UNPAD,
        baseline=re.compile(r"mask|baseline", re.I),
        subject=re.compile(r"time_unpad_sampled_token_ids$", re.I),
        limit=2.0,
        higher_is_better=True,
        ratio_label="vLLM's time / ours (speed-up, x)",
        direct=re.compile(r"unpad_speedup_over_vllm$", re.I),
    ),
    RatioTarget(
        key="unpad_vs_parse_output",
        title="unpad_sampled_token_ids >= 2x faster than vLLM's own "
        "RejectionSampler.parse_output, every shape (where vLLM imports)",
        family=UNPAD,
        baseline=re.compile(r"parse_output", re.I),
        subject=re.compile(r"time_unpad_sampled_token_ids$", re.I),
        limit=2.0,
        higher_is_better=True,
        ratio_label="vLLM's own time / ours (speed-up, x)",
        direct=re.compile(r"unpad_speedup_over_vllm_parse_output$", re.I),
    ),
    RatioTarget(
        key="tolists_vs_torch",
        title="LogprobsTensors.tolists() within 1.2x of torch's Tensor.tolist() on the same "
        "tensors (the floor of the spec's way), every shape",
        family=TOLISTS,
        baseline=re.compile(r"torch_tolist", re.I),
        subject=re.compile(r"time_tolists$", re.I),
        limit=1.2,
        higher_is_better=False,
        ratio_label="tolists() time / Tensor.tolist() time (x)",
        direct=re.compile(r"tolists_vs_torch", re.I),
        overhead=re.compile(r"tolists_overhead.*_us$", re.I),
    ),
    RatioTarget(
        key="gather_vs_vllm",
        title="gather_logprobs at most 1.0x vLLM's own Sampler.gather_logprobs, identical "
        "results, every shape (where vLLM imports)",
        family=GATHER,
        baseline=re.compile(r"vllm_own", re.I),
        subject=re.compile(r"time_gather_logprobs$", re.I),
        limit=1.0,
        higher_is_better=False,
        ratio_label="our time / vLLM's own (x)",
        direct=re.compile(r"gather_ratio_to_vllm$", re.I),
        floor=re.compile(r"gather_ratio_to_read_floor$", re.I),
    ),
    RatioTarget(
        key="gather_at_memory_limit",
        title="gather_logprobs at most 4x one read of its input at the device memory's "
        "rated bandwidth plus one kernel launch, every shape (on a GPU)",
        family=GATHER,
        baseline=re.compile(r"bandwidth_floor", re.I),
        subject=re.compile(r"time_gather_logprobs$", re.I),
        limit=4.0,
        higher_is_better=False,
        ratio_label="our time / (input bytes / rated bandwidth + one launch) (x)",
        direct=re.compile(r"gather_ratio_to_bandwidth_floor$", re.I),
        devices=("cuda",),
        devices_why="the fused Triton gathering's target; a CPU has no launch to add",
    ),
    RatioTarget(
        key="gather_vs_vllm_on_gpu",
        title="gather_logprobs at least 5x faster than vLLM's own Sampler.gather_logprobs "
        "(at most 0.2x its time), identical results, every shape (on a GPU)",
        family=GATHER,
        baseline=re.compile(r"vllm_own", re.I),
        subject=re.compile(r"time_gather_logprobs$", re.I),
        limit=0.2,
        higher_is_better=False,
        ratio_label="our time / vLLM's own (x)",
        direct=re.compile(r"gather_ratio_to_vllm$", re.I),
        devices=("cuda",),
        devices_why="the fused Triton gathering's target; on CPU the target is 1.0x",
    ),
    RatioTarget(
        key="gather_vs_mrv2",
        title="Gathering from logits at least 5x faster than the newest release's Model "
        "Runner V2 Triton gathering (at most 0.2x its time), every shape (on a GPU)",
        family=GATHER,
        baseline=re.compile(r"mrv2_triton", re.I),
        subject=re.compile(r"time_gather_of_logits$", re.I),
        limit=0.2,
        higher_is_better=False,
        ratio_label="our time / Model Runner V2's (x)",
        direct=re.compile(r"gather_ratio_to_mrv2_triton$", re.I),
        devices=("cuda",),
        devices_why="a Triton kernel against a Triton kernel: on CPU only Triton's "
        "interpreter runs them, which measures nothing",
    ),
    RatioTarget(
        key="decode_step_vs_vllm",
        title="A whole decode step (the async output built, get_output()) at most 0.5x the "
        "time of vLLM 0.33.0's own AsyncGPUModelRunnerOutput, every shape",
        family=DECODE_STEP,
        baseline=re.compile(r"vllm_0_33_own", re.I),
        subject=re.compile(r"time_decode_step$", re.I),
        limit=0.5,
        higher_is_better=False,
        ratio_label="our time / vLLM 0.33.0's own (x)",
        direct=re.compile(r"decode_step_ratio_to_vllm_0_33$", re.I),
    ),
    RatioTarget(
        key="decode_step_vs_vllm_0_34",
        title="A whole decode step at most 0.5x the time of vLLM 0.34.0's own Model Runner "
        "V2 AsyncOutput (the newest release's default runner), wherever that is at least "
        "2x the floor of the copies and the one wait",
        family=DECODE_STEP,
        baseline=re.compile(r"vllm_0_34_own", re.I),
        subject=re.compile(r"time_decode_step$", re.I),
        limit=0.5,
        higher_is_better=False,
        ratio_label="our time / vLLM 0.34.0's own (x)",
        direct=re.compile(r"decode_step_ratio_to_vllm_0_34$", re.I),
        # Every async output pays the copies and the wait: where vLLM's own step takes
        # less than twice that, half of its time lies below the floor.
        only_where=(re.compile(r"vllm_0_34_ratio_to_copies_floor$", re.I), 2.0),
        only_where_meaning="vLLM 0.34.0's own time over the copies and the wait alone",
    ),
    RatioTarget(
        key="decode_step_vs_floor",
        title="A whole decode step (the reference at 0.34.0's revision) within 1.2x of its "
        "floor, the copies and the one wait measured alone in the same run, every shape",
        family=DECODE_STEP,
        # No separate timing of the floor: only the interleaved track measures it.
        baseline=re.compile(r"copies_and_wait_own", re.I),
        subject=re.compile(r"time_decode_step$", re.I),
        limit=1.2,
        higher_is_better=False,
        ratio_label="our time / the copies and the wait alone (x)",
        direct=re.compile(r"decode_step_ratio_to_copies_floor_0_34$", re.I),
    ),
    RatioTarget(
        key="decode_step_memory_vs_vllm_0_34",
        title="A whole decode step's peak host memory at most that of vLLM 0.34.0's own "
        "Model Runner V2 AsyncOutput, every shape",
        family=DECODE_STEP,
        baseline=re.compile(r"vllm_0_34_own", re.I),
        subject=re.compile(r"peakmem_decode_step$", re.I),
        limit=1.0,
        higher_is_better=False,
        ratio_label="our peak host memory / vLLM 0.34.0's own (x)",
        direct=re.compile(r"decode_step_peak_bytes_ratio_to_vllm_0_34$", re.I),
        floor=re.compile(r"decode_step_peak_bytes_ratio_to_floor_0_34$", re.I),
        tie_at_floor_meets_limit=True,
        floor_meaning=HELD_FLOOR_MEANING,
    ),
    RatioTarget(
        key="decode_step_memory_vs_vllm",
        title="A whole decode step's peak host memory (Python heap and torch's CPU "
        "allocator) at most that of vLLM 0.33.0's own, every shape",
        family=DECODE_STEP,
        baseline=re.compile(r"vllm_0_33_own", re.I),
        subject=re.compile(r"peakmem_decode_step$", re.I),
        limit=1.0,
        higher_is_better=False,
        ratio_label="our peak host memory / vLLM 0.33.0's own (x)",
        direct=re.compile(r"decode_step_peak_bytes_ratio_to_vllm_0_33$", re.I),
        floor=re.compile(r"decode_step_peak_bytes_ratio_to_floor$", re.I),
        tie_at_floor_meets_limit=True,
        floor_meaning=HELD_FLOOR_MEANING,
    ),
)


#: ``LogprobsTensors`` bytes per token row: int32 ids and float32 logprobs of
#: ``num_logprobs + 1`` columns, plus one int64 rank (the sampler's dtype; spec
#: section 4 of DESIGN).  Used to put transfers on a payload-bytes axis when a
#: benchmark gives only its shape.
def logprobs_payload_bytes(num_tokens: pd.Series, num_logprobs: pd.Series) -> pd.Series:
    return num_tokens * ((num_logprobs + 1) * (4 + 4) + 8)


def with_payload_bytes(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``payload_bytes`` to transfer rows that have num_tokens and num_logprobs.

    A row that has it as a parameter already (the link's plain copies) keeps its own.
    """
    if not {"num_tokens", "num_logprobs"} <= set(frame.columns):
        return frame
    tokens = pd.to_numeric(frame["num_tokens"], errors="coerce")
    logprobs = pd.to_numeric(frame["num_logprobs"], errors="coerce")
    is_transfer = frame["benchmark"].str.contains(TRANSFER.pattern, na=False)
    payload = logprobs_payload_bytes(tokens, logprobs).where(is_transfer)
    if "payload_bytes" in frame.columns:
        payload = pd.to_numeric(frame["payload_bytes"], errors="coerce").fillna(payload)
    return frame.assign(payload_bytes=payload.astype("Int64"))


def pick_param(frame: pd.DataFrame, preferred: tuple[str, ...]) -> str | None:
    """The first of ``preferred`` that is a numeric parameter column with data."""
    for name in preferred:
        if name in frame.columns:
            values = pd.to_numeric(frame[name], errors="coerce")
            if values.notna().any():
                return name
    return None


def link_limit(frame: pd.DataFrame, machine: str | None = None) -> tuple[float, str]:
    """``(GB/s, its name)`` of the link ``machine``'s run measured against (any
    machine's, where None): the rating it recorded, else :data:`LINK_LIMIT_GBPS`."""
    rows = frame[frame["benchmark"].str.match(LINK_RATING, na=False) & (frame["status"] == "ok")]
    if machine is not None:
        rows = rows[rows["machine"] == machine]
    values = pd.to_numeric(rows["value"], errors="coerce").dropna()
    if values.empty or float(values.iloc[-1]) == LINK_LIMIT_GBPS:
        return LINK_LIMIT_GBPS, LINK_NAME
    return float(values.iloc[-1]), "rated link"

"""The GB/s table: the link's plain copies and the transfer's methods, side by side.

On the first H200 run it came out empty: the link's rows have a ``memory`` parameter
and no ``method``, the transfer's the reverse, and grouping by both dropped every row."""

from __future__ import annotations

import pandas as pd
from result_rows import result_row

from benchmarks.gather import GatherAtTheMemoryLimit
from reports.sections.throughput import bandwidth_section


def _gbps(benchmark: str, value: float, **params: object) -> dict[str, object]:
    return {**result_row(benchmark, value, kind="track", unit="GB/s", **params), "device": "cuda"}


def test_benchmarks_with_different_parameters_each_get_their_peak() -> None:
    link = "link.LinkBandwidth.track_gbps"
    transfer = "transfer.TransferBandwidth.track_bandwidth"
    frame = pd.DataFrame(
        [
            _gbps(link, 0.37, payload_bytes=4096, memory="pinned"),
            _gbps(link, 54.9, payload_bytes=67108864, memory="pinned"),
            _gbps(link, 16.8, payload_bytes=67108864, memory="pageable"),
            _gbps(transfer, 20.5, num_tokens=65536, num_logprobs=20, method="pinned"),
            _gbps(transfer, 9.1, num_tokens=65536, num_logprobs=20, method="cpu"),
        ]
    )
    (table,) = bandwidth_section(frame).blocks
    rows = {row[2]: tuple(row) for row in table.frame.itertuples(index=False)}
    assert rows["`LinkBandwidth.track_gbps` memory=pinned"][3:] == ("54.90", "64 MiB", "87%")
    assert rows["`LinkBandwidth.track_gbps` memory=pageable"][3] == "16.80"
    assert rows["`TransferBandwidth.track_bandwidth` method=pinned"][3] == "20.50"
    assert rows["`TransferBandwidth.track_bandwidth` method=cpu"][3] == "9.10"
    assert len(rows) == 4


def test_a_rating_in_gb_s_is_no_transfer() -> None:
    """The gathering's floor records the memory bandwidth it assumed (4800 GB/s on an
    H200): no device-to-host throughput, never the table's peak."""
    frame = pd.DataFrame(
        [
            _gbps("link.LinkBandwidth.track_gbps", 54.9, payload_bytes=67108864, memory="pinned"),
            _gbps("gather.GatherAtTheMemoryLimit.track_memory_gbps", 4800.0, num_tokens=64),
        ]
    )
    frame.loc[1, "unit"] = GatherAtTheMemoryLimit.track_memory_gbps.unit
    (table,) = bandwidth_section(frame).blocks
    assert [row[3] for row in table.frame.itertuples(index=False)] == ["54.90"]

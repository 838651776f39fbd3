"""What vLLM's consumer reads of a step's logprobs: each request's rows, by ``slice_request``.

vLLM's scheduler reads request ``i``'s logprobs as
``logprobs.slice_request(i, len(sampled_token_ids[i]))`` (0.12.0 on): the rows from
``cu_num_generated_tokens[i]`` (``i`` without cu), one per token it keeps.  vLLM's two
runners lay the rows out differently under speculative decoding (the first filters
them to the kept tokens, Model Runner V2 keeps a row per verified position and a cu
that counts them) and the consumer reads the same from both; so a producer's
logprobs are right when every request reads its own rows, whatever the layout.
The reading is the revision's own ``slice_request`` (the reference's), not the
backend's: that one is judged on its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.oracle.failing import fail
from reference.revisions import reference_module
from reference.revisions.model import SpecRevision

_FIELDS = ("logprob_token_ids", "logprobs", "sampled_token_ranks")


def reads_by_request(revision: SpecRevision) -> bool:
    """Whether the revision's consumer reads logprobs by ``LogprobsLists.slice_request``."""
    spec = revision.types.get("LogprobsLists")
    return spec is not None and any(m.name == "slice_request" for m in spec.methods)


def request_reads(revision: SpecRevision, logprobs: Any, counts: list[int]) -> list[list[tuple]]:
    """Per request, the rows ``slice_request(i, counts[i])`` reads: (ids, logprobs, rank)."""
    lists_type = reference_module(revision.name).LogprobsLists
    values = {name: getattr(logprobs, name, None) for name in lists_type._fields}
    as_read = lists_type(**values)
    reads = []
    for i, count in enumerate(counts):
        part = as_read.slice_request(i, count)
        columns = [_plain(getattr(part, name)) for name in _FIELDS]
        reads.append([tuple(column[r] for column in columns) for r in range(len(columns[0]))])
    return reads


def expect_read_alike(revision: SpecRevision, found: Any, expected: Any, where: str) -> None:
    """Every request of ``found`` reads the logprobs rows it reads in ``expected``.

    ``expected`` is the revision's own output of the step; a request's count is the
    length of its sampled row there (a discarded request reads none)."""
    counts = [len(row) for row in expected.sampled_token_ids]
    want = request_reads(revision, expected.logprobs, counts)
    try:
        got = request_reads(revision, found.logprobs, counts)
    except Exception as error:  # a layout the reading cannot slice at all
        fail(
            f"{where}.logprobs: vLLM's consumer cannot read it by request "
            f"(slice_request raised {type(error).__name__}: {error})"
        )
    req_ids = list(getattr(expected, "req_ids", []))
    for i, (rows_found, rows_wanted) in enumerate(zip(got, want, strict=True)):
        name = f" ({req_ids[i]})" if i < len(req_ids) else ""
        for r, wanted in enumerate(rows_wanted):
            seen = rows_found[r] if r < len(rows_found) else None
            if seen != wanted:
                fail(
                    f"{where}.logprobs: request {i}{name} reads the wrong logprobs: "
                    f"slice_request({i}, {counts[i]}) row {r} (its sampled token {r}) is "
                    f"{_describe(seen)}, expected {_describe(wanted)}"
                    + _layout_hint(revision, found.logprobs, expected.logprobs)
                )


#: How each revision's runner lays the logprobs rows out, where rows hold several tokens.
_LAYOUTS = {
    "cu-of-kept-tokens": "a row per kept token, cu_num_generated_tokens counting each "
    "request's kept tokens",
    "filtered-to-kept-tokens": "the rows of kept tokens only, cu_num_generated_tokens "
    "counting them",
    "every-logits-row": "a row per logits row (every draft position), "
    "cu_num_generated_tokens counting the logits rows",
}


def _layout_hint(revision: SpecRevision, found: Any, expected: Any) -> str:
    """Where the offsets differ: both, and the layout the revision's runner hands over."""
    cu_found = getattr(found, "cu_num_generated_tokens", None)
    cu_wanted = getattr(expected, "cu_num_generated_tokens", None)
    if cu_wanted is None or _plain(cu_found) == _plain(cu_wanted):
        return ""
    layout = _LAYOUTS.get(revision.async_output.logprobs)
    how = f" ({layout})" if layout else ""
    return (
        f"; its cu_num_generated_tokens is {_plain(cu_found)}, the runner's of this revision "
        f"{_plain(cu_wanted)}{how}"
    )


def _plain(column: Any) -> list[Any]:
    if column is None:
        return []
    return np.asarray(column).tolist()


def _describe(row: tuple | None) -> str:
    if row is None:
        return "missing (the slice is shorter)"
    ids, logprobs, rank = row
    return f"ids {ids}, logprobs {logprobs}, rank {rank}"

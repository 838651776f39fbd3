"""Sample values the checks share, in the representation the judged revision uses.

Token ids are realistic (above the small-int cache).  From 0.11.1 on
``LogprobsLists`` holds numpy arrays (and 0.11.1's ``sampled_token_ids`` rows are
arrays); the revision's annotations say which, so the checks build what the
revision's producers build.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from reference.revisions.model import SpecRevision

LOGPROBS_TENSORS_FIELDS = ("logprob_token_ids", "logprobs", "selected_token_ranks")


def sample_tensors(num_rows: int = 3, width: int = 3) -> tuple[torch.Tensor, ...]:
    ids = torch.arange(70000, 70000 + num_rows * width, dtype=torch.int32).reshape(num_rows, width)
    logprobs = -torch.arange(num_rows * width, dtype=torch.float32).reshape(num_rows, width) / 4
    ranks = torch.arange(1, num_rows + 1, dtype=torch.int64)
    return ids, logprobs, ranks


def lists_are_arrays(revision: SpecRevision) -> bool:
    """True when the revision's LogprobsLists holds numpy arrays rather than Python lists."""
    return revision.logprobs_lists_hold_arrays


def rows_are_arrays(revision: SpecRevision) -> bool:
    """True when ModelRunnerOutput.sampled_token_ids rows are numpy arrays (0.11.1)."""
    return revision.sampled_rows_are_arrays


def lists_fields(revision: SpecRevision) -> tuple[str, ...]:
    return revision.types["LogprobsLists"].field_names


def lists_values(
    revision: SpecRevision,
    ids: list[list[int]],
    logprobs: list[list[float]],
    ranks: list[int],
) -> tuple[Any, Any, Any]:
    """The three row fields of a LogprobsLists as the revision's tolists() gives them."""
    if not lists_are_arrays(revision):
        return ids, logprobs, ranks
    width = len(ids[0]) if ids else 0
    return (
        np.array(ids, dtype=np.int32).reshape(len(ids), width),
        np.array(logprobs, dtype=np.float32).reshape(len(logprobs), width),
        np.array(ranks, dtype=np.int64),
    )


def make_logprobs_lists(
    module: Any,
    revision: SpecRevision,
    ids: list[list[int]],
    logprobs: list[list[float]],
    ranks: list[int],
    cu: list[int] | None = None,
) -> Any:
    """The module's LogprobsLists of these rows (cu only where the revision has the field)."""
    values = lists_values(revision, ids, logprobs, ranks)
    if "cu_num_generated_tokens" in lists_fields(revision):
        return module.LogprobsLists(*values, cu)
    if cu is not None:
        raise ValueError(f"revision {revision.name}: LogprobsLists has no cu_num_generated_tokens")
    return module.LogprobsLists(*values)


def sampled_rows(revision: SpecRevision, rows: list[list[int]]) -> list[Any]:
    """``ModelRunnerOutput.sampled_token_ids`` in the revision's representation."""
    if rows_are_arrays(revision):
        return [np.array(row, dtype=np.int64) for row in rows]
    return rows

"""Each operation called the way the backend's spec revision spells it.

Releases renamed and reshaped the hot-path operations (``spec/README.md`` has
the history); a benchmark names the operation, this module picks the spelling
from the revision's behaviours, and raises ``NotImplementedError`` (asv:
skipped) where the revision has no such operation.  Results of one benchmark
are then comparable across releases: the same work, each release's own way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .backends import Subject

SLICE_BEHAVIOURS = (
    "LogprobsLists.slice:rows",
    "LogprobsLists.slice:cu-not-rebased",
    "LogprobsLists.slice:cu-rebased",
)


def lists_with_cu(subject: Subject, tensors: Any, cu: list[int]) -> Any:
    """``tensors.tolists()`` carrying ``cu`` (speculative decoding), as the revision allows."""
    subject.require("LogprobsTensors.tolists:cu-argument")
    return tensors.tolists(cu)


def request_slicer(subject: Subject, lists: Any) -> Callable[[int], Any]:
    """A function cutting request ``i``'s rows out of ``lists`` the revision's way.

    ``slice_request(i, num_positions)`` from 0.12.0 on (``num_positions`` from the
    lists' own cu, one row without it); ``slice(i, i + 1)`` before.
    """
    if subject.has("LogprobsLists.slice_request"):
        cu = lists.cu_num_generated_tokens
        if cu is None:
            return lambda i: lists.slice_request(i, 1)
        counts = np.diff(np.asarray(cu)).tolist()
        return lambda i: lists.slice_request(i, counts[i])
    if any(subject.has(b) for b in SLICE_BEHAVIOURS):
        return lambda i: lists.slice(i, i + 1)
    raise NotImplementedError(f"{subject.spec} (revision {subject.revision_name}) cannot slice")


def with_cu_tensor(subject: Subject, tensors: Any, cu_tensor: Any) -> Any:
    """``tensors`` carrying ``cu_num_generated_tokens_tensor`` (0.29.0 on), else skip."""
    subject.require("LogprobsTensors.cu_num_generated_tokens_tensor")
    return tensors._replace(cu_num_generated_tokens_tensor=cu_tensor)


def sampled_token_ids(subject: Subject, rows: Sequence[Sequence[int]]) -> list[Any]:
    """``ModelRunnerOutput.sampled_token_ids`` as the revision types it.

    Python lists everywhere but 0.11.1/0.11.2, which annotate ``list[np.ndarray]``.
    """
    if "ndarray" in subject.field_annotation("ModelRunnerOutput", "sampled_token_ids"):
        return [np.asarray(row, dtype=np.int64) for row in rows]
    return [list(row) for row in rows]


def model_runner_output(subject: Subject, values: dict[str, Any]) -> Any:
    """A ``ModelRunnerOutput`` of ``values`` (by keyword); fields the revision requires
    but ``values`` leaves out get None, fields it lacks are dropped."""
    cls = subject.type("ModelRunnerOutput")
    spec = subject.revision.type("ModelRunnerOutput") if subject.revision is not None else None
    if spec is None:
        return cls(**values)
    known = set(spec.field_names)
    kwargs = {k: v for k, v in values.items() if k in known}
    for f in spec.fields:
        if f.name not in kwargs and not f.has_default:
            kwargs[f.name] = None
    return cls(**kwargs)

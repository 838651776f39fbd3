"""The invariants of DESIGN.md section 4, as functions a backend can call on its own objects.

``check_sampler_output(obj)`` and friends raise one :class:`ConformanceError` that
lists *every* violated invariant, each naming the member, what was expected and
what was found.  The ``*_violations`` functions return that list instead (empty
when the object conforms); the suite's checks use them.  Each takes the spec
``revision`` the object follows (default 2025.10): from 0.11.1 on ``LogprobsLists``
holds numpy arrays, 0.11.1's ``sampled_token_ids`` rows are arrays, and from
0.14.0 on ``pooler_output`` may be None.

Objects are checked by their members, not by ``isinstance``: a backend's own
classes are what is being checked.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import torch

from conformance.oracle.compare import differences_between, kind_of, short
from reference.revisions import DEFAULT_REVISION
from reference.revisions import revision as find_revision
from reference.revisions.model import SpecRevision

PLACEHOLDER_TOKEN_ID = -1
# Rank dtypes a consumer must accept: vLLM's sampler emits int64, empty_cpu allocates int32.
RANK_DTYPES = (torch.int32, torch.int64)


class ConformanceError(AssertionError):
    """An object violates one or more invariants; ``violations`` lists them all."""

    def __init__(
        self, subject: str, violations: Sequence[str], revision: str = DEFAULT_REVISION
    ) -> None:
        self.subject = subject
        self.violations = list(violations)
        lines = "\n".join(f"  - {v}" for v in self.violations)
        super().__init__(
            f"{subject} violates {len(self.violations)} invariant(s) of spec revision "
            f"{revision}:\n{lines}"
        )


def check_logprobs_tensors(obj: object, *, revision: str = DEFAULT_REVISION) -> None:
    """Raise :class:`ConformanceError` unless ``obj`` is a well-formed ``LogprobsTensors``.

    Its three tensors are int32 ``logprob_token_ids`` [n, k + 1], float32 ``logprobs``
    of the same shape and int32 or int64 ``selected_token_ranks`` [n], on one device;
    token ids are >= 0, columns 1..k are sorted by logprob descending, and ranks are
    1-based and at least the number of top-k entries >= the sampled token's logprob.
    """
    _raise_if("LogprobsTensors", logprobs_tensors_violations(obj), revision)


def check_logprobs_lists(
    obj: object, num_reqs: int | None = None, *, revision: str = DEFAULT_REVISION
) -> None:
    """Raise unless ``obj`` is a well-formed ``LogprobsLists`` (for ``num_reqs`` requests).

    Rows are Python lists of Python ints / floats (numpy arrays from 0.11.1 on) of one
    width k + 1, as many in each field, with the value rules of ``check_logprobs_tensors``;
    ``cu_num_generated_tokens``, when set, starts at 0, never decreases, ends at the number
    of rows and has ``num_reqs + 1`` entries.
    """
    violations = logprobs_lists_violations(obj, num_reqs=num_reqs, revision=revision)
    _raise_if("LogprobsLists", violations, revision)


def check_sampler_output(obj: object, *, revision: str = DEFAULT_REVISION) -> None:
    """Raise unless ``obj`` is a well-formed ``SamplerOutput``.

    ``sampled_token_ids`` is an int32 tensor [num_reqs, max_num_generated_tokens] whose
    rows hold token ids >= 0 followed only by PLACEHOLDER_TOKEN_ID (-1) padding;
    ``logprobs_tensors``, when set, is a well-formed LogprobsTensors on the same device
    with one row per generated token or per padded position.
    """
    _raise_if("SamplerOutput", sampler_output_violations(obj), revision)


def check_model_runner_output(obj: object, *, revision: str = DEFAULT_REVISION) -> None:
    """Raise unless ``obj`` is a well-formed ``ModelRunnerOutput`` (pickle round trip included).

    ``req_id_to_index == {r: i for i, r in enumerate(req_ids)}``; ``sampled_token_ids``
    has one row per request of token ids >= 0 (Python ints; numpy arrays in 0.11.1);
    ``logprobs``, when set, is a well-formed LogprobsLists whose cu gives request i
    ``len(sampled_token_ids[i])`` rows; ``prompt_logprobs_dict`` holds CPU tensors;
    ``pooler_output`` aligns with ``req_ids`` or is empty (or None from 0.14.0 on);
    ``num_nans_in_logits`` is None or ``dict[str, int]``; and a pickle round trip
    leaves the object unchanged.
    """
    violations = model_runner_output_violations(obj, revision=revision)
    _raise_if("ModelRunnerOutput", violations, revision)


def _raise_if(subject: str, violations: list[str], revision: str) -> None:
    if violations:
        raise ConformanceError(subject, violations, find_revision(revision).name)


def _spec(revision: str | SpecRevision) -> SpecRevision:
    return revision if isinstance(revision, SpecRevision) else find_revision(revision)


def _annotation(revision: SpecRevision, type_name: str, field: str) -> str:
    spec = revision.types[type_name].field_named(field)
    return spec.annotation if spec is not None else ""


# --- LogprobsTensors ---------------------------------------------------------------


def logprobs_tensors_violations(obj: object, where: str = "LogprobsTensors") -> list[str]:
    out: list[str] = []
    names = ("logprob_token_ids", "logprobs", "selected_token_ranks")
    values = {}
    for name in names:
        value = getattr(obj, name, None)
        if not isinstance(value, torch.Tensor):
            out.append(f"{where}.{name}: expected a torch.Tensor, found {kind_of(value)}")
        else:
            values[name] = value
    if len(values) < 3:
        return out
    ids, logprobs, ranks = (values[n] for n in names)
    if ids.dtype != torch.int32:
        out.append(f"{where}.logprob_token_ids: expected dtype torch.int32, found {ids.dtype}")
    if logprobs.dtype != torch.float32:
        out.append(f"{where}.logprobs: expected dtype torch.float32, found {logprobs.dtype}")
    if ranks.dtype not in RANK_DTYPES:
        out.append(
            f"{where}.selected_token_ranks: expected dtype torch.int32 or torch.int64, "
            f"found {ranks.dtype}"
        )
    if ids.dim() != 2:
        out.append(f"{where}.logprob_token_ids: expected shape [n, k + 1], found {list(ids.shape)}")
        return out
    if tuple(logprobs.shape) != tuple(ids.shape):
        out.append(
            f"{where}.logprobs: expected the shape of logprob_token_ids {list(ids.shape)}, "
            f"found {list(logprobs.shape)}"
        )
    if tuple(ranks.shape) != (ids.shape[0],):
        out.append(
            f"{where}.selected_token_ranks: expected shape [{ids.shape[0]}] (one per row), "
            f"found {list(ranks.shape)}"
        )
    if len({ids.device, logprobs.device, ranks.device}) != 1:
        out.append(
            f"{where}: expected all three tensors on one device, found "
            f"{ids.device}, {logprobs.device}, {ranks.device}"
        )
    if out:
        return out
    return out + _logprobs_value_violations(
        ids.cpu().tolist(),
        logprobs.cpu().tolist(),
        ranks.cpu().tolist(),
        where,
        ranks_name="selected_token_ranks",
    )


# --- LogprobsLists -----------------------------------------------------------------


def logprobs_lists_violations(
    obj: object,
    num_reqs: int | None = None,
    where: str = "LogprobsLists",
    *,
    revision: str | SpecRevision = DEFAULT_REVISION,
) -> list[str]:
    arrays = _spec(revision).logprobs_lists_hold_arrays
    ids = getattr(obj, "logprob_token_ids", None)
    logprobs = getattr(obj, "logprobs", None)
    ranks = getattr(obj, "sampled_token_ranks", None)
    cu = getattr(obj, "cu_num_generated_tokens", None)
    if arrays:
        out = _array(ids, "i", 2, f"{where}.logprob_token_ids")
        out += _array(logprobs, "f", 2, f"{where}.logprobs")
        out += _array(ranks, "i", 1, f"{where}.sampled_token_ranks")
        if out:
            return out
        assert isinstance(ids, np.ndarray) and isinstance(logprobs, np.ndarray)
        assert isinstance(ranks, np.ndarray)
        ids, logprobs, ranks = ids.tolist(), logprobs.tolist(), ranks.tolist()
    else:
        out = _python_rows(ids, int, f"{where}.logprob_token_ids")
        out += _python_rows(logprobs, float, f"{where}.logprobs")
        out += _python_list(ranks, int, f"{where}.sampled_token_ranks")
        if out:
            return out
    assert isinstance(ids, list) and isinstance(logprobs, list) and isinstance(ranks, list)
    if not len(ids) == len(logprobs) == len(ranks):
        out.append(
            f"{where}: expected as many rows in logprob_token_ids, logprobs and "
            f"sampled_token_ranks, found {len(ids)}, {len(logprobs)}, {len(ranks)}"
        )
    widths = {len(row) for row in ids} | {len(row) for row in logprobs}
    if len(widths) > 1:
        out.append(
            f"{where}: expected every row of logprob_token_ids and logprobs to have the "
            f"same width k + 1, found widths {sorted(widths)}"
        )
    if cu is not None:
        out += _cu_violations(cu, len(ids), num_reqs, f"{where}.cu_num_generated_tokens")
    if out:
        return out
    return _logprobs_value_violations(ids, logprobs, ranks, where)


def _array(value: object, kind: str, ndim: int, where: str) -> list[str]:
    """A numpy array of dtype kind ``kind`` ("i" integer, "f" floating) and ``ndim`` dims."""
    name = {"i": "integer", "f": "floating-point"}[kind]
    if not isinstance(value, np.ndarray):
        return [f"{where}: expected a numpy array ({name}, {ndim}-D), found {kind_of(value)}"]
    if value.dtype.kind != kind and not (kind == "i" and value.dtype.kind == "u"):
        return [f"{where}: expected an {name} numpy array, found dtype {value.dtype}"]
    if value.ndim != ndim:
        return [f"{where}: expected a {ndim}-D array, found shape {list(value.shape)}"]
    return []


def _cu_violations(cu: object, num_rows: int, num_reqs: int | None, where: str) -> list[str]:
    out = _python_list(cu, int, where)
    if out:
        return out
    assert isinstance(cu, list)
    if not cu or cu[0] != 0:
        out.append(f"{where}: expected cu[0] == 0, found {cu[:1] or 'an empty list'}")
    if any(b < a for a, b in pairwise(cu)):
        out.append(f"{where}: expected non-decreasing values, found {cu}")
    if cu and cu[-1] != num_rows:
        out.append(
            f"{where}: expected the last entry to be the number of rows {num_rows}, found {cu[-1]}"
        )
    if num_reqs is not None and len(cu) != num_reqs + 1:
        out.append(f"{where}: expected num_reqs + 1 = {num_reqs + 1} entries, found {len(cu)}")
    return out


def _logprobs_value_violations(
    ids: list[list[int]],
    logprobs: list[list[float]],
    ranks: list[int],
    where: str,
    ranks_name: str = "sampled_token_ranks",
) -> list[str]:
    out: list[str] = []
    for i, (row_ids, row_lp, rank) in enumerate(zip(ids, logprobs, ranks, strict=False)):
        if any(t < 0 for t in row_ids):
            out.append(f"{where}.logprob_token_ids[{i}]: expected token ids >= 0, found {row_ids}")
        top = row_lp[1:]
        if any(b > a for a, b in pairwise(top)):
            out.append(
                f"{where}.logprobs[{i}][1:]: expected the top-k sorted by logprob "
                f"descending, found {top}"
            )
        if rank < 1:
            out.append(f"{where}.{ranks_name}[{i}]: expected a 1-based rank >= 1, found {rank}")
        elif row_lp:
            # Pessimistic rank counts every entry >= the token's logprob, so at least
            # the top-k entries that are >= it.
            at_least = sum(1 for v in top if v >= row_lp[0])
            if rank < at_least:
                out.append(
                    f"{where}.{ranks_name}[{i}]: expected >= {at_least} (top-k entries "
                    f"with logprob >= the sampled token's {row_lp[0]}), found {rank}"
                )
        if len(out) >= 5:
            out.append(f"{where}: (further rows not checked)")
            break
    return out


# --- SamplerOutput -----------------------------------------------------------------


def sampler_output_violations(obj: object) -> list[str]:
    out: list[str] = []
    ids = getattr(obj, "sampled_token_ids", None)
    logprobs = getattr(obj, "logprobs_tensors", None) if hasattr(obj, "logprobs_tensors") else ...
    if logprobs is ...:
        out.append("SamplerOutput.logprobs_tensors: expected a field, found none")
    if not isinstance(ids, torch.Tensor):
        return [f"SamplerOutput.sampled_token_ids: expected a torch.Tensor, found {kind_of(ids)}"]
    if ids.dtype != torch.int32:
        out.append(
            f"SamplerOutput.sampled_token_ids: expected dtype torch.int32, found {ids.dtype}"
        )
    if ids.dim() != 2:
        out.append(
            "SamplerOutput.sampled_token_ids: expected shape [num_reqs, "
            f"max_num_generated_tokens], found {list(ids.shape)}"
        )
        return out
    rows = ids.cpu().tolist()
    for i, row in enumerate(rows):
        valid = [t for t in row if t != PLACEHOLDER_TOKEN_ID]
        if row[: len(valid)] != valid:
            out.append(
                f"SamplerOutput.sampled_token_ids[{i}]: expected PLACEHOLDER_TOKEN_ID (-1) only "
                f"as trailing padding, found {row}"
            )
        elif any(t < 0 for t in valid):
            out.append(
                f"SamplerOutput.sampled_token_ids[{i}]: expected token ids >= 0 or -1 padding, "
                f"found {row}"
            )
    if logprobs is not None and logprobs is not ...:
        found = logprobs_tensors_violations(logprobs, "SamplerOutput.logprobs_tensors")
        out += found
        if not found:
            num_rows = logprobs.logprob_token_ids.shape[0]
            generated = sum(t != PLACEHOLDER_TOKEN_ID for row in rows for t in row)
            padded = ids.shape[0] * ids.shape[1]
            if num_rows not in (generated, padded):
                out.append(
                    f"SamplerOutput.logprobs_tensors: expected one row per generated token "
                    f"({generated}) or per padded position ({padded}), found {num_rows} rows"
                )
            if logprobs.logprob_token_ids.device != ids.device:
                out.append(
                    "SamplerOutput.logprobs_tensors: expected the device of sampled_token_ids "
                    f"({ids.device}), found {logprobs.logprob_token_ids.device}"
                )
    return out


# --- ModelRunnerOutput -------------------------------------------------------------


def model_runner_output_violations(
    obj: object,
    *,
    pickle_round_trip: bool = True,
    revision: str | SpecRevision = DEFAULT_REVISION,
) -> list[str]:
    spec = _spec(revision)
    out: list[str] = []
    w = "ModelRunnerOutput"
    req_ids = getattr(obj, "req_ids", None)
    out += _python_list(req_ids, str, f"{w}.req_ids")
    if out:
        return out
    assert isinstance(req_ids, list)
    expected_index = {r: i for i, r in enumerate(req_ids)}
    index = getattr(obj, "req_id_to_index", None)
    has_index = "req_id_to_index" in spec.types["ModelRunnerOutput"].field_names
    # From 0.34.0 the scheduler maps rows by req_ids: no index to hold to them.
    if has_index and (type(index) is not dict or index != expected_index):
        out.append(
            f"{w}.req_id_to_index: expected {{r: i for i, r in enumerate(req_ids)}} = "
            f"{short(expected_index)}, found {short(index)}"
        )
    sampled = getattr(obj, "sampled_token_ids", None)
    if spec.sampled_rows_are_arrays:
        found = _array_rows(sampled, f"{w}.sampled_token_ids")
        if not found:
            assert isinstance(sampled, list)
            sampled = [row.tolist() for row in sampled]
    else:
        found = _python_rows(sampled, int, f"{w}.sampled_token_ids")
    out += found
    if not found:
        assert isinstance(sampled, list)
        if len(sampled) != len(req_ids):
            out.append(
                f"{w}.sampled_token_ids: expected one list per request ({len(req_ids)}), "
                f"found {len(sampled)}"
            )
        for i, row in enumerate(sampled):
            if any(t < 0 for t in row):
                out.append(
                    f"{w}.sampled_token_ids[{i}]: expected token ids >= 0 (no "
                    f"PLACEHOLDER_TOKEN_ID), found {row}"
                )
                break
        out += _model_runner_logprobs(obj, req_ids, sampled, spec)
    out += _prompt_logprobs(getattr(obj, "prompt_logprobs_dict", None))
    pooler = getattr(obj, "pooler_output", None)
    may_be_none = _annotation(spec, "ModelRunnerOutput", "pooler_output").endswith("| None")
    if pooler is not None or not may_be_none:
        out += _pooler_output(pooler, len(req_ids))
    nans = getattr(obj, "num_nans_in_logits", None)
    if nans is not None and (
        type(nans) is not dict
        or not all(type(k) is str and type(v) is int for k, v in nans.items())
    ):
        out.append(f"{w}.num_nans_in_logits: expected None or dict[str, int], found {short(nans)}")
    kv = getattr(obj, "kv_connector_output", None)
    # Only that it is a KVConnectorOutput at all: its own fields are its own checks' business.
    if kv is not None and not all(hasattr(kv, n) for n in ("finished_sending", "finished_recving")):
        out.append(
            f"{w}.kv_connector_output: expected None or a KVConnectorOutput, found {kind_of(kv)}"
        )
    if pickle_round_trip and not out:
        out += _pickle_violations(obj, w)
    return out


def _model_runner_logprobs(
    obj: object, req_ids: list[str], sampled: list[list[int]], spec: SpecRevision
) -> list[str]:
    w = "ModelRunnerOutput.logprobs"
    logprobs = getattr(obj, "logprobs", None)
    if logprobs is None:
        return []
    out = logprobs_lists_violations(logprobs, where=w, revision=spec)
    if out:
        return out
    rows = len(logprobs.logprob_token_ids)
    cu = getattr(logprobs, "cu_num_generated_tokens", None)
    if cu is not None:
        out += _cu_violations(cu, rows, len(req_ids), f"{w}.cu_num_generated_tokens")
        if not out:
            owned = [b - a for a, b in pairwise(cu)]
            lengths = [len(r) for r in sampled]
            if owned != lengths:
                out.append(
                    f"{w}.cu_num_generated_tokens: expected request i to own "
                    f"len(sampled_token_ids[i]) rows {lengths}, found {owned}"
                )
    elif rows not in (len(req_ids), sum(map(len, sampled))):
        out.append(
            f"{w}: without cu_num_generated_tokens expected one row per request "
            f"({len(req_ids)}) or per sampled token ({sum(map(len, sampled))}), found {rows}"
        )
    return out


def _prompt_logprobs(value: object) -> list[str]:
    w = "ModelRunnerOutput.prompt_logprobs_dict"
    if type(value) is not dict:
        return [f"{w}: expected dict[str, LogprobsTensors | None], found {kind_of(value)}"]
    out: list[str] = []
    for req_id, tensors in value.items():
        if type(req_id) is not str:
            out.append(f"{w}: expected str keys, found {req_id!r}")
        if tensors is None:
            continue
        where = f"{w}[{req_id!r}]"
        found = logprobs_tensors_violations(tensors, where)
        out += found
        if not found and tensors.logprob_token_ids.device.type != "cpu":
            out.append(
                f"{where}: expected tensors on CPU, found {tensors.logprob_token_ids.device}"
            )
    return out


def _pooler_output(value: object, num_reqs: int) -> list[str]:
    w = "ModelRunnerOutput.pooler_output"
    if type(value) is not list:
        return [f"{w}: expected list[torch.Tensor | None], found {kind_of(value)}"]
    # A generation step has no pooler output at all (an empty list, as vLLM sends).
    if value and len(value) != num_reqs:
        return [f"{w}: expected one entry per request ({num_reqs}) or none, found {len(value)}"]
    bad = [i for i, v in enumerate(value) if v is not None and not isinstance(v, torch.Tensor)]
    if bad:
        return [f"{w}[{bad[0]}]: expected a torch.Tensor or None, found {kind_of(value[bad[0]])}"]
    return []


def _pickle_violations(obj: object, where: str) -> list[str]:
    try:
        copy = pickle.loads(pickle.dumps(obj))
    except Exception as error:  # any failure to pickle is the violation itself
        return [
            f"{where}: expected to survive pickle round trip, pickling raised "
            f"{type(error).__name__}: {error}"
        ]
    if type(copy) is not type(obj):
        return [f"{where}: pickle round trip gave {kind_of(copy)}, expected {kind_of(obj)}"]
    differences = differences_between(obj, copy, where)
    return [f"{where}: changed by a pickle round trip: {d}" for d in differences[:3]]


# --- helpers -----------------------------------------------------------------------


def _python_list(value: object, item_type: type, where: str) -> list[str]:
    if type(value) is not list:
        return [f"{where}: expected a list of Python {item_type.__name__}, found {kind_of(value)}"]
    for i, item in enumerate(value):
        if type(item) is not item_type:
            return [f"{where}[{i}]: expected a Python {item_type.__name__}, found {kind_of(item)}"]
    return []


def _python_rows(value: object, item_type: type, where: str) -> list[str]:
    if type(value) is not list:
        return [
            f"{where}: expected a list of lists of Python {item_type.__name__}, "
            f"found {kind_of(value)}"
        ]
    for i, row in enumerate(value):
        found = _python_list(row, item_type, f"{where}[{i}]")
        if found:
            return found
    return []


def _array_rows(value: object, where: str) -> list[str]:
    if type(value) is not list:
        return [f"{where}: expected a list of integer numpy arrays, found {kind_of(value)}"]
    for i, row in enumerate(value):
        found = _array(row, "i", 1, f"{where}[{i}]")
        if found:
            return found
    return []

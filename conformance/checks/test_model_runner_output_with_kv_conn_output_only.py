"""ModelRunnerOutput.with_kv_conn_output_only(kv) (vLLM 0.23.0 on).

None or an empty KVConnectorOutput gives the empty output (the module's
``EMPTY_MODEL_RUNNER_OUTPUT`` itself where the module exposes one); any other kv
gives a new, otherwise empty output carrying it.  The shared empty output is
never written to: a later call, and the module's constant, still carry no kv.
"""

from __future__ import annotations

import pytest

from conformance.checks._support import expect_same, expect_type, fields_of
from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("ModelRunnerOutput"),
    pytest.mark.behaviour("ModelRunnerOutput.with_kv_conn_output_only"),
]


def _shared_empty(backend):
    return getattr(backend.module, "EMPTY_MODEL_RUNNER_OUTPUT", None)


def _expect_empty(backend, revision, output, where: str, *, carrying=None) -> None:
    """An output with no requests whose every field but kv_connector_output is the default."""
    expect_type(output, backend.spec_type("ModelRunnerOutput"), where)
    expect_same(output.req_ids, [], f"{where}.req_ids")
    if "req_id_to_index" in revision.types["ModelRunnerOutput"].field_names:
        expect_same(output.req_id_to_index, {}, f"{where}.req_id_to_index")
    if output.kv_connector_output is not carrying:
        expected = "None" if carrying is None else f"the KVConnectorOutput passed in ({carrying!r})"
        fail(
            f"{where}.kv_connector_output: expected {expected}, found {output.kv_connector_output!r}"
        )
    empty = _shared_empty(backend)
    if empty is not None:
        names = [
            n for n in revision.type("ModelRunnerOutput").field_names if n != "kv_connector_output"
        ]
        expect_same(fields_of(output, names), fields_of(empty, names), where)


@pytest.mark.parametrize("kv", ["None", "empty"])
def test_with_kv_conn_output_only_of_none_or_empty_kv_is_the_empty_output(
    backend, revision, ModelRunnerOutput, KVConnectorOutput, kv: str
) -> None:
    value = None if kv == "None" else KVConnectorOutput()
    where = f"ModelRunnerOutput.with_kv_conn_output_only({'None' if value is None else 'KVConnectorOutput()'})"
    result = attempt(where, ModelRunnerOutput.with_kv_conn_output_only, value)
    _expect_empty(backend, revision, result, where)
    empty = _shared_empty(backend)
    if empty is not None and result is not empty:
        fail(
            f"{where}: expected the module's EMPTY_MODEL_RUNNER_OUTPUT itself, found another "
            f"{type(result).__name__}"
        )


def test_with_kv_conn_output_only_carries_a_non_empty_kv(
    backend, revision, ModelRunnerOutput, KVConnectorOutput
) -> None:
    kv = KVConnectorOutput(finished_sending={"req-1"})
    where = (
        "ModelRunnerOutput.with_kv_conn_output_only(KVConnectorOutput(finished_sending={'req-1'}))"
    )
    result = attempt(where, ModelRunnerOutput.with_kv_conn_output_only, kv)
    _expect_empty(backend, revision, result, where, carrying=kv)
    empty = _shared_empty(backend)
    if empty is not None and result is empty:
        fail(f"{where}: expected a new output, found the module's shared EMPTY_MODEL_RUNNER_OUTPUT")


def test_with_kv_conn_output_only_gives_each_kv_its_own_output(
    ModelRunnerOutput, KVConnectorOutput
) -> None:
    first, second = (
        KVConnectorOutput(finished_sending={"a"}),
        KVConnectorOutput(finished_recving={"b"}),
    )
    one = attempt(
        "with_kv_conn_output_only(kv1)", ModelRunnerOutput.with_kv_conn_output_only, first
    )
    two = attempt(
        "with_kv_conn_output_only(kv2)", ModelRunnerOutput.with_kv_conn_output_only, second
    )
    if one is two or one.kv_connector_output is not first or two.kv_connector_output is not second:
        fail(
            "ModelRunnerOutput.with_kv_conn_output_only(kv1), then (kv2): expected two outputs "
            f"carrying kv1 and kv2, found {one.kv_connector_output!r} and {two.kv_connector_output!r}"
        )


def test_with_kv_conn_output_only_never_writes_to_the_shared_empty_output(
    backend, revision, ModelRunnerOutput, KVConnectorOutput
) -> None:
    kv = KVConnectorOutput(finished_recving={"req-1"})
    attempt(
        "with_kv_conn_output_only(<non-empty kv>)", ModelRunnerOutput.with_kv_conn_output_only, kv
    )
    where = "ModelRunnerOutput.with_kv_conn_output_only(None) after a call with a non-empty kv"
    later = attempt(where, ModelRunnerOutput.with_kv_conn_output_only, None)
    _expect_empty(backend, revision, later, where)
    empty = _shared_empty(backend)
    if empty is not None and empty.kv_connector_output is not None:
        fail(
            "EMPTY_MODEL_RUNNER_OUTPUT.kv_connector_output after with_kv_conn_output_only(<kv>): "
            f"expected None (the shared empty output is copied, not written to), found "
            f"{empty.kv_connector_output!r}"
        )

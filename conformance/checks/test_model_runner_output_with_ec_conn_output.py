"""ModelRunnerOutput.with_ec_conn_output(output, ec) and with_ec_conn_output_only(ec) (0.28.0 on).

None or an empty ECConnectorOutput leaves the output as it is (the same object;
for ``with_ec_conn_output_only`` the empty output, the module's
``EMPTY_MODEL_RUNNER_OUTPUT`` where exposed).  Any other ec is put into the output
itself, except into the shared empty output, which is copied first: the module's
constant never carries an ec.
"""

from __future__ import annotations

import pytest

from conformance.checks._skips import skip
from conformance.checks._support import expect_same, expect_type
from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("ModelRunnerOutput"),
    pytest.mark.behaviour("ModelRunnerOutput.with_ec_conn_output"),
]


def _shared_empty(backend):
    return getattr(backend.module, "EMPTY_MODEL_RUNNER_OUTPUT", None)


def _step(ModelRunnerOutput, revision):
    """A one-request output, with ``req_id_to_index`` where the revision has it (to 0.33.0)."""
    values: dict = {"req_ids": ["r"], "req_id_to_index": {"r": 0}, "sampled_token_ids": [[70001]]}
    names = revision.types["ModelRunnerOutput"].field_names
    values = {k: v for k, v in values.items() if k in names}
    shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
    return attempt(f"ModelRunnerOutput({shown})", ModelRunnerOutput, **values)


def _expect_shared_untouched(backend, after: str) -> None:
    empty = _shared_empty(backend)
    if empty is None:
        return
    if empty.ec_connector_output is not None or empty.req_ids != []:
        fail(
            f"EMPTY_MODEL_RUNNER_OUTPUT after {after}: expected no requests and "
            f"ec_connector_output None (the shared empty output is copied, not written to), "
            f"found req_ids {empty.req_ids!r}, ec_connector_output {empty.ec_connector_output!r}"
        )


@pytest.mark.parametrize("ec", ["None", "empty"])
def test_with_ec_conn_output_of_none_or_empty_ec_returns_the_output_unchanged(
    ModelRunnerOutput, ECConnectorOutput, revision, ec: str
) -> None:
    value = None if ec == "None" else ECConnectorOutput()
    output = _step(ModelRunnerOutput, revision)
    where = f"ModelRunnerOutput.with_ec_conn_output(output, {'None' if value is None else 'ECConnectorOutput()'})"
    result = attempt(where, ModelRunnerOutput.with_ec_conn_output, output, value)
    if result is not output:
        fail(f"{where}: expected output itself, found another {type(result).__name__}")
    if output.ec_connector_output is not None:
        fail(
            f"{where}: output.ec_connector_output: expected None (unchanged), found {output.ec_connector_output!r}"
        )


def test_with_ec_conn_output_puts_a_non_empty_ec_into_the_output_itself(
    ModelRunnerOutput, ECConnectorOutput, revision
) -> None:
    ec = ECConnectorOutput(finished_sending={"mm-1"})
    output = _step(ModelRunnerOutput, revision)
    where = "ModelRunnerOutput.with_ec_conn_output(output, ECConnectorOutput(finished_sending={'mm-1'}))"
    result = attempt(where, ModelRunnerOutput.with_ec_conn_output, output, ec)
    if result is not output:
        fail(
            f"{where}: expected output itself (it is not the shared empty output), found another {type(result).__name__}"
        )
    if output.ec_connector_output is not ec:
        fail(
            f"{where}.ec_connector_output: expected the ECConnectorOutput passed in, found {output.ec_connector_output!r}"
        )
    expect_same(output.req_ids, ["r"], f"{where}.req_ids")
    expect_same(output.sampled_token_ids, [[70001]], f"{where}.sampled_token_ids")


def test_with_ec_conn_output_copies_the_shared_empty_output(
    backend, ModelRunnerOutput, ECConnectorOutput
) -> None:
    empty = _shared_empty(backend)
    if empty is None:
        skip("optional-name-absent", "the backend module exposes no EMPTY_MODEL_RUNNER_OUTPUT")
    ec = ECConnectorOutput(finished_recving={"mm-1"})
    where = "ModelRunnerOutput.with_ec_conn_output(EMPTY_MODEL_RUNNER_OUTPUT, <non-empty ec>)"
    result = attempt(where, ModelRunnerOutput.with_ec_conn_output, empty, ec)
    if result is empty:
        fail(
            f"{where}: expected a copy of the shared empty output, found EMPTY_MODEL_RUNNER_OUTPUT itself"
        )
    expect_type(result, backend.spec_type("ModelRunnerOutput"), where)
    if result.ec_connector_output is not ec:
        fail(
            f"{where}.ec_connector_output: expected the ECConnectorOutput passed in, found {result.ec_connector_output!r}"
        )
    expect_same(result.req_ids, [], f"{where}.req_ids")
    _expect_shared_untouched(backend, where)


@pytest.mark.parametrize("ec", ["None", "empty"])
def test_with_ec_conn_output_only_of_none_or_empty_ec_is_the_empty_output(
    backend, ModelRunnerOutput, ECConnectorOutput, ec: str
) -> None:
    value = None if ec == "None" else ECConnectorOutput()
    where = f"ModelRunnerOutput.with_ec_conn_output_only({'None' if value is None else 'ECConnectorOutput()'})"
    result = attempt(where, ModelRunnerOutput.with_ec_conn_output_only, value)
    expect_type(result, backend.spec_type("ModelRunnerOutput"), where)
    expect_same(result.req_ids, [], f"{where}.req_ids")
    if result.ec_connector_output is not None:
        fail(f"{where}.ec_connector_output: expected None, found {result.ec_connector_output!r}")
    empty = _shared_empty(backend)
    if empty is not None and result is not empty:
        fail(
            f"{where}: expected the module's EMPTY_MODEL_RUNNER_OUTPUT itself, found another {type(result).__name__}"
        )


def test_with_ec_conn_output_only_carries_a_non_empty_ec_without_writing_to_the_shared_output(
    backend, ModelRunnerOutput, ECConnectorOutput
) -> None:
    ec = ECConnectorOutput(finished_sending={"mm-2"})
    where = (
        "ModelRunnerOutput.with_ec_conn_output_only(ECConnectorOutput(finished_sending={'mm-2'}))"
    )
    result = attempt(where, ModelRunnerOutput.with_ec_conn_output_only, ec)
    expect_type(result, backend.spec_type("ModelRunnerOutput"), where)
    expect_same(result.req_ids, [], f"{where}.req_ids")
    if result.ec_connector_output is not ec:
        fail(
            f"{where}.ec_connector_output: expected the ECConnectorOutput passed in, found {result.ec_connector_output!r}"
        )
    empty = _shared_empty(backend)
    if empty is not None and result is empty:
        fail(f"{where}: expected a new output, found the module's shared EMPTY_MODEL_RUNNER_OUTPUT")
    later = attempt(
        "with_ec_conn_output_only(None) afterwards",
        ModelRunnerOutput.with_ec_conn_output_only,
        None,
    )
    if later.ec_connector_output is not None:
        fail(
            f"ModelRunnerOutput.with_ec_conn_output_only(None) after {where}: expected "
            f"ec_connector_output None, found {later.ec_connector_output!r}"
        )
    _expect_shared_untouched(backend, where)

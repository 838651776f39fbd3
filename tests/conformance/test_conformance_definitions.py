"""A failing behaviour about one method names where the backend wrote it."""

from __future__ import annotations

import sys
import types

from conformance.run.definitions import where_defined
from conformance.run.failure_lines import failures_by_behaviour
from reference.revisions import reference_module


def _backend(tmp_path) -> types.ModuleType:
    package = tmp_path / "npu_bug"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "outputs.py").write_text(
        "import abc\n\nfrom reference.revisions import reference_module\n\n"
        "_ref = reference_module('0.34.0')\n"
        "ModelRunnerOutput = _ref.ModelRunnerOutput\n\n\n"
        "class LogprobsLists(_ref.LogprobsLists):\n"
        "    def slice_request(self, req_idx, num_positions):\n"
        "        return self\n\n\n"
        "class AsyncModelRunnerOutput(_ref.AsyncModelRunnerOutput):\n"
        "    @abc.abstractmethod\n"
        "    def get_kv_connector_output(self):\n"
        "        ...\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import npu_bug.outputs as module
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("npu_bug", "npu_bug.outputs"):
            sys.modules.pop(name, None)
    return module


def test_the_backends_own_method_is_named_by_file_and_line(tmp_path) -> None:
    module = _backend(tmp_path)
    assert where_defined(module, "LogprobsLists.slice_request") == "npu_bug/outputs.py:10"
    # An abstract declaration: what fails is a producer's class implementing it.
    assert where_defined(module, "AsyncModelRunnerOutput.get_kv_connector_output") is None
    # Inherited from the reference, a type without the member, a producer: nothing.
    assert where_defined(module, "LogprobsLists.tuple") is None
    assert where_defined(module, "ModelRunnerOutput.with_kv_conn_output_only") is None
    assert where_defined(module, "producer.async_output:waits-for-device") is None
    assert where_defined(reference_module("0.34.0"), "LogprobsLists.slice_request") is None


def test_the_behaviour_line_carries_it(tmp_path) -> None:
    record = types.SimpleNamespace(
        outcome="failed", behaviour="LogprobsLists.slice_request", message="wrong rows"
    )
    module = _backend(tmp_path)
    (line,) = failures_by_behaviour([record], lambda b: where_defined(module, b))
    assert line == (
        "FAIL [LogprobsLists.slice_request] 1 check(s) (the backend's, at npu_bug/outputs.py:10): "
        "wrong rows"
    )

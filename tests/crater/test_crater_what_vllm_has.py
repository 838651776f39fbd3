"""Code that asks vLLM what it has (``hasattr``, a field table, an import that may
fail) runs only where the answer lets it: judged there, and nowhere else."""

from __future__ import annotations

import pytest
from test_crater_verdicts import FIRST_RUNNER, view
from vllm_release_texts import MISSING

from conformance.crater.uses import read_plugin
from conformance.crater.verdicts import judge

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def findings(code: str, release: str, pin: str | None = None, modules=frozenset()) -> set:
    reading = read_plugin({"npu/__init__.py": "", "npu/runner.py": code})
    other = view(pin, modules) if pin else None
    return {
        (f.kind, f.line, f.member) for f in judge(reading, view(release, modules), other).findings
    }


SLICES = """
from vllm.v1.outputs import LogprobsLists


def rows(logprobs: LogprobsLists, i):
    if hasattr(logprobs, "slice_request"):
        return logprobs.slice_request(i, 1)
    else:
        return logprobs.slice(i, i + 1)
"""


def test_the_branch_hasattr_rules_out_is_not_judged() -> None:
    # 0.12.0 has slice_request and no slice: the else branch never runs there.
    assert findings(SLICES, "0.12.0", "0.11.2") == set()
    assert findings(SLICES, "0.11.2") == set()
    unguarded = SLICES.replace('if hasattr(logprobs, "slice_request")', "if False")
    assert ("call-raises", 9, "LogprobsLists.slice") in findings(unguarded, "0.12.0", "0.11.2")


FIELD_TABLE = """
from vllm.v1.outputs import ModelRunnerOutput


def build(ids, index):
    if "req_id_to_index" in ModelRunnerOutput.__dataclass_fields__:
        return ModelRunnerOutput(req_ids=ids, req_id_to_index=index)
    return ModelRunnerOutput(req_ids=ids)
"""


def test_a_field_table_tested_decides_both_constructions() -> None:
    assert findings(FIELD_TABLE, "0.34.0", "0.33.0") == set()
    assert findings(FIELD_TABLE, "0.33.0") == set()
    flipped = FIELD_TABLE.replace('"req_id_to_index" in', '"req_id_to_index" not in')
    assert {line for _, line, _ in findings(flipped, "0.34.0", "0.33.0")} == {7}
    assert {line for _, line, _ in findings(flipped, "0.33.0")} == {8}


CLASS_HASATTR = """
from vllm.v1.outputs import ModelRunnerOutput


def build(ids, experts):
    if hasattr(ModelRunnerOutput, "{field}"):
        return ModelRunnerOutput(req_ids=ids, req_id_to_index={{}}, {field}=experts)
    return ModelRunnerOutput(req_ids=ids, req_id_to_index={{}})
"""


def test_hasattr_of_the_class_answers_for_a_field_with_a_default_only() -> None:
    # routed_experts (default None) went in 0.31.0: hasattr of the class tells.
    assert findings(CLASS_HASATTR.format(field="routed_experts"), "0.31.0", "0.30.0") == set()
    # A dataclass field without a default is no class attribute: hasattr does not tell,
    # and the construction is judged (req_ids given twice: the pin says so too).
    told = findings(CLASS_HASATTR.format(field="req_ids"), "0.30.0")
    assert ("construction-raises", 7, "ModelRunnerOutput.req_ids") not in told


IMPORTED_OR_NONE = """
from vllm.v1.outputs import ModelRunnerOutput

try:
    from vllm.v1.outputs import RoutedExpertsLists
except ImportError:
    RoutedExpertsLists = None


def fill(out: ModelRunnerOutput, experts):
    if RoutedExpertsLists is not None:
        out.routed_experts = RoutedExpertsLists(experts)
"""


def test_a_name_an_except_import_error_sets_to_none_is_tested_for_where_it_is_none() -> None:
    assert findings(IMPORTED_OR_NONE, "0.31.0", "0.30.0") == set()
    unguarded = IMPORTED_OR_NONE.replace("if RoutedExpertsLists is not None:", "if experts:")
    assert ("behaviour-changed", 12, "ModelRunnerOutput.routed_experts") in findings(
        unguarded, "0.31.0", "0.30.0"
    )


FALLBACK = """
from vllm.v1.outputs import ModelRunnerOutput

try:
    from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput
except ImportError:
    from vllm.v1.worker.gpu.async_utils import AsyncOutput as AsyncGPUModelRunnerOutput


def hand_over(out: ModelRunnerOutput, sampled):
    return AsyncGPUModelRunnerOutput(model_runner_output=out, sampled_token_ids=sampled)
"""


def test_a_fallback_import_binds_its_name_where_the_first_import_fails() -> None:
    reading = read_plugin({"npu/runner.py": FALLBACK})
    built = {u.target.rsplit(".", 1)[-1]: u for u in reading.uses if u.kind == "construct"}
    assert set(built) == {"AsyncGPUModelRunnerOutput", "AsyncOutput"}
    at_034, at_033 = view("0.34.0"), view("0.33.0", frozenset(FIRST_RUNNER))
    first, fallback = built["AsyncGPUModelRunnerOutput"], built["AsyncOutput"]
    assert [at_034.runs_under(g) for g in first.guards] == [False]
    assert [at_034.runs_under(g) for g in fallback.guards] == [True]
    # 0.34.0 has no first runner: its class is never built there, so nothing is missing.
    assert not [
        f for f in judge(reading, at_034, at_033).findings if "gpu_model_runner" in f.member
    ]
    # Without the fallback the import fails there.
    plain = FALLBACK.replace("try:\n    ", "").split("except ImportError")[0]
    found = judge(read_plugin({"npu/runner.py": plain}), at_034, at_033).findings
    assert [f.kind for f in found] == ["import-fails"]


def test_an_alias_of_vllms_type_bound_at_the_top_of_a_module_is_the_type() -> None:
    code = (
        "from vllm.v1.outputs import ModelRunnerOutput\n\nOutput = ModelRunnerOutput\n\n\n"
        "def build(ids):\n    return Output(req_ids=ids, req_id_to_index={})\n"
    )
    assert ("construction-raises", 7, "ModelRunnerOutput.req_id_to_index") in findings(
        code, "0.34.0", "0.33.0"
    )
    rebound = code.replace("\n\n\ndef", "\nOutput = dict\n\n\ndef")
    assert findings(rebound, "0.34.0", "0.33.0") == set()


SCHEDULER = """
from vllm.v1.core.sched.scheduler import Scheduler


class NPUScheduler(Scheduler):
    def update_from_output(self, scheduler_output, model_runner_output):
        return model_runner_output.req_id_to_index
"""


def test_a_scheduler_reading_what_it_is_handed_is_read_without_naming_the_type() -> None:
    assert ("read-fails", 7, "ModelRunnerOutput.req_id_to_index") in findings(
        SCHEDULER, "0.34.0", "0.33.0", frozenset({"vllm.v1.core.sched.scheduler"})
    )


def test_a_read_whose_attribute_error_the_plugin_catches_is_its_fallback() -> None:
    code = (
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
        "def index(out: ModelRunnerOutput):\n"
        "    try:\n        return out.req_id_to_index\n"
        "    except AttributeError:\n        return {r: i for i, r in enumerate(out.req_ids)}\n"
    )
    assert findings(code, "0.34.0", "0.33.0") == set()
    caught_elsewhere = code.replace("AttributeError", "KeyError")
    assert ("read-fails", 6, "ModelRunnerOutput.req_id_to_index") in findings(
        caught_elsewhere, "0.34.0", "0.33.0"
    )


RUNS_AT_THE_TARGET_ONLY = """
import vllm
from packaging.version import Version
from vllm.v1.outputs import ModelRunnerOutput


def build(ids, index, sampled):
    if Version(vllm.__version__) < Version("0.34.0"):
        return ModelRunnerOutput(ids, index, sampled, None, {})
    return ModelRunnerOutput(ids, sampled, None, {})
"""


def test_code_that_never_runs_at_the_pin_is_not_compared_with_the_pin() -> None:
    # The second call's positional arguments land on 0.34.0's fields as meant.
    assert findings(RUNS_AT_THE_TARGET_ONLY, "0.34.0", "0.33.0") == set()
    everywhere = RUNS_AT_THE_TARGET_ONLY.replace('Version("0.34.0")', 'Version("0.1")')
    assert ("behaviour-changed", 10, "ModelRunnerOutput.req_id_to_index") in findings(
        everywhere, "0.34.0", "0.33.0"
    )


def test_a_field_holding_logprobs_tensors_unpacks_into_as_many_names_as_it_has_fields() -> None:
    code = (
        "from vllm.v1.outputs import SamplerOutput\n\n\n"
        "def ranks(out: SamplerOutput):\n"
        "    ids, logprobs, ranks = out.logprobs_tensors\n    return ranks\n"
    )
    # 0.16.0 gave LogprobsTensors a fourth field, cu_num_generated_tokens.
    assert ("read-fails", 5, "SamplerOutput.logprobs_tensors") in findings(code, "0.16.0", "0.15.1")
    assert findings(code, "0.15.1") == set()
    four = code.replace("ids, logprobs, ranks =", "ids, logprobs, ranks, _ =")
    assert findings(four, "0.16.0", "0.15.1") == set()


WORKER = """
from vllm.v1.outputs import ModelRunnerOutput


class NPUModelRunner:
    def execute_model(self, scheduler_output) -> ModelRunnerOutput:
        raise NotImplementedError


class NPUWorker:
    def init_device(self):
        self.model_runner = NPUModelRunner()

    def execute_model(self, scheduler_output):
        output = self.model_runner.execute_model(scheduler_output)
        return output.req_id_to_index
"""


def test_what_a_runner_held_by_the_worker_returns_is_typed_by_its_annotation() -> None:
    assert ("read-fails", 16, "ModelRunnerOutput.req_id_to_index") in findings(
        WORKER, "0.34.0", "0.33.0"
    )
    # Two runner classes in one attribute (vllm-ascend's V1 and V2): not known which.
    two = WORKER.replace(
        "        self.model_runner = NPUModelRunner()\n",
        "        self.model_runner = NPUModelRunner()\n        self.model_runner = dict()\n",
    )
    assert findings(two, "0.34.0", "0.33.0") == set()


#: Code the guards must not hide: each break is judged at 0.34.0 (a pin of 0.33.0).
NOT_HIDDEN = {
    # an except Exception runs where anything raised, not only where an import failed
    "excany": (
        7,
        "construction-raises",
        "def build(ids, index, kernel):\n    try:\n        from vllm.v1.outputs import ModelRunnerOutput\n        return kernel.fast_output(ids)\n    except Exception:\n        from vllm.v1.outputs import ModelRunnerOutput\n        return ModelRunnerOutput(req_ids=ids, req_id_to_index=index)\n",
    ),
    # a write never raises AttributeError: the value is set and never read
    "write_attr": (
        6,
        "behaviour-changed",
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\ndef fill(out: ModelRunnerOutput, index):\n    try:\n        out.req_id_to_index = index\n    except AttributeError:\n        pass\n",
    ),
    # a handler raising again is no fallback
    "exc_reraise": (
        9,
        "read-fails",
        'import logging\nfrom vllm.v1.outputs import ModelRunnerOutput\n\nlogger = logging.getLogger(__name__)\n\n\ndef index_of(out: ModelRunnerOutput, rid):\n    try:\n        return out.req_id_to_index[rid]\n    except Exception:\n        logger.exception("no index for %s", rid)\n        raise\n',
    ),
    # a def's body runs when it is called, outside the try
    "nested_def": (
        7,
        "read-fails",
        "from vllm.v1.outputs import ModelRunnerOutput\n\ntry:\n    import torch_npu\n\n    def index_of(out: ModelRunnerOutput, rid):\n        return out.req_id_to_index[rid]\nexcept (ImportError, AttributeError):\n    torch_npu = None\n",
    ),
    # the names are None where any import of their try failed (RoutedExpertsLists)
    "joint_none": (
        11,
        "construction-raises",
        "try:\n    from vllm.v1.outputs import RoutedExpertsLists, SamplingMaskLists\nexcept ImportError:\n    RoutedExpertsLists = SamplingMaskLists = None\nfrom vllm.v1.outputs import ModelRunnerOutput\n\n\ndef build(ids, index, masks):\n    if SamplingMaskLists is not None:\n        return ModelRunnerOutput(req_ids=ids, sampling_masks=masks)\n    return ModelRunnerOutput(req_ids=ids, req_id_to_index=index)\n",
    ),
    # a dataclass field with a default factory is no class attribute
    "dfact": (
        7,
        "construction-raises",
        'from vllm.v1.outputs import ModelRunnerOutput\n\n\ndef build(ids, index):\n    if hasattr(ModelRunnerOutput, "sampled_token_ids"):\n        return ModelRunnerOutput(req_ids=ids)\n    return ModelRunnerOutput(req_ids=ids, req_id_to_index=index)\n',
    ),
    # the else branch runs where kv_connector_output is None too
    "optional_recv": (
        8,
        "read-fails",
        'from vllm.v1.outputs import ModelRunnerOutput\n\n\ndef failed_blocks(out: ModelRunnerOutput):\n    if hasattr(out.kv_connector_output, "invalid_block_ids"):\n        return out.kv_connector_output.invalid_block_ids\n    # no connector output this step (kv_connector_output is None)\n    return set(out.req_id_to_index)\n',
    ),
    # what comes before an import in a try runs whatever the import does
    "before_import": (
        6,
        "behaviour-changed",
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\ndef fill(out: ModelRunnerOutput, index):\n    try:\n        out.req_id_to_index = dict(index)\n        from vllm.v1.outputs import RoutedExpertsLists\n    except ImportError:\n        pass\n    return out\n",
    ),
    # vLLM's compiled modules are in no list of its modules
    "vc": (
        8,
        "construction-raises",
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\ndef build(ids, index):\n    try:\n        from vllm._custom_ops import scaled_fp8_quant\n        from vllm._C import ops\n        return ModelRunnerOutput(req_ids=ids, req_id_to_index=index)\n    except ImportError:\n        return None\n",
    ),
}


@pytest.mark.parametrize("name", list(NOT_HIDDEN))
def test_a_guard_hides_no_break_where_the_code_still_runs(name: str) -> None:
    line, kind, code = NOT_HIDDEN[name]
    found = findings(code, "0.34.0", "0.33.0", frozenset({"vllm._custom_ops"}))
    assert {(k, n) for k, n, _ in found} == {(kind, line)}

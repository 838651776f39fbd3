"""Uses judged against real vLLM texts: each kind of break, named by the vLLM change."""

from __future__ import annotations

import ast

import fixture_plugins as plugins
import pytest
from vllm_release_texts import MISSING, RELEASES

from conformance.crater.uses import read_plugin
from conformance.crater.verdicts import judge
from conformance.crater.vllm_names import OUTPUTS
from conformance.crater.vllm_side import VllmView, view_of_text

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

#: The modules the tests' vLLMs have: 0.34.0 removed the first runner and its sampler.
FIRST_RUNNER = {"vllm.v1.sample.sampler", "vllm.v1.sample.rejection_sampler",
                "vllm.v1.worker.gpu_model_runner"}  # fmt: skip
COMMON = {"vllm", "vllm.v1", "vllm.v1.outputs", "vllm.v1.worker.gpu.async_utils",
          "vllm.platforms"}  # fmt: skip


def view(release: str, more_modules: frozenset[str] = frozenset()) -> VllmView:
    modules = COMMON | (FIRST_RUNNER if release != "0.34.0" else set()) | more_modules
    return view_of_text(
        RELEASES / f"outputs-{release}.py.txt", release, release, frozenset(modules)
    )


def breaks(files: dict[str, str], release: str, pin: str | None = None) -> set[tuple]:
    reading = read_plugin({p: t for p, t in files.items() if p.endswith(".py")})
    other = view(pin) if pin else None
    return {
        (f.kind, f.file.rsplit("/", 1)[-1], f.member, f.vllm_change.split("; ")[0].split(": ")[0])
        for f in judge(reading, view(release), other).findings
    }


def test_a_plugin_building_model_runner_output_holds_at_its_pin_and_breaks_at_0_34() -> None:
    assert breaks(plugins.BUILDS_OUTPUT, "0.33.0") == set()
    found = breaks(plugins.BUILDS_OUTPUT, "0.34.0", pin="0.33.0")
    removed = "field removed ModelRunnerOutput.req_id_to_index"
    assert (
        "construction-raises",
        "runner.py",
        "ModelRunnerOutput.req_id_to_index",
        removed,
    ) in found
    assert (
        "construction-raises",
        "worker.py",
        "ModelRunnerOutput.req_id_to_index",
        removed,
    ) in found
    assert ("read-fails", "runner.py", "ModelRunnerOutput.req_id_to_index", removed) in found
    # The positional call now hands sampled_token_ids where req_id_to_index was.
    assert ("behaviour-changed", "runner.py", "ModelRunnerOutput.req_id_to_index", removed) in found
    # A read of a name no release of vLLM's type has is the plugin's own business.
    assert not any("not_a_field" in str(item) for item in found)


def test_an_abstract_method_bound_by_assignment_in_the_class_is_implemented() -> None:
    # ``abc`` reads the class's namespace: a function bound there by name implements it.
    files = {
        "npu/outputs.py": (
            "from vllm.v1.outputs import AsyncModelRunnerOutput\n"
            "def _kv(self):\n"
            "    return None\n"
            "class NPUAsyncOutput(AsyncModelRunnerOutput):\n"
            "    def __init__(self, out):\n"
            "        self._out = out\n"
            "    def get_output(self):\n"
            "        return self._out\n"
            "    get_kv_connector_output = _kv\n"
            "def make(out):\n"
            "    return NPUAsyncOutput(out)\n"
        )
    }
    assert breaks(files, "0.33.0", pin="0.32.0") == set()
    without = {
        "npu/outputs.py": files["npu/outputs.py"].replace("    get_kv_connector_output = _kv\n", "")
    }
    assert {f[0] for f in breaks(without, "0.33.0", pin="0.32.0")} == {"cannot-instantiate"}


def test_types_star_imported_in_a_try_are_vllms_where_it_is_installed() -> None:
    # A compat module falling back where vLLM is absent (the suite's own example does).
    files = {
        "npu/outputs.py": "try:\n"
        "    from vllm.v1.outputs import *\n"
        "except ImportError:\n"
        "    from npu._fallback import *\n",
        "npu/worker.py": "from npu.outputs import AsyncModelRunnerOutput\n"
        "class NPUAsyncOutput(AsyncModelRunnerOutput):\n"
        "    def get_output(self):\n"
        "        return None\n"
        "def make():\n"
        "    return NPUAsyncOutput()\n",
    }
    assert breaks(files, "0.32.0") == set()
    assert {f[0] for f in breaks(files, "0.33.0", pin="0.32.0")} == {"cannot-instantiate"}


def test_an_async_output_without_get_kv_connector_output_cannot_be_made_from_0_33() -> None:
    assert breaks(plugins.ASYNC_OUTPUTS, "0.32.0") == set()
    found = breaks(plugins.ASYNC_OUTPUTS, "0.33.0", pin="0.32.0")
    added = "method added AsyncModelRunnerOutput.get_kv_connector_output"
    member = "AsyncModelRunnerOutput.get_kv_connector_output"
    assert found == {("cannot-instantiate", "outputs.py", member, added)}
    # The change, then what of it the plugin meets: its class, without the method.
    reading = read_plugin({p: t for p, t in plugins.ASYNC_OUTPUTS.items() if p.endswith(".py")})
    said = {f.vllm_change for f in judge(reading, view("0.33.0"), view("0.32.0")).findings}
    fact = "AsyncModelRunnerOutput of vLLM 0.33.0 has get_kv_connector_output abstract"
    assert f"{added}: {fact}; NPUAsyncOutput does not define it" in said

    lines = {
        f.line
        for f in judge(
            read_plugin({p: t for p, t in plugins.ASYNC_OUTPUTS.items() if p.endswith(".py")}),
            view("0.33.0"),
            view("0.32.0"),
        ).findings
    }
    text = plugins.ASYNC_OUTPUTS["npu_async/outputs.py"].splitlines()
    named = {text[line - 1].split("(")[0].removeprefix("class ") for line in lines}
    # NPUAsyncOutput and the class inheriting its methods; not the complete one, not the
    # abstract base (never made itself).
    assert named == {"NPUAsyncOutput", "FromBase"}


def test_guards_choose_the_code_judged_for_each_vllm() -> None:
    assert breaks(plugins.GUARDED, "0.33.0") == set()
    found = breaks(plugins.GUARDED, "0.34.0", pin="0.33.0")
    # Only unguarded code and the code a guard keeps for 0.34.0 is judged there: the
    # TYPE_CHECKING import and the handled import of the removed modules are no break.
    assert found == set()


def test_a_plugin_using_none_of_the_types_holds_everywhere() -> None:
    for release in ("0.11.0", "0.22.0", "0.33.0", "0.34.0"):
        assert breaks(plugins.USES_NONE, release, pin="0.11.0") == set()


def test_a_call_of_vllms_producer_is_judged_by_its_signature_and_result() -> None:
    found = breaks(plugins.PRODUCER_CALLS, "0.33.0")
    kinds = {(kind, member) for kind, _, member, _ in found}
    assert ("call-raises", "Sampler.gather_logprobs") in kinds
    assert ("call-raises", "RejectionSampler.parse_output") in kinds
    gone = breaks(plugins.PRODUCER_CALLS, "0.34.0", pin="0.33.0")
    assert {(k, m, c) for k, _, m, c in gone if k == "import-fails"} == {
        ("import-fails", "vllm.v1.sample.rejection_sampler",
         "module removed vllm.v1.sample.rejection_sampler"),
        ("import-fails", "vllm.v1.sample.sampler", "module removed vllm.v1.sample.sampler"),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("files", "pin"),
    [(plugins.BUILDS_OUTPUT, "0.33.0"), (plugins.ASYNC_OUTPUTS, "0.32.0"),
     (plugins.GUARDED, "0.33.0")],
)  # fmt: skip
def test_a_text_identical_to_the_pin_shows_no_break(tmp_path, files, pin) -> None:
    from conformance.crater.vllm_side import view_of

    copy = tmp_path / "outputs.py"
    copy.write_text((RELEASES / f"outputs-{pin}.py.txt").read_text(encoding="utf-8"))
    target = view_of(str(copy))
    reading = read_plugin({p: t for p, t in files.items() if p.endswith(".py")})
    assert judge(reading, target, view(pin)).findings == []


def test_a_field_that_now_also_takes_none_is_news_to_readers_only() -> None:
    from conformance.crater.verdicts import _only_widened
    from conformance.oracle.vllm_changes import Change

    def retyped(known: str, new: str) -> Change:
        return Change("vllm.v1.outputs", "ModelRunnerOutput", "pooler_output", "field retyped",
                      f"pooler_output: {known}", f"pooler_output: {new} = None")  # fmt: skip

    assert _only_widened(retyped("list[torch.Tensor | None]", "list[torch.Tensor | None] | None"))
    assert not _only_widened(retyped("list[np.ndarray]", "list[list[int]]"))


def test_what_get_output_must_hand_over_is_news_only_to_a_class_it_concerns() -> None:
    from reference.revisions import canonical_name, revision

    code = {
        "p/outputs.py": "from vllm.v1.outputs import AsyncModelRunnerOutput\n\n\n"
        "class IdsOnly(AsyncModelRunnerOutput):\n    def get_output(self):\n        return 1\n\n"
        "    def get_kv_connector_output(self):\n        return None\n\n\n"
        "class WithLogprobs(IdsOnly):\n    def get_output(self):\n"
        "        return self.logprobs_tensors.tolists()\n",
    }
    behaviours = tuple(
        revision(canonical_name(r)).async_output.behaviours for r in ("0.11.2", "0.12.0")
    )
    found = judge(read_plugin(code), view("0.12.0"), view("0.11.2"), behaviours).findings
    added = {
        (f.member, f.vllm_change.removeprefix("behaviour added ").split(": ", 1)[0])
        for f in found
        if f.kind == "behaviour-changed"
    }
    # 0.12.0's consumer reads rows of several tokens by a cu that 0.11.2's layout lacks.
    assert ("WithLogprobs.get_output",
            "producer.async_output:logprobs-cu-of-kept-tokens") in added  # fmt: skip
    # A class that never touches logprobs leaves them to its runner (its rows are news).
    assert not any(m.startswith("IdsOnly") and "logprobs" in change for m, change in added)
    assert ("IdsOnly.get_output", "producer.async_output:rows-as-lists") in added
    # Each says what the behaviour asks, and since when.
    [rows] = [
        f for f in found if f.member == "IdsOnly.get_output" and "rows-as-lists" in f.vllm_change
    ]
    assert rows.vllm_change.endswith(
        "vLLM 0.12.0 asks that get_output() gives sampled_token_ids as lists of Python ints, a "
        "discarded request's row an empty list, which vLLM 0.11.2 did not ask"
    )


def test_a_layout_of_logprobs_rows_read_alike_is_no_behaviour_added() -> None:
    from conformance.crater.records import _async_behaviours

    code = {
        "p/outputs.py": "from vllm.v1.outputs import AsyncModelRunnerOutput\n\n\n"
        "class WithLogprobs(AsyncModelRunnerOutput):\n    def get_output(self):\n"
        "        return self.logprobs_tensors.tolists()\n\n"
        "    def get_kv_connector_output(self):\n        return None\n",
    }
    # 0.33.0 keeps the kept tokens' rows, 0.34.0 every logits row: both read each
    # request's rows by slice_request, alike, so a class of 0.33.0's layout reads right.
    behaviours = _async_behaviours("0.33.0", view("0.34.0"))
    assert behaviours is not None
    found = judge(read_plugin(code), view("0.34.0"), view("0.33.0"), behaviours).findings
    assert [f for f in found if f.kind == "behaviour-changed"] == []


def test_a_logprobs_rule_the_pins_rule_holds_whole_is_no_behaviour_added() -> None:
    from reference.revisions import canonical_name, revision

    code = {
        "p/outputs.py": "from vllm.v1.outputs import AsyncModelRunnerOutput\n\n\n"
        "class WithLogprobs(AsyncModelRunnerOutput):\n    def get_output(self):\n"
        "        return self.logprobs_tensors.tolists()\n\n"
        "    def get_kv_connector_output(self):\n        return None\n",
    }
    # 0.11.1 asks tolists() of one token per request, which 0.19.0's rule asks word for
    # word (and more of rows of several tokens): a plugin of 0.19.0 already does it.
    behaviours = tuple(
        revision(canonical_name(r)).async_output.behaviours for r in ("0.19.0", "0.11.1")
    )
    found = judge(read_plugin(code), view("0.11.1"), view("0.19.0"), behaviours).findings
    assert not [f for f in found if "logprobs-tolists" in f.vllm_change]


ONE_TOKEN_RUNNER = """
from vllm.v1.outputs import AsyncModelRunnerOutput


class NPUAsyncOutput(AsyncModelRunnerOutput):
    def __init__(self, model_runner_output, sampled_token_ids):
        self.output, self.ids = model_runner_output, sampled_token_ids

    def get_output(self):
        self.output.sampled_token_ids = self.ids.tolist()
        return self.output


class NPURunner:
    def _bookkeeping(self, sampled_token_ids):
        ASSERTED
        return sampled_token_ids

    def execute_model(self, output, sampler_output):
        ids = self._bookkeeping(sampler_output.sampled_token_ids)
        return NPUAsyncOutput(output, ids)
"""


@pytest.mark.parametrize(
    ("asserted", "news"),
    [
        ("assert sampled_token_ids.shape[-1] == 1", False),  # vllm-kunlun, vLLM 0.11's runner
        ("assert sampled_token_ids.size(1) == 1", False),
        ("assert sampled_token_ids.shape[0] == 1", True),  # one request, not one token
        ("pass", True),
    ],
)
def test_an_async_output_its_runner_hands_one_token_rows_need_not_unpad(asserted, news) -> None:
    from conformance.crater.records import _async_behaviours

    code = {"p/runner.py": ONE_TOKEN_RUNNER.replace("ASSERTED", asserted)}
    behaviours = _async_behaviours("0.11.0", view("0.22.0"))
    assert behaviours is not None
    found = judge(read_plugin(code), view("0.22.0"), view("0.11.0"), behaviours).findings
    unpads = [f for f in found if "unpads-multi-token-rows" in f.vllm_change]
    assert bool(unpads) is news, found


def test_an_output_type_imported_from_a_module_gone_is_an_import_that_fails() -> None:
    mixin = "vllm.v1.worker.kv_connector_model_runner_mixin"
    files = {
        "npu/runner.py": f"from {mixin} import KVConnectorOutput, KVConnectorModelRunnerMixin\n"
        "from vllm.model_executor.layers.sampler import SamplerOutput  # V0's, not judged\n"
    }
    reading = read_plugin(files)
    pin = view("0.33.0", frozenset({mixin, "vllm.model_executor.layers.sampler"}))
    assert judge(reading, pin, None).findings == []
    found = judge(reading, view("0.34.0"), pin)
    assert [(f.kind, f.line, f.member, f.vllm_change) for f in found.findings] == [
        ("import-fails", 1, f"{mixin}.KVConnectorOutput",
         f"module removed {mixin}; vLLM 0.34.0 has KVConnectorOutput in vllm.v1.outputs")
    ]  # fmt: skip
    assert found.missing_modules == {
        mixin: "npu/runner.py:1",
        "vllm.model_executor.layers.sampler": "npu/runner.py:2",
    }


def test_copies_of_vllms_outputs_and_the_empty_output_are_typed() -> None:
    files = {
        "npu/steps.py": """
import copy
import dataclasses
from vllm.v1 import outputs as vo
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput


def written():
    output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
    output.req_id_to_index = {}
    return output


def replaced():
    return dataclasses.replace(EMPTY_MODEL_RUNNER_OUTPUT, req_id_to_index={})


def copied(out: ModelRunnerOutput):
    first = copy.deepcopy(out)
    second = copy.copy(first)
    return second.req_id_to_index


def read():
    return vo.EMPTY_MODEL_RUNNER_OUTPUT.req_id_to_index
"""
    }
    reading = read_plugin(files)
    found = judge(reading, view("0.34.0"), view("0.33.0")).findings
    assert sorted((f.kind, f.line) for f in found) == [
        ("behaviour-changed", 10),  # a field written that vLLM no longer reads
        ("construction-raises", 15),
        ("read-fails", 21),
        ("read-fails", 25),
    ]
    assert judge(reading, view("0.33.0"), None).findings == []


def test_unpacking_vllms_logprobs_tensors_counts_its_fields_at_each_release() -> None:
    files = {
        "npu/runner.py": """
from vllm.v1.sample.sampler import Sampler


class NPURunner:
    def prompt_logprobs(self, logprobs, n, ids):
        token_ids, lps, ranks, _ = Sampler.gather_logprobs(logprobs, n, ids)
        return token_ids, lps, ranks
"""
    }
    reading = read_plugin(files)
    # 0.20.0's LogprobsTensors has 4 fields; 0.29.0 added a fifth with a default.
    assert judge(reading, view("0.20.0"), None).findings == []
    (found,) = judge(reading, view("0.30.0"), view("0.20.0")).findings
    assert (found.kind, found.line, found.member) == ("call-raises", 7, "Sampler.gather_logprobs")
    assert found.vllm_change.startswith(
        "field added LogprobsTensors.cu_num_generated_tokens_tensor"
    )


GUARDED_KWARGS = """
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.worker.kv_connector_model_runner_mixin import KVConnectorOutput
from npu.utils import vllm_version_is

HAS_GROUP = "invalid_block_group_index" in getattr(KVConnectorOutput, "__dataclass_fields__", {})


def kv(sending, group):
    kwargs = {"finished_sending": sending}
    if HAS_GROUP:
        kwargs["invalid_block_group_index"] = group
    return KVConnectorOutput(**kwargs)


def kv_unknown_field(sending):
    return KVConnectorOutput(finished_sending=sending, not_a_field_anywhere=1)


def output(req_ids):
    kwargs = {"req_ids": req_ids}
    if vllm_version_is("0.33.0"):
        kwargs["req_id_to_index"] = {}
    return ModelRunnerOutput(**kwargs)


def output_always(req_ids):
    kwargs = {"req_ids": req_ids}
    if req_ids:
        kwargs["req_id_to_index"] = {}
    return ModelRunnerOutput(**kwargs)
"""


def test_kwargs_keys_count_where_the_tests_around_them_let_them_be_passed() -> None:
    reading = read_plugin({"npu/kv.py": GUARDED_KWARGS})
    mixin = frozenset({"vllm.v1.worker.kv_connector_model_runner_mixin", "npu", "npu.utils"})
    at_pin = judge(reading, view("0.33.0", mixin), None).findings
    at_target = judge(reading, view("0.34.0", mixin), view("0.33.0", mixin)).findings
    # A key added where its field is tested for is passed only where it exists; one
    # under vllm_version_is("0.33.0") only there; one under any other test, always.
    assert [(f.kind, f.line, f.member) for f in at_target] == [
        ("construction-raises", 17, "KVConnectorOutput.not_a_field_anywhere"),
        ("construction-raises", 31, "ModelRunnerOutput.req_id_to_index"),
    ]
    # KVConnectorOutput re-exported by another vLLM module is judged as vLLM's own.
    assert [(f.line, f.member) for f in at_pin] == [(17, "KVConnectorOutput.not_a_field_anywhere")]


CONDITIONAL_KWARGS = """
from vllm.v1.outputs import ModelRunnerOutput
from npu.utils import vllm_version_is


def inline(ids, experts):
    return ModelRunnerOutput(
        req_ids=ids,
        **({"req_id_to_index": {}} if vllm_version_is("0.33.0") else {"routed_experts": experts}),
    )


def bound(ids, experts):
    extra = {"req_id_to_index": {}} if vllm_version_is("0.33.0") else {}
    return ModelRunnerOutput(req_ids=ids, **extra)


def called(ids, experts):
    return ModelRunnerOutput(req_ids=ids, **dict(req_id_to_index={}))


def either(ids, flag):
    return ModelRunnerOutput(req_ids=ids, **({} if flag else {"req_id_to_index": {}}))


def nested(ids):
    return ModelRunnerOutput(req_ids=ids, **({"req_id_to_index": {}} if vllm_version_is(
        "0.32.0") else ({"req_id_to_index": {}} if vllm_version_is("0.33.0") else {})))


def method(ids, base):
    return ModelRunnerOutput(req_ids=ids, **base.dict())
"""


def test_kwargs_of_a_conditional_expression_count_on_the_side_the_test_takes() -> None:
    # vllm-ascend 0.21.0rc1 passes **({"routed_experts_dict": ...} if vllm_version_is(
    # "0.21.0") else {"routed_experts": ...}) on every step: the else side at 0.31.0 on.
    reading = read_plugin({"npu/out.py": CONDITIONAL_KWARGS})
    modules = frozenset({"npu", "npu.utils"})
    at_pin = judge(reading, view("0.33.0", modules), None).findings
    at_target = judge(reading, view("0.34.0", modules), view("0.33.0", modules)).findings
    # At the pin the if sides are taken and hold; at 0.34.0 the else side's routed_experts
    # (gone since 0.31.0) is passed, the if sides are not, dict(k=...) is read as a
    # literal, and a side under any other test counts as taken.  A key on two sides of
    # nested tests is passed where either side's tests hold (neither, at 0.34.0), and a
    # method named dict() is no display of keys.
    assert at_pin == []
    assert [(f.line, f.member) for f in at_target] == [
        (7, "ModelRunnerOutput.routed_experts"),
        (19, "ModelRunnerOutput.req_id_to_index"),
        (23, "ModelRunnerOutput.req_id_to_index"),
    ]


TYPED_BY_WAY_OF = """
from copy import copy
from dataclasses import dataclass

from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, AsyncModelRunnerOutput, ModelRunnerOutput
from vllm.v1.sample.rejection_sampler import RejectionSampler


@dataclass
class NPUOutput(ModelRunnerOutput):
    npu_stats: dict | None = None

    @classmethod
    def empty(cls):
        return cls(req_ids=[], req_id_to_index={})


class NPUAsyncOutput(AsyncModelRunnerOutput):
    def __init__(self, output: ModelRunnerOutput):
        self._output = output

    def get_output(self):
        alias = self._output
        return alias.req_id_to_index

    def get_kv_connector_output(self):
        return None


class NPURejectionSampler(RejectionSampler):
    pass


def build() -> ModelRunnerOutput:
    return EMPTY_MODEL_RUNNER_OUTPUT


def built():
    return build().req_id_to_index


def by_name(output: ModelRunnerOutput):
    return getattr(output, "req_id_to_index"), getattr(output, "req_id_to_index", None)


def either(result):
    return copy(result if result is not None else EMPTY_MODEL_RUNNER_OUTPUT).req_id_to_index


def parsed(ids):
    return NPURejectionSampler.parse_output(ids, 32000, discard_req_indices=[])
"""


def test_the_type_shows_through_cls_self_attributes_returns_getattr_and_if_else() -> None:
    reading = read_plugin({"npu/outputs.py": TYPED_BY_WAY_OF})
    assert judge(reading, view("0.33.0"), None).findings == []
    found = judge(reading, view("0.34.0"), view("0.33.0")).findings
    assert [(f.kind, f.line, f.member) for f in found] == [
        ("import-fails", 6, "vllm.v1.sample.rejection_sampler"),
        ("construction-raises", 15, "ModelRunnerOutput.req_id_to_index"),  # cls(...)
        ("read-fails", 24, "ModelRunnerOutput.req_id_to_index"),  # an alias of self._output
        ("read-fails", 39, "ModelRunnerOutput.req_id_to_index"),  # -> ModelRunnerOutput
        ("read-fails", 43, "ModelRunnerOutput.req_id_to_index"),  # getattr without default
        ("read-fails", 47, "ModelRunnerOutput.req_id_to_index"),  # x if ... else EMPTY
    ]
    # vLLM's producer called through the plugin's subclass is judged as vLLM's.
    calls = [u for u in reading.uses if u.kind == "call"]
    assert [(u.line, u.target, u.member) for u in calls] == [
        (51, "vllm.v1.sample.rejection_sampler.RejectionSampler", "parse_output")
    ]


NARROWED = """
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.outputs import AsyncModelRunnerOutput, ModelRunnerOutput


class NPUAsyncOutput(AsyncModelRunnerOutput):
    def get_output(self):
        return None

    def get_kv_connector_output(self):
        return None


def step(executor):
    out = executor.execute_model(non_block=True).result()
    if isinstance(out, NPUAsyncOutput):
        out = out.get_output()
    return out.req_id_to_index


def checked(result):
    if isinstance(result, ModelRunnerOutput) and result.req_ids:
        return result.req_id_to_index
    return None


def asserted(result):
    assert isinstance(result, ModelRunnerOutput)
    return result.req_id_to_index


class NPUScheduler(Scheduler):
    def update_from_output(self, scheduler_output, model_runner_output):
        return self._update(model_runner_output)

    def _update(self, model_runner_output):
        return model_runner_output.req_id_to_index


def helper(model_runner_output):
    return model_runner_output.req_id_to_index  # vLLM's name, in a module naming its type


def worker_loop(connection):
    while True:
        command, data = connection.recv()
        match command:
            case "update":
                model_runner_output = data  # a queue's message, named as vLLM names it
                return model_runner_output.req_id_to_index
"""


def test_isinstance_and_vllms_parameter_name_show_the_type() -> None:
    reading = read_plugin({"npu/steps.py": NARROWED})
    assert judge(reading, view("0.33.0"), None).findings == []
    found = judge(reading, view("0.34.0"), view("0.33.0")).findings
    assert [(f.kind, f.line) for f in found] == [
        ("read-fails", 18),  # out = out.get_output() under isinstance(out, NPUAsyncOutput)
        ("read-fails", 23),  # if isinstance(result, ModelRunnerOutput) and ...
        ("read-fails", 29),  # assert isinstance(result, ModelRunnerOutput)
        ("read-fails", 37),  # model_runner_output of a Scheduler subclass's method
        ("read-fails", 41),  # a parameter named so in a module importing the type
        ("read-fails", 50),  # a local named so, under a match statement's case
    ]


def test_vllms_name_alone_types_nothing_in_a_module_not_naming_the_type() -> None:
    files = {"npu/own.py": "def unrelated(model_runner_output):\n"
             "    return model_runner_output.req_id_to_index\n"}  # fmt: skip
    assert judge(read_plugin(files), view("0.34.0"), view("0.33.0")).findings == []


def test_a_file_that_cannot_be_imported_at_the_pin_is_not_judged() -> None:
    files = {
        "npu/legacy.py": "from vllm.model_executor.sampling_metadata import SamplingMetadata\n"
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
        "def f(out: ModelRunnerOutput):\n    return out.req_id_to_index\n",
        "npu/runner.py": "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
        "def g(out: ModelRunnerOutput):\n    return out.req_id_to_index\n",
    }
    reading = read_plugin(files)
    pin = view("0.33.0")
    found = judge(reading, view("0.34.0"), pin, pin=pin)
    assert [(f.file, f.line) for f in found.findings] == [("npu/runner.py", 5)]
    assert found.dead_at_pin == {"npu/legacy.py": "vllm.model_executor.sampling_metadata"}
    # Without a pin (an unpinned plugin) nothing is set aside.
    assert len(judge(reading, view("0.34.0"), None).findings) == 2


@pytest.mark.parametrize(
    ("new", "same"),
    [
        ("@staticmethod def gather_logprobs(logprobs: Tensor, n: int) -> LogprobsTensors", True),
        ("@staticmethod def gather_logprobs(logprobs: Tensor) -> LogprobsTensors", False),
        ("def gather_logprobs(self, logprobs: Tensor, n: int = 1) -> LogprobsTensors", False),
    ],
)
def test_a_method_made_static_is_the_same_to_its_callers(new, same) -> None:
    from conformance.crater.verdicts import _same_for_callers
    from conformance.oracle.vllm_changes import Change

    known = "def gather_logprobs(self, logprobs: Tensor, n: int) -> LogprobsTensors"
    change = Change("vllm.v1.sample.sampler", "Sampler", "gather_logprobs",
                    "signature changed", known, new)  # fmt: skip
    assert _same_for_callers(change) is same


def test_an_empty_value_fits_a_retyped_field() -> None:
    files = {
        "npu/runner.py": """
from vllm.v1.outputs import ModelRunnerOutput


def empty(req_ids):
    out = ModelRunnerOutput(req_ids=req_ids, req_id_to_index={}, sampled_token_ids=[])
    out.sampled_token_ids = []
    return out


def full(req_ids):
    out = ModelRunnerOutput(req_ids=req_ids, req_id_to_index={}, sampled_token_ids=[[1]])
    out.sampled_token_ids = [[1]]
    return out
"""
    }
    reading = read_plugin(files)
    # 0.11.1 made sampled_token_ids a list of arrays, no longer of lists.
    found = judge(reading, view("0.11.1"), view("0.11.0")).findings
    retyped = "field retyped ModelRunnerOutput.sampled_token_ids"
    assert [(f.line, f.vllm_change) for f in found if f.kind == "behaviour-changed"] == [
        (12, f"{retyped}: list[list[int]], now list[np.ndarray]"),
        (13, f"{retyped}: list[list[int]], now list[np.ndarray]"),
    ]


def test_what_a_second_look_found_judged_rightly() -> None:
    files = {
        "npu/a_sub.py": """
from npu.z_base import Base


class Sub(Base):
    def get_output(self):
        return self._output.req_id_to_index
""",
        "npu/z_base.py": """
import vllm._C
from vllm.v1.outputs import AsyncModelRunnerOutput, KVConnectorOutput, ModelRunnerOutput
from vllm.v1.sample.sampler import Sampler


class Base(AsyncModelRunnerOutput):
    def __init__(self, output: ModelRunnerOutput):
        self._output = output
        self.has_group = "invalid_block_group_index" in KVConnectorOutput.__dataclass_fields__

    def get_kv_connector_output(self):
        return None

    def kv(self, sending, group):
        kwargs = {"finished_sending": sending}
        if self.has_group:
            kwargs["invalid_block_group_index"] = group
        return KVConnectorOutput(**kwargs)


def first(logprobs, n, ids):
    token_ids, *_ = Sampler.gather_logprobs(logprobs, n, ids)
    return token_ids


def rebound(out):
    if isinstance(out, AsyncModelRunnerOutput):
        out = out.get_output()
        return out.req_id_to_index
    return None


def missing(ids):
    has = "num_nans_in_logits" in ModelRunnerOutput.__dataclass_fields__
    kwargs = {"req_ids": ids}
    if has:
        kwargs["num_nans_in_logits"] = None
    return ModelRunnerOutput(**kwargs)
""",
    }
    reading = read_plugin(files)
    pin = view("0.33.0")
    found = judge(reading, view("0.34.0"), pin, pin=pin)
    assert found.dead_at_pin == {}  # vllm._C is compiled: in no list of Python modules
    assert [(f.file, f.line, f.member) for f in found.findings if f.kind == "read-fails"] == [
        # what the base's __init__ stores, read in a subclass in an earlier file
        ("npu/a_sub.py", 7, "ModelRunnerOutput.req_id_to_index"),
        # rebound in the isinstance branch: the output, not the async output
        ("npu/z_base.py", 30, "ModelRunnerOutput.req_id_to_index"),
    ]
    at_pin = judge(reading, pin, None, pin=pin).findings
    # A field-tested key held in a local or self flag passes only where the field exists;
    # the keys known still say what is missing; a starred unpacking takes any length.
    # Base, a base of the plugin's own Sub, is instantiated through it: no break of its own.
    assert [(f.line, f.member) for f in at_pin] == [(39, "ModelRunnerOutput.req_id_to_index")]


ELEMENTS = """
from typing import List, Optional, Sequence

from vllm.v1.outputs import ModelRunnerOutput


def loop(outputs: list[ModelRunnerOutput]):
    for out in outputs:
        out.req_id_to_index


def indexed(outputs: Optional[List[ModelRunnerOutput]]):
    return outputs[1:][0].req_id_to_index  # a slice is a sequence again


def counted(outputs: Sequence["ModelRunnerOutput"]):
    for i, out in enumerate(outputs):
        out.req_id_to_index


def comprehended(outputs: tuple[ModelRunnerOutput, ...]):
    return [out.req_id_to_index for out in outputs]


class Batcher:
    def __init__(self, outputs: list[ModelRunnerOutput]):
        self.outputs = outputs
        self.pending: list[ModelRunnerOutput] = []

    def last(self):
        return self.pending[-1].req_id_to_index

    def each(self):
        for out in reversed(self.outputs):
            out.req_id_to_index


def untyped(outputs: list, pairs: tuple[ModelRunnerOutput, int]):
    for out in outputs:
        out.req_id_to_index  # nothing says what the list holds
    pairs[1].req_id_to_index  # a pair's int, not an output
    return outputs[1:][0].req_id_to_index  # still unknown: outputs is a bare list


def first(outputs: list[ModelRunnerOutput]):
    out = outputs[0]
    return out.req_id_to_index


def comprehension_then_other(outputs: list[ModelRunnerOutput], batch):
    ids = [out.req_ids for out in outputs]  # this out is the comprehension's own
    out = batch
    return ids, out.req_id_to_index


def two_loops(outputs: list[ModelRunnerOutput], batches):
    for out in outputs:
        pass
    for out in batches:
        out.req_id_to_index  # a batch: out is bound twice, typed by neither loop


def starred(*outputs: ModelRunnerOutput):
    return outputs[0].req_id_to_index
"""


def test_the_elements_of_an_annotated_sequence_have_its_element_type() -> None:
    reading = read_plugin({"npu/batch.py": ELEMENTS})
    assert judge(reading, view("0.33.0"), None).findings == []
    found = judge(reading, view("0.34.0"), view("0.33.0")).findings
    assert sorted(f.line for f in found if f.kind == "read-fails") == [
        9,
        13,
        18,
        22,
        31,
        35,
        47,
        64,
    ]


def test_a_producer_module_imported_from_its_package_or_inside_a_function_is_judged() -> None:
    files = {
        "npu/compat.py": "from vllm.v1.worker import gpu_model_runner\n\n\n"
        "def runner_class():\n"
        "    from vllm.v1.worker.gpu_model_runner import GPUModelRunner\n"
        "    return GPUModelRunner\n",
    }
    reading = read_plugin(files)
    assert judge(reading, view("0.33.0"), None).findings == []
    found = judge(reading, view("0.34.0"), view("0.33.0")).findings
    assert [(f.kind, f.line, f.member) for f in found] == [
        ("import-fails", 1, "vllm.v1.worker.gpu_model_runner"),
        ("import-fails", 5, "vllm.v1.worker.gpu_model_runner"),
    ]
    # Neither the module alone (a runner to patch, an async output: which is not known)
    # nor a runner imported from it is an async output: no pointer to 0.34.0's.
    assert [f.vllm_change for f in found] == ["module removed vllm.v1.worker.gpu_model_runner"] * 2


def test_a_removed_producer_module_points_to_where_the_name_imported_went() -> None:
    files = {
        "npu/sample.py": "from vllm.v1.sample.sampler import Sampler\n"
        "from vllm.v1.sample.rejection_sampler import PLACEHOLDER_TOKEN_ID\n"
        "from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput\n",
    }
    modules = frozenset({"vllm.v1.worker.gpu.sample", "vllm.v1.worker.gpu.sample.sampler"})
    reading = read_plugin(files)
    found = judge(reading, view("0.34.0", modules), view("0.33.0", modules)).findings
    said = {f.line: f.vllm_change for f in found}
    assert said[1].endswith("; vLLM 0.34.0 has Sampler in vllm.v1.worker.gpu.sample.sampler")
    assert said[2] == "module removed vllm.v1.sample.rejection_sampler"  # a constant: no pointer
    assert "builds its async outputs in AsyncOutput" in said[3]


IS_EMPTY = """
from vllm.v1.outputs import KVConnectorOutput


def idle(done: set[str]) -> bool:
    return KVConnectorOutput(finished_sending=done, finished_recving=set()).is_empty()


def handed(kv: KVConnectorOutput) -> bool:
    return kv.is_empty()
"""


def test_a_method_whose_body_changed_is_no_break_of_its_callers() -> None:
    # 0.34.0's is_empty added `and not self.failed_recving`: whoever built the object,
    # a call gets what vLLM's own callers of 0.34.0 get.
    reading = read_plugin({"npu/kv.py": IS_EMPTY})
    assert judge(reading, view("0.34.0"), view("0.29.0")).findings == []


PARSED = """
from vllm.v1.sample.rejection_sampler import RejectionSampler


def rows(ids):
    return RejectionSampler.parse_output(ids, 32000)
"""


def test_a_method_whose_result_changed_is_a_break_of_its_callers() -> None:
    reading = read_plugin({"npu/rows.py": PARSED})
    assert judge(reading, view("0.11.1"), view("0.11.0")).findings != []
    [found] = judge(reading, view("0.12.0"), view("0.11.1")).findings
    assert (found.kind, found.member) == ("behaviour-changed", "RejectionSampler.parse_output")
    assert "returns tuple[list[list[int]], list[int] | None], where it returned " in (
        found.vllm_change
    )
    assert "list[np.ndarray]" in found.vllm_change
    # A parameter added with a default, the result the same: the call fits as before.
    lists = "from vllm.v1.outputs import LogprobsTensors\n\n\n" + (
        "def lists(t: LogprobsTensors):\n    return t.tolists()\n"
    )
    assert judge(read_plugin({"npu/l.py": lists}), view("0.11.1"), view("0.11.0")).findings == []


def test_a_producer_module_imported_from_its_package_is_evidence_for_a_pin() -> None:
    from conformance.crater.verdicts import files_dead_at

    files = {
        "npu/compat.py": "from vllm.v1.worker import gpu_model_runner\n"
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
        "def f(out: ModelRunnerOutput):\n    return out.req_ids\n",
    }
    reading = read_plugin(files)
    assert files_dead_at(reading, view("0.34.0")) == {}  # judged there: an import-fails
    assert files_dead_at(reading, view("0.34.0"), judged_modules=True) == {
        "npu/compat.py": "vllm.v1.worker.gpu_model_runner"
    }
    assert files_dead_at(reading, view("0.33.0"), judged_modules=True) == {}


METHODS = """
from vllm.v1.outputs import LogprobsTensors, ModelRunnerOutput, SamplerOutput


def lists(sampler_output: SamplerOutput, cu: list[int]):
    return sampler_output.logprobs_tensors.tolists(cu)


def empty(k: int):
    return LogprobsTensors.empty_cpu(0, k)


def first(output: ModelRunnerOutput):
    return output.logprobs.slice(0, 1)


def failed(output: ModelRunnerOutput):
    kv = output.kv_connector_output
    return kv.invalid_block_ids


def kept(tensors: LogprobsTensors, mask):
    return tensors.to_cpu_nonblocking().filter(mask)


def through_the_class(tensors: LogprobsTensors):
    return LogprobsTensors.tolists(tensors)
"""


def test_methods_of_output_types_are_judged_as_calls_through_fields_and_returns() -> None:
    def found(release: str, pin: str) -> set[tuple[str, int, str]]:
        reading = read_plugin({"npu/methods.py": METHODS})
        return {
            (f.kind, f.line, f.member)
            for f in judge(reading, view(release), view(pin)).findings
            if f.kind != "behaviour-changed"
        }

    # Written for 0.14.0, where all of it runs but slice (removed at 0.12.0).
    assert found("0.14.0", "0.14.0") == {("call-raises", 14, "LogprobsLists.slice")}
    assert found("0.11.0", "0.14.0") == {
        ("call-raises", 6, "LogprobsTensors.tolists"),  # no cu_num_generated_tokens yet
        ("read-fails", 19, "KVConnectorOutput.invalid_block_ids"),
        ("call-raises", 23, "LogprobsTensors.to_cpu_nonblocking"),
        ("call-raises", 23, "LogprobsTensors.filter"),
    }
    # filter came at 0.14.0; empty_cpu is static, and the class call passes self.
    assert found("0.13.0", "0.14.0") == {
        ("call-raises", 14, "LogprobsLists.slice"),
        ("call-raises", 23, "LogprobsTensors.filter"),
    }


POOLED = """
from vllm.v1.outputs import ModelRunnerOutput


def pooled(output: ModelRunnerOutput):
    return output.pooler_output


def clear(output: ModelRunnerOutput):
    output.pooler_output = None


def built(ids, raw):
    pooled: list = []
    for row in raw:
        pooled.append(row)
    return (
        ModelRunnerOutput(req_ids=ids, req_id_to_index={}, pooler_output=pooled),
        ModelRunnerOutput(req_ids=ids, req_id_to_index={}, pooler_output=[r for r in raw]),
        ModelRunnerOutput(req_ids=ids, req_id_to_index={}, pooler_output=raw or None),
    )
"""


def test_a_field_that_takes_less_is_no_break_of_its_readers() -> None:
    # 0.14.0's pooler_output takes None, 0.12.0's does not: what a reader of 0.14.0
    # handles covers it. Nor is a construction passing a list one, and nor, for this field,
    # is None written: vLLM 0.10.2-0.13.0's one reader of it, the scheduler, tests it by
    # truth (if pooler_outputs: ...) before it indexes it.
    reading = read_plugin({"npu/pool.py": POOLED})
    found = judge(reading, view("0.12.0"), view("0.14.0")).findings
    assert [f for f in found if f.member.endswith(".pooler_output")] == []
    assert judge(reading, view("0.14.0"), view("0.12.0")).findings != []


def test_none_written_where_a_field_no_longer_takes_it_is_a_break_unless_read_as_empty(
    monkeypatch,
) -> None:
    from conformance.crater import verdicts

    # As for a field whose readers index it at once.
    monkeypatch.setattr(verdicts, "_NONE_READ_AS_EMPTY", frozenset())
    found = judge(read_plugin({"npu/pool.py": POOLED}), view("0.12.0"), view("0.14.0")).findings
    # The write of None and the construction that may pass None; not those of a list.
    assert [(f.kind, f.line) for f in found if f.member.endswith(".pooler_output")] == [
        ("behaviour-changed", 10),
        ("behaviour-changed", 20),
    ]


PATCHES = """
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.worker.gpu.sample import logprob
from npu.kernels import topk, token_logprobs

logprob.compute_topk_logprobs = topk
logprob.compute_token_logprobs = token_logprobs
logprob.NPU_TUNED = True
logprob.CALLS += 1
ModelRunnerOutput.req_id_to_index = {}
"""


def test_a_patch_of_a_name_vllm_no_longer_has_no_longer_takes() -> None:
    # 0.26.0 renamed Model Runner V2's compute_topk_logprobs to compute_topk_scores: the
    # plugin's assignment runs, and vLLM's own gathering with it.
    logprob = "vllm.v1.worker.gpu.sample.logprob"
    modules = frozenset({"vllm.v1.worker.gpu.sample", logprob})
    reading = read_plugin({"npu/patch.py": PATCHES})
    assert judge(reading, view("0.25.1", modules), None).findings == []
    found = judge(reading, view("0.26.0", modules), view("0.25.1", modules)).findings
    assert [(f.kind, f.line, f.member) for f in found] == [
        ("behaviour-changed", 6, f"{logprob}.compute_topk_logprobs")
    ]
    assert "has no compute_topk_logprobs: the plugin's replacement is set and never read" in (
        found[0].vllm_change
    )
    # A value set on an output type is the plugin's own attribute of it, for its own
    # reads: vLLM reads no attribute its class lacks, so nothing of vLLM's is bypassed.
    assert judge(reading, view("0.34.0", modules), view("0.33.0", modules)).findings == []
    [added] = reading.class_changes
    assert (added.target, added.member) == (f"{OUTPUTS}.ModelRunnerOutput", "req_id_to_index")
    # ``+=`` reads the name first: no replacement of it.
    assert [u.member for u in reading.uses if u.kind == "patch"] == [
        "compute_topk_logprobs", "compute_token_logprobs", "NPU_TUNED"
    ]  # fmt: skip


PATCHES_WHERE_CALLED = """
from vllm.v1.worker.gpu.sample import prompt_logprob, sampler
from npu.kernels import topk

sampler.compute_topk_logprobs = topk
prompt_logprob.compute_topk_logprobs = topk
"""


def test_a_patch_of_a_gathering_where_vllm_calls_it_no_longer_takes_once_renamed() -> None:
    # Model Runner V2's sampler imports its gathering by name: a plugin replaces it there
    # (vllm-ascend does). Once vLLM calls compute_topk_scores, vLLM's own kernel runs.
    package = "vllm.v1.worker.gpu.sample"
    modules = frozenset({package, f"{package}.sampler", f"{package}.prompt_logprob"})
    reading = read_plugin({"npu/patch.py": PATCHES_WHERE_CALLED})
    assert judge(reading, view("0.25.1", modules), None).findings == []
    found = judge(reading, view("0.30.0", modules), view("0.25.1", modules)).findings
    assert [(f.kind, f.line, f.member) for f in found] == [
        ("behaviour-changed", 5, f"{package}.sampler.compute_topk_logprobs"),
        ("behaviour-changed", 6, f"{package}.prompt_logprob.compute_topk_logprobs"),
    ]
    assert all("the plugin's replacement is set and never read" in f.vllm_change for f in found)


def test_the_callers_of_a_gathering_are_found_by_their_imports() -> None:
    from conformance.releases.wheels import gathering_callers

    gathering = (
        "from vllm.v1.outputs import LogprobsTensors\n"
        "def topk(logits, num_logprobs, sampled_token_ids):\n"
        "    return LogprobsTensors(logits, logits, logits)\n"
    )
    texts = {
        "vllm/v1/worker/gpu/sample/logprob.py": gathering,
        "vllm/v1/worker/gpu/sample/sampler.py": "from .logprob import topk\n",
        "vllm/v1/worker/gpu/spec/drafter.py": "from ..sample.logprob import topk as k\n",
        "vllm/v1/worker/gpu/sample/other.py": "from .logprob import LogprobsTensors\n",
        "vllm/v1/worker/gpu/model_runner.py": "import vllm.v1.worker.gpu.sample.logprob\n",
    }
    assert gathering_callers(texts, {"vllm/v1/worker/gpu/sample/logprob.py"}) == {
        "vllm/v1/worker/gpu/sample/sampler.py",
        "vllm/v1/worker/gpu/spec/drafter.py",
    }


def test_positional_arguments_that_now_fill_other_parameters_are_a_break() -> None:
    # 0.11.1's slice(start_req_idx, end_req_idx) takes requests, 0.11.0's slice(start,
    # end) rows: the same call, another meaning.
    code = "from vllm.v1.outputs import LogprobsLists\n\n\n" + (
        "def rows(ll: LogprobsLists, a, b):\n    return ll.slice(a, b)\n"
    )
    [found] = judge(read_plugin({"npu/l.py": code}), view("0.11.1"), view("0.11.0")).findings
    assert (found.kind, found.member) == ("behaviour-changed", "LogprobsLists.slice")
    assert found.vllm_change.endswith(
        "the call's positional arguments are its start_req_idx, end_req_idx, where they were "
        "start, end"
    )


@pytest.mark.parametrize(
    ("call", "pin", "target", "said"),
    [
        # 0.13.0 put kv_cache_events before invalid_block_ids.
        ("KVConnectorOutput(set(), set(), None, {1})", "0.12.0", "0.13.0",
         "field added KVConnectorOutput.kv_cache_events: positional argument 4 is "
         "kv_cache_events, not invalid_block_ids"),
        # 0.34.0 removed req_id_to_index: what was the third argument is the second.
        ("ModelRunnerOutput(ids, {}, [[1]])", "0.33.0", "0.34.0",
         "field removed ModelRunnerOutput.req_id_to_index: positional argument 2 is "
         "sampled_token_ids, not req_id_to_index"),
    ],
)  # fmt: skip
def test_a_positional_shift_names_the_field_that_moved_the_arguments(call, pin, target, said):
    code = (
        "from vllm.v1.outputs import KVConnectorOutput, ModelRunnerOutput\n\n\n"
        f"def build(ids):\n    return {call}\n"
    )
    found = judge(read_plugin({"npu/k.py": code}), view(target), view(pin)).findings
    assert said in [f.vllm_change for f in found if f.kind == "behaviour-changed"]


SHADOWS = """
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.worker.gpu.sample import logprob


def local(runner):
    logprob = runner.logprob
    logprob.compute_topk_logprobs = None


def parameter(logprob):
    logprob.compute_topk_logprobs = None


def pooled(ids, pooler_output=None, flag=False):
    if flag:
        pooler_output = []
    return ModelRunnerOutput(req_ids=ids, req_id_to_index={}, pooler_output=pooler_output)


def truthy(out: ModelRunnerOutput):
    if getattr(out, "req_id_to_index", True):
        return out.req_id_to_index
    if getattr(out, "req_id_to_index", None) is not None:

        def inner(out: ModelRunnerOutput):
            return out.req_id_to_index

        return inner
"""


def test_a_local_name_a_parameter_and_a_truthy_default_are_what_they_are() -> None:
    modules = frozenset({"vllm.v1.worker.gpu.sample", "vllm.v1.worker.gpu.sample.logprob"})
    reading = read_plugin({"npu/s.py": SHADOWS})
    # No patch of the module: the names are the function's own.
    assert not [u for u in reading.uses if u.kind == "patch"]
    # A parameter defaulting to None may pass None whatever the function binds after.
    [built] = [u for u in reading.uses if u.kind == "construct"]
    assert built.never_none == ("req_id_to_index",)
    # getattr(..., True) passes without the attribute; a def's names are its own.
    reads = [u.line for u in reading.uses if u.kind == "read"]
    assert reads == [23, 27]
    found = judge(reading, view("0.34.0", modules), view("0.33.0", modules)).findings
    assert {f.line for f in found if f.kind == "read-fails"} == {23, 27}


@pytest.mark.parametrize(
    ("before", "after", "same"),
    [
        ("Optional[LogprobsTensors]", "LogprobsTensors | None", True),
        ('"LogprobsTensors"', "LogprobsTensors", True),
        ("List[int]", "list[int]", True),
        ("list[list[int]]", "tuple[list[list[int]], list[int] | None]", False),
    ],
)
def test_a_result_spelled_otherwise_is_the_same_result(before, after, same) -> None:
    from conformance.crater.verdicts import _results
    from conformance.oracle.vllm_changes import Change

    change = Change("m", "T", "f", "signature changed", f"def f(self) -> {before}",
                    f"def f(self, x=1) -> {after}")  # fmt: skip
    assert (_results(change) is None) is same


def test_a_change_of_a_class_of_the_same_name_elsewhere_is_not_its_change() -> None:
    from conformance.crater.verdicts import _Judge
    from conformance.oracle.vllm_changes import Change

    judge_ = _Judge(view("0.31.0"), None)
    mrv2 = "vllm.v1.worker.gpu.sample.output"
    judge_.changes = [Change(mrv2, "SamplerOutput", "sampled_token_ids", "field retyped",
                             "sampled_token_ids: torch.Tensor | None",
                             "sampled_token_ids: torch.Tensor")]  # fmt: skip
    kinds = ("field retyped",)
    assert judge_._changed("SamplerOutput", "sampled_token_ids", kinds, OUTPUTS) is None
    assert judge_._changed("SamplerOutput", "sampled_token_ids", kinds, mrv2) is not None


BUILDS_A_SAMPLER_SUBCLASS = """
from vllm.v1.sample.rejection_sampler import RejectionSampler
from vllm.v1.sample.sampler import Sampler


class NPURejectionSampler(RejectionSampler):
    def forward(self, metadata, draft_probs, logits, sampling_metadata):
        return None


class Runner:
    def __init__(self):
        self.sampler = Sampler()
        self.rejection_sampler = NPURejectionSampler(self.sampler)
"""


def test_a_class_the_texts_show_one_method_of_has_no_known_constructor() -> None:
    # vLLM's texts keep RejectionSampler.parse_output alone: its __init__(self, sampler)
    # is not shown, so a construction is not judged, neither taking nor refusing it.
    assert breaks({"npu/runner.py": BUILDS_A_SAMPLER_SUBCLASS}, "0.30.0") == set()


CHANGES_THE_CLASS = """
from functools import wraps

from vllm.v1.outputs import ModelRunnerOutput


def _patch_model_runner_output():
    from vllm.v1 import outputs as outputs_mod

    cls = outputs_mod.ModelRunnerOutput
    if "spec_token_ids" not in getattr(cls, "__dataclass_fields__", {}):
        cls.spec_token_ids = None
        original_init = cls.__init__

        @wraps(original_init)
        def _patched_init(self, *args, spec_token_ids=None, **kwargs):
            original_init(self, *args, **kwargs)
            self.spec_token_ids = spec_token_ids

        cls.__init__ = _patched_init


_patch_model_runner_output()


def step(ids, index, spec):
    out = ModelRunnerOutput(req_ids=ids, req_id_to_index=index, spec_token_ids=spec)
    return out.spec_token_ids
"""


def test_an_init_the_plugin_sets_on_vllms_class_takes_its_own_keywords() -> None:
    # vllm-ascend 0.25.1rc1 .. 0.30.0rc2 give ModelRunnerOutput spec_token_ids this way.
    files = {"npu/patch.py": CHANGES_THE_CLASS}
    assert breaks(files, "0.33.0") == set()
    # What vLLM's own __init__ still gets is judged: req_id_to_index is gone at 0.34.0.
    assert breaks(files, "0.34.0", pin="0.33.0") == {
        ("construction-raises", "patch.py", "ModelRunnerOutput.req_id_to_index",
         "field removed ModelRunnerOutput.req_id_to_index"),
    }  # fmt: skip
    # An __init__ of unknown shape leaves the construction unjudged.
    opaque = CHANGES_THE_CLASS.replace("cls.__init__ = _patched_init", "cls.__init__ = make()")
    assert breaks({"npu/patch.py": opaque}, "0.34.0", pin="0.33.0") == set()


RESTORES_OR_GUARDS = """
from dataclasses import dataclass

from vllm.v1.outputs import ModelRunnerOutput
from npu.utils import vllm_version_is

_original_init = ModelRunnerOutput.__init__


def _patched_init(self, *args, spec_token_ids=None, **kwargs):
    _original_init(self, *args, **kwargs)


if vllm_version_is("0.20.0"):
    ModelRunnerOutput.__init__ = _patched_init
    ModelRunnerOutput.req_id_to_index = None


def restore():
    ModelRunnerOutput.__init__ = _original_init


@dataclass
class NPUOutput(ModelRunnerOutput):
    npu_stats: dict | None = None


def step(ids, index, out: ModelRunnerOutput):
    NPUOutput(req_ids=ids, req_id_to_index=index, spec_token_ids=None)
    return ModelRunnerOutput(req_ids=ids, req_id_to_index=index), out.req_id_to_index
"""


def test_what_a_plugin_sets_on_vllms_class_counts_where_it_is_set_and_only_there() -> None:
    # Set under a version test: not at 0.34.0, where vLLM's own __init__ and fields judge.
    # Put back: vLLM's own __init__ again, no replacement. A dataclass subclass makes
    # its own __init__, whatever the base's is.
    found = breaks({"npu/patch.py": RESTORES_OR_GUARDS}, "0.34.0", pin="0.33.0")
    assert {(kind, member) for kind, _, member, _ in found} == {
        ("construction-raises", "ModelRunnerOutput.req_id_to_index"),
        ("construction-raises", "ModelRunnerOutput.spec_token_ids"),
        ("read-fails", "ModelRunnerOutput.req_id_to_index"),
    }
    reading = read_plugin({"npu/patch.py": RESTORES_OR_GUARDS})
    assert [(c.member, c.line, c.own) for c in reading.class_changes] == [
        ("__init__", 15, frozenset({"spec_token_ids"})),
        ("req_id_to_index", 16, None),
    ]


POOLED_AND_WRITTEN = """
from vllm.v1.outputs import ModelRunnerOutput


def update(out: ModelRunnerOutput, index: int):
    pooler_outputs = out.pooler_output
    pooled = pooler_outputs[index] if pooler_outputs else None
    if out.pooler_output is not None:
        pooled = out.pooler_output[index]
    return pooled


def at_once(out: ModelRunnerOutput, index: int):
    return out.pooler_output[index]


def write(out: ModelRunnerOutput, n: int):
    out.pooler_output = [None] * n
    out.pooler_output = None
"""


def test_a_reader_testing_a_field_for_none_and_a_list_written_hold() -> None:
    # 0.12.0 -> 0.14.0: pooler_output also takes None. Its readers that test it (as
    # vLLM's own scheduler does) hold; the one that indexes it at once does not.
    reading = read_plugin({"npu/pool.py": POOLED_AND_WRITTEN})
    found = judge(reading, view("0.14.0"), view("0.12.0")).findings
    assert [(f.kind, f.line) for f in found] == [("behaviour-changed", 14)]
    assert found[0].vllm_change.startswith(
        "field retyped ModelRunnerOutput.pooler_output: list[torch.Tensor | None], now "
    )
    # Back to 0.12.0, whose annotation takes no None: a list written holds, and None too,
    # as vLLM's scheduler there reads the field only by truth (if pooler_outputs: ...).
    found = judge(reading, view("0.12.0"), view("0.14.0")).findings
    assert found == []


PATCHES_BEYOND_AN_IMPORT = """
from vllm.v1.worker.gpu.sample import logprob
from vllm.v1.worker.gpu.sample import bad_words

logprob.compute_topk_logprobs = None
"""


def test_a_patch_in_a_module_that_does_not_import_is_no_patch_not_taken() -> None:
    # A vLLM without bad_words: the file's import fails first, nothing is set, and vLLM's
    # own code does not run in the patch's place (the missing module is listed apart).
    modules = frozenset({"vllm.v1.worker.gpu.sample", "vllm.v1.worker.gpu.sample.logprob"})
    had = modules | {"vllm.v1.worker.gpu.sample.bad_words"}
    reading = read_plugin({"npu/patch.py": PATCHES_BEYOND_AN_IMPORT})
    judged = judge(reading, view("0.26.0", modules), view("0.25.1", had))
    assert judged.findings == []
    assert set(judged.missing_modules) == {"vllm.v1.worker.gpu.sample.bad_words"}
    found = judge(reading, view("0.26.0", had), view("0.25.1", had)).findings
    assert [(f.kind, f.line) for f in found] == [("behaviour-changed", 5)]


def test_going_back_to_an_older_vllm_says_what_is_newer_than_it() -> None:
    # A plugin of 0.33.0 judged at 0.30.0: its field is not yet there, not "removed";
    # one 0.30.0 had and 0.33.0 removed is not "added".
    files = {"npu/read.py": "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
             "def f(out: ModelRunnerOutput):\n    return out.prompt_token_id_logprobs_dict\n"
             "\n\ndef g(ids):\n    return ModelRunnerOutput(req_ids=ids, req_id_to_index={})\n"}  # fmt: skip
    found = judge(read_plugin(files), view("0.30.0"), view("0.33.0")).findings
    assert [f.vllm_change for f in found] == [
        "field ModelRunnerOutput.prompt_token_id_logprobs_dict is newer than vLLM 0.30.0"
    ]


def test_going_back_a_field_newer_than_that_vllm_is_written_to_no_loss() -> None:
    # vllm-omni of 0.30.0 at 0.26.0 sets sampling_masks (from 0.28.0): 0.26.0 reads no
    # such thing, so nothing it asks for is lost. Going forward, a field the target
    # removed is written and never read (routed_experts at 0.31.0).
    files = {"npu/write.py": "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
             "def f(out: ModelRunnerOutput, masks, experts):\n"
             "    out.sampling_masks = masks\n    out.routed_experts = experts\n"}  # fmt: skip
    assert judge(read_plugin(files), view("0.26.0"), view("0.30.0")).findings == []
    found = judge(read_plugin(files), view("0.31.0"), view("0.30.0")).findings
    assert [(f.kind, f.member) for f in found] == [
        ("behaviour-changed", "ModelRunnerOutput.routed_experts")
    ]


def test_lists_from_tolist_fit_a_field_retyped_to_lists() -> None:
    # 0.12.0 made sampled_token_ids lists of lists again (0.11.1: arrays). What
    # tensor.tolist() builds fits it; arrays do not (tpu-inference 0.11.1, vllm-mblt).
    files = {"npu/runner.py": """
import numpy as np
from vllm.v1.outputs import ModelRunnerOutput


def listed(req_ids, ids):
    valid = ids.tolist()
    return ModelRunnerOutput(req_ids=req_ids, req_id_to_index={}, sampled_token_ids=valid)


def arrays(req_ids, ids):
    rows = [np.asarray(r) for r in ids]
    return ModelRunnerOutput(req_ids=req_ids, req_id_to_index={}, sampled_token_ids=rows)
"""}  # fmt: skip
    found = judge(read_plugin(files), view("0.12.0"), view("0.11.1")).findings
    assert [f.line for f in found if f.kind == "behaviour-changed"] == [13]


NOT_TESTED_WHERE_READ = """
from vllm.v1.outputs import ModelRunnerOutput


def tested_after(out: ModelRunnerOutput, i):
    first = out.pooler_output[i]
    if out.pooler_output is not None:
        return first
    return None


def tested_in_a_nested_def(out: ModelRunnerOutput, i):
    def inner(other):
        return other.pooler_output if other.pooler_output else None

    return out.pooler_output[i], inner


def bound_then_tested_later(out: ModelRunnerOutput, i):
    xs = out.pooler_output
    y = xs[i]
    if xs:
        return y
    return None


def bound_and_guarded(out: ModelRunnerOutput, i):
    xs = out.pooler_output
    if not xs:
        return None
    return xs[i]


def bound_and_indexed_in_a_test(out: ModelRunnerOutput, i):
    xs = out.pooler_output
    if xs[i] is not None and xs:
        return xs[i]
    return xs and xs[i]
"""


def test_a_test_for_none_counts_only_where_it_guards_the_read() -> None:
    # 0.12.0 -> 0.14.0: pooler_output also takes None. A test after the read, in another
    # function, or of the bound name after it is used, handles nothing.
    reading = read_plugin({"npu/pool.py": NOT_TESTED_WHERE_READ})
    found = judge(reading, view("0.14.0"), view("0.12.0")).findings
    assert [f.line for f in found] == [6, 16, 20, 35]


FORWARDED = """
from vllm.v1.outputs import ModelRunnerOutput
from npu.helpers import build


def _make_output(**fields) -> ModelRunnerOutput:
    fields.setdefault("pooler_output", [])
    return ModelRunnerOutput(**fields)


def _strip(device=None, **fields):
    fields.pop("req_id_to_index", None)
    return ModelRunnerOutput(**fields)


def _chosen(**fields):
    if fields.get("legacy"):
        fields["req_id_to_index"] = {}
    return ModelRunnerOutput(**fields)


class Runner:
    def _output(self, **fields):
        return ModelRunnerOutput(sampled_token_ids=[], **fields)

    def step(self, ids):
        a = _make_output(req_ids=ids, req_id_to_index={})
        b = _make_output(req_ids=ids)
        c = _strip(req_ids=ids, req_id_to_index={}, device="npu")
        d = _chosen(req_ids=ids)
        e = self._output(req_ids=ids, req_id_to_index={})
        f = build(req_ids=ids, req_id_to_index={})
        return a, b, c, d, e, f
"""

FORWARDING_HELPERS = """
from vllm.v1 import outputs


def build(**kw):
    kw["sampled_token_ids"] = []
    out = outputs.ModelRunnerOutput(**kw)
    return out
"""


def test_a_helper_handing_its_kwargs_to_a_type_is_judged_at_each_call() -> None:
    files = {"npu/runner.py": FORWARDED, "npu/helpers.py": FORWARDING_HELPERS}
    reading = read_plugin(files)
    more = frozenset({"npu", "npu.helpers"})
    at_target = judge(reading, view("0.34.0", more), view("0.33.0", more)).findings
    # Each call passing req_id_to_index through a helper breaks where the helper builds
    # the output: the helper's added, removed and own keywords counted (a keyword naming
    # its own parameter binds it), in the same module, as a method and from another
    # module; a helper that tests its kwargs is unknown, and judged by nothing.
    assert sorted((f.line, f.member) for f in at_target) == [
        (27, "ModelRunnerOutput.req_id_to_index"),
        (31, "ModelRunnerOutput.req_id_to_index"),
        (32, "ModelRunnerOutput.req_id_to_index"),
    ]
    # At the pin, the calls that leave out (or have the helper take out) the field
    # 0.33.0 requires break.
    at_pin = judge(reading, view("0.33.0", more), None).findings
    assert sorted((f.line, f.vllm_change.rsplit(": ", 1)[-1]) for f in at_pin) == [
        (28, "req_id_to_index is required and not given"),
        (29, "req_id_to_index is required and not given"),
    ]


HELPER_GUARDED = """
from vllm.v1.outputs import ModelRunnerOutput
from npu.compat import vllm_version_ge


def build(ids):
    if vllm_version_ge("0.34.0"):
        return ModelRunnerOutput(req_ids=ids)
    return ModelRunnerOutput(req_ids=ids, req_id_to_index={})
"""

#: A helper in a file that names none of vLLM's types: read for its version test alone.
VERSION_HELPER = """
from packaging.version import Version


def vllm_version_ge(v: str) -> bool:
    import vllm

    return Version(vllm.__version__) >= Version(v)
"""


def test_a_plugins_own_version_helper_guards_like_vllm_version_is() -> None:
    files = {"npu/runner.py": HELPER_GUARDED, "npu/compat.py": VERSION_HELPER}
    reading = read_plugin(files)
    more = frozenset({"npu", "npu.compat"})
    assert judge(reading, view("0.34.0", more), view("0.33.0", more)).findings == []
    assert judge(reading, view("0.33.0", more), None).findings == []


MODULE_MEMBERS = """
import vllm.v1.outputs as vllm_outputs
from vllm.v1 import outputs

ROUTED = getattr(vllm_outputs, "RoutedExpertsLists", None)


def routed(routing, slots):
    if hasattr(outputs, "RoutedExpertsLists"):
        outputs.RoutedExpertsLists(routing, slots)
    return vllm_outputs.RoutedExpertsLists(routing, slots), outputs.SamplerOutput
"""


def test_a_name_taken_from_vllms_module_as_an_attribute_is_judged_as_imported() -> None:
    found = breaks({"npu/routed.py": MODULE_MEMBERS}, "0.31.0", pin="0.30.0")
    # The read under a hasattr test, getattr with a default and a name 0.31.0 has hold.
    assert found == {
        (
            "import-fails",
            "routed.py",
            "vllm.v1.outputs.RoutedExpertsLists",
            "type removed RoutedExpertsLists",
        )
    }
    assert breaks({"npu/routed.py": MODULE_MEMBERS}, "0.30.0") == set()


def test_a_gone_modules_attributes_add_nothing_to_its_import() -> None:
    code = (
        "import vllm.v1.worker.gpu_model_runner\n"
        "import vllm.v1.sample.sampler as sampler\n"
        "vllm.v1.worker.gpu_model_runner.GPUModelRunner.x = 1\n"
        "ORIGINAL = sampler.Sampler.forward, sampler.__file__\n"
    )
    reading = read_plugin({"npu/patch.py": code})
    found = judge(reading, view("0.34.0"), view("0.33.0")).findings
    assert [(f.line, f.kind, f.member) for f in found] == [
        (1, "import-fails", "vllm.v1.worker.gpu_model_runner"),
        (2, "import-fails", "vllm.v1.sample.sampler"),
    ]


BASE_INITS = """
from vllm.v1.outputs import make_empty_encoder_model_runner_output
from vllm.v1.worker.gpu.async_utils import AsyncOutput


class NPUAsyncOutput(AsyncOutput):
    def __init__(self, out, sampled, counts, main, copy):
        super().__init__(out, sampled, counts, main, copy)


class ExplicitBase(AsyncOutput):
    def __init__(self, out, sampled, counts, main, copy):
        AsyncOutput.__init__(self, out, sampled, counts, main, copy, False, None)


def encoder_step(scheduler_output):
    output = make_empty_encoder_model_runner_output(scheduler_output)
    return output.req_id_to_index
"""


def test_a_base_init_and_what_a_function_of_the_outputs_module_returns_are_judged() -> None:
    more = frozenset({"vllm.v1.worker.gpu", "vllm.v1.worker"})
    reading = read_plugin({"npu/runner.py": BASE_INITS})
    found = judge(reading, view("0.34.0", more), view("0.33.0", more)).findings
    lines = {(f.line, f.kind, f.member) for f in found}
    # 0.31.0 made check_ep_fault and pending_aux_output required: five arguments raise;
    # seven (self aside) are what AsyncOutput takes.
    assert (8, "construction-raises", "AsyncOutput.check_ep_fault") in lines
    assert not any(line == 13 for line, _, _ in lines)
    assert (18, "read-fails", "ModelRunnerOutput.req_id_to_index") in lines


MODULE_MEMBERS_HANDLED = """
from __future__ import annotations

import vllm.v1.outputs as outputs

if not hasattr(outputs, "RoutedExpertsLists"):
    outputs.RoutedExpertsLists = tuple  # the plugin's own polyfill


def keep(routed: outputs.RoutedExpertsTensors | None) -> outputs.RoutedExpertsTensors:
    local: outputs.RoutedExpertsTensors = routed  # never evaluated
    return local, outputs.RoutedExpertsLists(routed)


def fallback():
    try:
        return outputs.RoutedExpertsTensors
    except AttributeError:
        return None


def hidden_by_the_wrong_handler():
    try:
        return outputs.RoutedExpertsTensors
    except ImportError:
        return None
"""


def test_a_module_name_the_plugin_sets_handles_or_never_evaluates_holds() -> None:
    found = judge(
        read_plugin({"npu/routed.py": MODULE_MEMBERS_HANDLED}), view("0.31.0"), view("0.30.0")
    ).findings
    # Only the read an ImportError handler cannot catch raises.
    assert [(f.line, f.member) for f in found] == [(24, "vllm.v1.outputs.RoutedExpertsTensors")]


def test_a_positional_only_parameter_of_a_forwarder_leaves_its_name_to_kwargs() -> None:
    code = (
        "from vllm.v1.outputs import ModelRunnerOutput\n"
        "def make(req_id_to_index, /, **fields):\n"
        "    return ModelRunnerOutput(**fields)\n"
        "def step(ids):\n"
        "    return make(1, req_ids=ids, req_id_to_index={})\n"
    )
    found = breaks({"npu/runner.py": code}, "0.34.0", pin="0.33.0")
    assert ("construction-raises", "runner.py", "ModelRunnerOutput.req_id_to_index",
            "field removed ModelRunnerOutput.req_id_to_index") in found  # fmt: skip


BUILT_INDIRECTLY = """
import functools
import importlib

from vllm.v1.outputs import ModelRunnerOutput

outputs = importlib.import_module("vllm.v1.outputs")


def partly(ids):
    make = functools.partial(ModelRunnerOutput, req_id_to_index={})
    return make(req_ids=ids)


def like(out: ModelRunnerOutput):  # out may be a plugin subclass with fields of its own
    return type(out)(req_ids=[], npu_stats={}), out.__class__([], npu_stats={})


def by_module(ids):
    return outputs.ModelRunnerOutput(req_ids=ids, req_id_to_index={})


def runner_module():
    return importlib.import_module("vllm.v1.worker.gpu_model_runner")
"""


def test_partial_and_import_module_build_and_import_as_written() -> None:
    found = judge(
        read_plugin({"npu/runner.py": BUILT_INDIRECTLY}), view("0.34.0"), view("0.33.0")
    ).findings
    removed = "field removed ModelRunnerOutput.req_id_to_index"
    raises = [(f.line, f.vllm_change.split("; ")[0]) for f in found
              if f.kind == "construction-raises"]  # fmt: skip
    # type(out)(...) builds whatever subclass out is: not judged.
    assert raises == [(11, removed), (20, removed)]
    imports = [(f.line, f.member) for f in found if f.kind == "import-fails"]
    assert imports == [(24, "vllm.v1.worker.gpu_model_runner")]
    pin = judge(read_plugin({"npu/runner.py": BUILT_INDIRECTLY}), view("0.33.0"), None)
    assert pin.findings == []


def test_replace_on_vllms_named_tuple_takes_only_the_fields_of_that_release() -> None:
    code = (
        "from vllm.v1.outputs import LogprobsTensors\n"
        "def shift(t: LogprobsTensors, cu):\n"
        "    return t._replace(cu_num_generated_tokens=cu)\n"
    )
    assert breaks({"npu/ops.py": code}, "0.16.0") == set()
    assert breaks({"npu/ops.py": code}, "0.15.0", pin="0.16.0") == {
        ("construction-raises", "ops.py", "LogprobsTensors.cu_num_generated_tokens",
         "field LogprobsTensors.cu_num_generated_tokens is newer than vLLM 0.15.0")
    }  # fmt: skip


def test_a_value_of_vllms_named_tuple_unpacks_into_as_many_names_as_its_fields() -> None:
    code = (
        "from vllm.v1.outputs import LogprobsTensors\n"
        "def rows(t: LogprobsTensors, many: list[LogprobsTensors]):\n"
        "    ids, logprobs, ranks = t\n"
        "    for ids, logprobs, ranks in many:\n"
        "        pass\n"
        "    for ids, logprobs, *rest in many:  # as many as there are\n"
        "        pass\n"
        "    return ids\n"
    )
    assert breaks({"npu/ops.py": code}, "0.15.0") == set()
    added = "field added LogprobsTensors.cu_num_generated_tokens"
    found = judge(read_plugin({"npu/ops.py": code}), view("0.16.0"), view("0.15.0")).findings
    assert [(f.kind, f.line, f.member, f.vllm_change.split(": ")[0]) for f in found] == [
        ("read-fails", 3, "LogprobsTensors", added),
        ("read-fails", 4, "LogprobsTensors", added),
    ]
    assert (
        "LogprobsTensors of vLLM 0.16.0 has 4 fields; the plugin unpacks 3" in found[0].vllm_change
    )


def test_nan_counts_and_routed_experts_are_news_only_to_a_class_that_takes_them() -> None:
    from reference.revisions import canonical_name, revision

    code = {
        "p/outputs.py": "from vllm.v1.outputs import AsyncModelRunnerOutput\n\n\n"
        "class IdsOnly(AsyncModelRunnerOutput):\n    def get_output(self):\n        return 1\n\n"
        "    def get_kv_connector_output(self):\n        return None\n\n\n"
        "class Counting(IdsOnly):\n    def __init__(self, num_nans=None):\n"
        "        self.num_nans = num_nans\n",
    }
    behaviours = tuple(
        revision(canonical_name(r)).async_output.behaviours for r in ("0.27.0", "0.28.0")
    )
    found = judge(read_plugin(code), view("0.28.0"), view("0.27.0"), behaviours).findings
    added = {f.member for f in found if "producer.async_output:nan-counts" in f.vllm_change}
    assert added == {"Counting.get_output"}
    # Routed experts (0.22.0), likewise: news only to the class that takes them.
    routed = code["p/outputs.py"].replace("num_nans", "routed_experts")
    behaviours = tuple(
        revision(canonical_name(r)).async_output.behaviours for r in ("0.21.0", "0.22.0")
    )
    found = judge(
        read_plugin({"p/outputs.py": routed}), view("0.22.0"), view("0.21.0"), behaviours
    ).findings
    added = {f.member for f in found if "producer.async_output:routed-experts" in f.vllm_change}
    assert added == {"Counting.get_output"}


def test_a_break_under_a_condition_of_the_plugins_own_names_that_condition() -> None:
    code = {
        "p/sched.py": "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
        "def update(self, out: ModelRunnerOutput):\n"
        "    if getattr(self, 'enable_return_routed_experts', False) and out.routed_experts:\n"
        "        pass\n"
        "    first = out.req_id_to_index if self.is_pooling else None\n"
        "    if self.async_scheduling:\n"
        "        pass\n"
        "    else:\n"
        "        return out.req_id_to_index, first\n"
        "    return out.req_id_to_index\n",
    }
    found = judge(read_plugin(code), view("0.34.0"), view("0.30.0")).findings
    conditions = {f.line: f.condition for f in found}
    # The later operand of ``and`` runs where the earlier held, a side of ``a if t else
    # b`` where the test did; an ``else`` where its test did not; the rest always.
    assert conditions == {
        5: "getattr(self, 'enable_return_routed_experts', False)",
        7: "self.is_pooling",
        11: "not (self.async_scheduling)",
        12: "",
    }
    assert [f.where for f in found if f.line in (5, 12)] == [
        "p/sched.py:5 (if getattr(self, 'enable_return_routed_experts', False))",
        "p/sched.py:12",
    ]
    # A version test is decided, never named as a condition: at 0.34.0 its ``else``
    # returns, and what follows runs only before 0.31.
    guarded = code["p/sched.py"].replace("self.async_scheduling", "vllm.__version__ < '0.31'")
    guarded = "import vllm\n" + guarded
    found = judge(read_plugin({"p/sched.py": guarded}), view("0.34.0"), view("0.30.0")).findings
    assert {f.line for f in found} == {6, 8, 12}
    assert not any("__version__" in f.condition for f in found)


def test_a_condition_beside_a_version_test_in_one_if_is_named() -> None:
    # vllm-ascend 0.21.0rc1: ``if not vllm_version_is("0.21.0") and getattr(self, ...)``:
    # the version test holds at 0.31.0, the setting is still the line's condition.
    code = {
        "p/sched.py": "from vllm.v1.outputs import ModelRunnerOutput\n"
        "from p.utils import vllm_version_is\n\n\n"
        "def update(self, out: ModelRunnerOutput):\n"
        "    if not vllm_version_is('0.21.0') and getattr(self, 'experts', False):\n"
        "        return out.req_id_to_index\n",
    }
    modules = frozenset({"p", "p.utils"})
    [found] = judge(read_plugin(code), view("0.34.0", modules), view("0.30.0", modules)).findings
    assert (found.line, found.condition) == (7, "getattr(self, 'experts', False)")


_BYPASSES_INIT = """
from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput


class Mine(AsyncGPUModelRunnerOutput):
    def __init__(self, model_runner_output, sampled_token_ids, event):
        self._model_runner_output = model_runner_output
        self._invalid_req_indices = []
        self.async_copy_ready_event = event
        self._sampled_token_ids = sampled_token_ids
        self.vocab_size = 32000
        self._logprobs_tensors = None
        self._routed_experts = None
        self._has_fault = None
        self.sampled_token_ids_cpu = sampled_token_ids.to("cpu", non_blocking=True)
        self._logprobs_tensors_cpu = None
        self._routed_experts_cpu = None

    def get_output(self):
        return super().get_output()
"""


@pytest.mark.parametrize(
    ("change", "breaks"),
    [
        ("", True),
        # vLLM's __init__ runs: it sets what its get_output reads.
        ("        super().__init__(model_runner_output, sampled_token_ids)\n", False),
        # The plugin sets the new state itself.
        ("        self._num_nans = None\n        self._num_nans_cpu = None\n", False),
    ],
)
def test_an_async_output_bypassing_vllms_init_breaks_where_its_get_output_reads_more(
    change: str, breaks: bool
) -> None:
    """vllm-omni 0.26.0's async output sets vLLM 0.26.0's state itself and calls
    vLLM's get_output: 0.28.0's reads self._num_nans_cpu, which only vLLM's __init__
    sets, and every step raises AttributeError."""
    code = _BYPASSES_INIT.replace(
        "        self._routed_experts_cpu = None\n",
        "        self._routed_experts_cpu = None\n" + change,
    )
    files = {"p/runner.py": code}
    found = [
        f
        for f in judge(read_plugin(files), view("0.30.0"), view("0.26.0")).findings
        if f.member == "AsyncGPUModelRunnerOutput.get_output"
    ]
    if not breaks:
        assert found == []
        return
    [finding] = found
    assert (finding.kind, finding.line) == ("call-raises", 5)
    assert "reads self._num_nans, self._num_nans_cpu, set only by" in finding.vllm_change
    assert "(vLLM 0.26.0's get_output read none of them)" in finding.vllm_change
    # At the pin, nothing it leaves unset is read.
    at_pin = judge(read_plugin(files), view("0.26.0"), None).findings
    assert not any(f.member == "AsyncGPUModelRunnerOutput.get_output" for f in at_pin)


def test_an_own_get_output_or_a_read_in_a_branch_is_not_vllms_to_judge() -> None:
    own = _BYPASSES_INIT.replace("return super().get_output()", "return self._model_runner_output")
    found = judge(read_plugin({"p/runner.py": own}), view("0.30.0"), view("0.26.0")).findings
    assert not any(f.member == "AsyncGPUModelRunnerOutput.get_output" for f in found)
    from conformance.crater.inherited_state import vllm_async_state

    tree = ast.parse(
        "class A:\n    def __init__(self):\n        self.a = 1\n        self.b = 2\n"
        "        self.c = 3\n\n    def get_output(self):\n        if self.a:\n"
        "            return self.b\n        x = self.c or self.b\n        return x\n"
    )
    state = vllm_async_state(tree.body[0])  # type: ignore[arg-type]
    # b is read only in a branch, or after an ``or`` that may not reach it.
    assert state.needed == {"a", "c"}


HELD_SAMPLERS = {
    "npu/sample.py": """
from vllm.v1.sample.rejection_sampler import RejectionSampler


class NPURejectionSampler(RejectionSampler):
    pass
""",
    # The runner's file imports only the plugin's subclass.
    "npu/runner.py": """
from npu.sample import NPURejectionSampler


class OwnParser:
    def parse_output(self, ids, vocab_size):
        return ids


class NPUModelRunner:
    def __init__(self, speculative):
        if speculative:
            self.rejection_sampler = NPURejectionSampler()
        self.parser = OwnParser()

    def rows(self, ids):
        return self.rejection_sampler.parse_output(ids, 32000)

    def own(self, ids):
        return self.parser.parse_output(ids, 32000)
""",
    # A file importing vLLM's module: the plugin's own class's method stays its own.
    "npu/other.py": """
from vllm.v1.sample import rejection_sampler


class OwnParser:
    def parse_output(self, ids, vocab_size):
        return ids


class Runner:
    def __init__(self):
        self.parser = OwnParser()

    def own(self, ids):
        return self.parser.parse_output(ids, 32000)
""",
}


def test_a_producer_called_on_an_instance_the_plugin_holds_is_judged_by_its_class() -> None:
    reading = read_plugin(HELD_SAMPLERS)
    calls = [(u.file, u.line, u.member) for u in reading.uses if u.kind == "call"]
    assert calls == [("npu/runner.py", 17, "parse_output")]
    [found] = judge(reading, view("0.12.0"), view("0.11.0")).findings
    assert (found.file, found.line, found.kind) == ("npu/runner.py", 17, "behaviour-changed")


HELD_TWO_LEVELS = {
    "npu/sample.py": """
from vllm.v1.sample.rejection_sampler import RejectionSampler


class NPURejectionSampler(RejectionSampler):
    pass


class OwnParser:
    def parse_output(self, ids, vocab_size):
        return ids
""",
    "npu/model.py": """
from npu.sample import NPURejectionSampler, OwnParser


class NPUModel:
    def __init__(self):
        self.rejection_sampler = NPURejectionSampler()
        self.parser = OwnParser()
""",
    "npu/runner.py": """
from npu.model import NPUModel


class NPUModelRunner:
    def __init__(self):
        self.model = NPUModel()

    def rows(self, ids):
        return self.model.rejection_sampler.parse_output(ids, 32000)

    def own(self, ids):
        return self.model.parser.parse_output(ids, 32000)
""",
}


def test_a_producer_held_two_levels_down_is_judged_by_its_class() -> None:
    # ``self.model.rejection_sampler``: the runner holds the model, the model the
    # sampler; vLLM's ``parse_output`` through a subclass, the plugin's own parser not.
    reading = read_plugin(HELD_TWO_LEVELS)
    calls = [(u.file, u.line, u.member) for u in reading.uses if u.kind == "call"]
    assert calls == [("npu/runner.py", 10, "parse_output")]
    [found] = judge(reading, view("0.12.0"), view("0.11.0")).findings
    assert (found.file, found.kind) == ("npu/runner.py", "behaviour-changed")


RUNNER_CALLED_ELSEWHERE = {
    "npu/runner.py": """
from vllm.v1.outputs import ModelRunnerOutput


class NPUModelRunner:
    def execute_model(self, ids) -> ModelRunnerOutput:
        return ModelRunnerOutput(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)})


def empty_output() -> ModelRunnerOutput | None:
    return None
""",
    # Names none of vLLM's types: the runner's class and the function tell it reads one.
    "npu/worker.py": """
from npu.runner import NPUModelRunner, empty_output


class NPUWorker:
    def __init__(self):
        self.model_runner = NPUModelRunner()

    def step(self, ids):
        output = self.model_runner.execute_model(ids)
        return output.req_id_to_index

    def idle(self):
        return empty_output().req_id_to_index
""",
}


def test_a_file_reading_what_a_plugin_function_returns_is_read() -> None:
    found = breaks(RUNNER_CALLED_ELSEWHERE, "0.34.0", pin="0.33.0")
    reads = {(kind, file) for kind, file, member, _ in found if kind == "read-fails"}
    assert reads == {("read-fails", "worker.py")}
    reading = read_plugin(RUNNER_CALLED_ELSEWHERE)
    lines = sorted(u.line for u in reading.uses if u.kind == "read" and u.file == "npu/worker.py")
    assert lines == [11, 14]


ASYNC_OUTPUT_WITH_A_MIXIN = {
    "npu/kv.py": """
class KVSalvageMixin:
    def get_kv_connector_output(self):
        return getattr(self, "_kv", None)
""",
    "npu/runner.py": """
from vllm.v1.outputs import AsyncModelRunnerOutput

from npu.kv import KVSalvageMixin


class NPUAsyncOutput(KVSalvageMixin, AsyncModelRunnerOutput):
    def __init__(self, out):
        self._out = out

    def get_output(self):
        return self._out
""",
}


def test_a_method_a_mixin_in_another_file_defines_is_the_classs() -> None:
    # Python finds get_kv_connector_output on the mixin: 0.33.0's abstract method is met.
    assert breaks(ASYNC_OUTPUT_WITH_A_MIXIN, "0.33.0", pin="0.32.0") == set()
    without = {**ASYNC_OUTPUT_WITH_A_MIXIN, "npu/kv.py": "class KVSalvageMixin:\n    pass\n"}
    assert {kind for kind, *_ in breaks(without, "0.33.0", pin="0.32.0")} == {"cannot-instantiate"}


FLAG_OF_AN_IMPORT = {
    "npu/compat.py": """
try:
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner
    HAS_V1 = True
except ImportError:
    HAS_V1 = False
""",
    "npu/runner.py": """
from vllm.v1.outputs import ModelRunnerOutput

from npu.compat import HAS_V1


def make(ids):
    if HAS_V1:
        return ModelRunnerOutput(req_ids=ids, req_id_to_index={})
    return ModelRunnerOutput(req_ids=ids)


def make_taken(ids, flag):
    if flag:
        return ModelRunnerOutput(req_ids=ids, req_id_to_index={})
    return ModelRunnerOutput(req_ids=ids)
""",
}


def test_a_flag_set_by_whether_an_import_took_is_a_member_test() -> None:
    # 0.34.0 has no gpu_model_runner: HAS_V1 is False there, its branch never runs.
    found = breaks(FLAG_OF_AN_IMPORT, "0.34.0", pin="0.33.0")
    assert {(kind, member) for kind, _, member, _ in found} == {
        ("construction-raises", "ModelRunnerOutput.req_id_to_index")
    }
    [line] = {
        f.line
        for f in judge(read_plugin(FLAG_OF_AN_IMPORT), view("0.34.0"), view("0.33.0")).findings
    }
    assert line == 15  # the untold flag's branch only


def test_what_follows_a_return_in_its_block_is_never_judged() -> None:
    unreachable = """
from vllm.v1.outputs import ModelRunnerOutput


def rows(out: ModelRunnerOutput):
    return out.req_ids
    return out.req_id_to_index


def index(out: ModelRunnerOutput):
    if out.req_ids:
        return out.req_ids
    return out.req_id_to_index
"""
    found = judge(read_plugin({"npu/runner.py": unreachable}), view("0.34.0"), view("0.33.0"))
    assert [f.line for f in found.findings] == [13]


FALLBACKS = """
from vllm.v1.outputs import LogprobsLists, ModelRunnerOutput


def make(ids):
    try:
        return ModelRunnerOutput(req_ids=ids, req_id_to_index={})
    except TypeError:
        return ModelRunnerOutput(req_ids=ids)


def one(lp: LogprobsLists, i: int, n: int):
    try:
        return lp.slice(i, i + 1)
    except AttributeError:
        return lp.slice_request(i, n)


def broken_fallback(ids):
    try:
        return ModelRunnerOutput(req_ids=ids, req_id_to_index={})
    except TypeError:
        return ModelRunnerOutput(req_ids=ids, index={})
"""


@pytest.mark.parametrize(
    ("release", "pin", "lines"),
    [
        # Each try takes: no handler runs.
        ("0.33.0", None, set()),
        # A try fails: its handler runs; the one passing what vLLM no longer takes breaks.
        ("0.34.0", "0.33.0", {23}),
        ("0.14.0", "0.11.0", set()),  # slice gone, slice_request there
        # 0.11.0 requires every field: both constructions' fallbacks run, and fail too.
        ("0.11.0", None, {9, 23}),
    ],
)
def test_a_fallback_runs_only_where_its_try_fails(release, pin, lines) -> None:
    found = judge(read_plugin({"npu/runner.py": FALLBACKS}), view(release), pin and view(pin))
    assert {f.line for f in found.findings} == lines


def test_a_base_never_instantiable_is_no_break_its_subclass_is() -> None:
    files = {
        "npu/base.py": """
from vllm.v1.outputs import AsyncModelRunnerOutput


class _BaseAsync(AsyncModelRunnerOutput):
    def _copy(self, tensor):
        return tensor.to("cpu", non_blocking=True)
""",
        "npu/runner.py": """
from npu.base import _BaseAsync


class NPUAsyncOutput(_BaseAsync):
    def __init__(self, out):
        self._out = out

    def get_output(self):
        return self._out
""",
    }
    found = judge(read_plugin(files), view("0.33.0"), view("0.32.0")).findings
    assert [(f.kind, f.file) for f in found] == [("cannot-instantiate", "npu/runner.py")]


def test_a_type_a_class_attribute_holds_is_constructed_through_self() -> None:
    held = """
from vllm.v1.outputs import ModelRunnerOutput


class Runner:
    output_cls = ModelRunnerOutput

    def run(self, ids):
        return self.output_cls(req_ids=ids, req_id_to_index={})


class Rebinding:
    output_cls = ModelRunnerOutput

    def __init__(self, cls):
        self.output_cls = cls  # whatever the caller gives: not known

    def run(self, ids):
        return self.output_cls(req_ids=ids, req_id_to_index={})
"""
    found = judge(read_plugin({"npu/runner.py": held}), view("0.34.0"), view("0.33.0")).findings
    assert [(f.kind, f.line) for f in found] == [("construction-raises", 9)]


def test_a_field_read_through_a_held_plugin_instance_is_judged() -> None:
    nested = """
from vllm.v1.outputs import ModelRunnerOutput


class State:
    def __init__(self, out: ModelRunnerOutput):
        self.out = out
        self.count = 0


class Runner:
    def __init__(self, out: ModelRunnerOutput):
        self.state = State(out)

    def index(self, rid):
        return self.state.out.req_id_to_index[rid]

    def counted(self):
        return self.state.count.req_id_to_index  # not an output: not judged
"""
    found = judge(read_plugin({"npu/runner.py": nested}), view("0.34.0"), view("0.33.0")).findings
    assert [(f.kind, f.line) for f in found] == [("read-fails", 16)]


def test_keywords_a_plugin_function_returns_as_a_dict_are_passed() -> None:
    helper = """
from vllm.v1.outputs import ModelRunnerOutput


def _common(ids):
    kwargs = {"req_ids": ids}
    kwargs["req_id_to_index"] = {r: i for i, r in enumerate(ids)}
    return kwargs


def _unknown(ids, extra):
    return dict(extra)


def make(ids):
    return ModelRunnerOutput(**_common(ids))


def make_unknown(ids, extra):
    return ModelRunnerOutput(**_unknown(ids, extra))
"""
    found = judge(read_plugin({"npu/runner.py": helper}), view("0.34.0"), view("0.33.0")).findings
    assert [(f.kind, f.line) for f in found] == [("construction-raises", 16)]


def test_keywords_returned_under_a_version_test_are_not_taken_for_all() -> None:
    guarded = """
import vllm
from vllm.v1.outputs import ModelRunnerOutput


def _kwargs(ids):
    if vllm.__version_tuple__ >= (0, 34):
        return {"req_ids": ids}
    return {"req_ids": ids, "req_id_to_index": {r: i for i, r in enumerate(ids)}}


def make(ids):
    return ModelRunnerOutput(**_kwargs(ids))
"""
    found = judge(read_plugin({"npu/runner.py": guarded}), view("0.34.0"), view("0.33.0"))
    assert found.findings == []


FLAGS_ON_THE_CLASS = """
from vllm.v1.outputs import ModelRunnerOutput
from npu.utils import vllm_version_is


class OnTheClass:
    _OLD_OUTPUTS = vllm_version_is("0.33.0")

    def build(self, req_ids):
        if self._OLD_OUTPUTS:
            return ModelRunnerOutput(req_ids=req_ids, req_id_to_index={})
        return ModelRunnerOutput(req_ids=req_ids)


class OnSelf:
    def __init__(self):
        self._old = vllm_version_is("0.33.0")

    def build(self, req_ids):
        if self._old:
            return ModelRunnerOutput(req_ids=req_ids, req_id_to_index={})
        return ModelRunnerOutput(req_ids=req_ids)


class BoundTwice:
    def __init__(self):
        self._maybe = vllm_version_is("0.33.0")

    def reset(self):
        self._maybe = True

    def build(self, req_ids):
        if self._maybe:
            return ModelRunnerOutput(req_ids=req_ids, req_id_to_index={})
        return ModelRunnerOutput(req_ids=req_ids)
"""


def test_a_version_flag_on_the_class_or_on_self_stands_for_its_test() -> None:
    reading = read_plugin({"npu/runner.py": FLAGS_ON_THE_CLASS})
    helpers = frozenset({"npu", "npu.utils"})
    at_target = judge(reading, view("0.34.0", helpers), view("0.33.0", helpers)).findings
    at_pin = judge(reading, view("0.33.0", helpers), None).findings
    # Only the flag bound twice (reset to True) may hold anything: its branch is judged.
    assert [(f.line, f.member) for f in at_target] == [(34, "ModelRunnerOutput.req_id_to_index")]
    assert [(f.line, f.member) for f in at_pin] == [(35, "ModelRunnerOutput.req_id_to_index")]


OWN_CLASS_NAMED_LIKE_THE_OUTPUT = """
from vllm.v1.outputs import ModelRunnerOutput


class StepResult:
    def __init__(self, req_ids):
        self.req_id_to_index = {r: i for i, r in enumerate(req_ids)}


def step(req_ids, rid):
    model_runner_output = StepResult(req_ids)
    return model_runner_output.req_id_to_index[rid]


def given(data, rid):
    model_runner_output = data
    return model_runner_output.req_id_to_index[rid]
"""


def test_a_local_named_model_runner_output_holding_a_plugin_class_is_that_class() -> None:
    reading = read_plugin({"npu/runner.py": OWN_CLASS_NAMED_LIKE_THE_OUTPUT})
    found = judge(reading, view("0.34.0"), view("0.33.0")).findings
    # A value of no type shown, named so, is still taken for vLLM's.
    assert [(f.kind, f.line) for f in found] == [("read-fails", 17)]


PRESENCE_TESTED_OTHERWISE = """
import contextlib

from vllm.v1.outputs import ModelRunnerOutput


def in_a_loop(outs: list[ModelRunnerOutput], rid):
    found = []
    for out in outs:
        if not hasattr(out, "req_id_to_index"):
            found.append(out.req_ids.index(rid))
            continue
        found.append(out.req_id_to_index[rid])
    return found


def by_a_flag(out: ModelRunnerOutput, rid):
    has_map = hasattr(out, "req_id_to_index")
    if has_map:
        return out.req_id_to_index[rid]
    return out.req_ids.index(rid)


def suppressed(out: ModelRunnerOutput, rid):
    idx = None
    with contextlib.suppress(AttributeError):
        idx = out.req_id_to_index[rid]
    return idx


def untested(outs: list[ModelRunnerOutput], rid):
    for out in outs:
        if not out.req_ids:
            continue
        return out.req_id_to_index[rid]
"""


def test_presence_tested_in_a_loop_by_a_flag_or_suppressed_is_handled() -> None:
    found = judge(
        read_plugin({"npu/r.py": PRESENCE_TESTED_OTHERWISE}), view("0.34.0"), view("0.33.0")
    )
    # Only the read no test guards breaks.
    assert [(f.kind, f.line) for f in found.findings] == [("read-fails", 35)]


PROPERTIES_AND_KWARGS = """
import functools

from vllm.v1.outputs import ModelRunnerOutput


class Runner:
    def __init__(self, out):
        self._out = out

    @property
    def last_output(self) -> ModelRunnerOutput:
        return self._out

    @functools.cached_property
    def first_output(self) -> ModelRunnerOutput:
        return self._out

    def index(self, rid):
        return self.last_output.req_id_to_index[rid]

    def first_index(self, rid):
        return self.first_output.req_id_to_index[rid]


def completed(req_ids, index):
    kw = {"req_ids": req_ids}
    kw.setdefault("req_id_to_index", index)
    return ModelRunnerOutput(**kw)


def taken_away(req_ids, index):
    kw = {"req_ids": req_ids, "req_id_to_index": index}
    del kw["req_id_to_index"]
    return ModelRunnerOutput(**kw)
"""


def test_a_property_annotated_as_an_output_and_setdefault_keys_are_judged() -> None:
    found = judge(read_plugin({"npu/r.py": PROPERTIES_AND_KWARGS}), view("0.34.0"), view("0.33.0"))
    # A key deleted is not passed.
    assert [(f.kind, f.line) for f in found.findings] == [
        ("read-fails", 20),
        ("read-fails", 23),
        ("construction-raises", 29),
    ]

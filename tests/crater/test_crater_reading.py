"""What the crater reads of a plugin's code: its uses of vLLM, found by what they are."""

from __future__ import annotations

import fixture_plugins as plugins

from conformance.crater.uses import read_plugin
from conformance.crater.vllm_names import OUTPUTS


def _uses(files: dict[str, str], kind: str) -> list:
    code = {p: t for p, t in files.items() if p.endswith(".py")}
    return [u for u in read_plugin(code).uses if u.kind == kind]


def test_a_construction_is_found_by_name_by_module_alias_and_through_a_kwargs_dict() -> None:
    built = _uses(plugins.BUILDS_OUTPUT, "construct")
    runner = sorted(
        (u.line, u.keywords, u.positional) for u in built if u.file.endswith("runner.py")
    )
    assert [keywords for _, keywords, _ in runner[:2]] == [
        ("req_ids", "req_id_to_index", "sampled_token_ids"),
        ("req_id_to_index", "req_ids"),
    ]
    assert runner[2][2] == 8
    assert all(u.target == f"{OUTPUTS}.ModelRunnerOutput" for u in built)


def test_a_plugin_subclass_imported_relatively_counts_as_the_type() -> None:
    built = [u for u in _uses(plugins.BUILDS_OUTPUT, "construct") if u.via == "NPUOutput"]
    assert len(built) == 1
    assert built[0].own_fields == (("npu_stats", True),)
    assert set(built[0].keywords) == {"req_ids", "req_id_to_index", "npu_stats"}


def test_reads_are_found_on_annotated_receivers_only() -> None:
    reads = _uses(plugins.BUILDS_OUTPUT, "read")
    assert {u.member for u in reads} == {"req_id_to_index", "not_a_field_of_any_release"}


def test_subclasses_of_the_async_output_carry_the_methods_their_chain_defines() -> None:
    found = {u.member: u for u in _uses(plugins.ASYNC_OUTPUTS, "subclass")}
    assert set(found) == {"NPUAsyncOutput", "CompleteAsyncOutput", "AbstractBase", "FromBase"}
    assert "get_output" in found["FromBase"].defines
    assert found["AbstractBase"].abstract
    assert not found["NPUAsyncOutput"].abstract


def test_guards_try_blocks_and_type_checking_are_kept_with_each_use() -> None:
    reading = read_plugin({p: t for p, t in plugins.GUARDED.items() if p.endswith(".py")})
    imports = {u.target: u for u in reading.uses if u.kind == "import"}
    assert imports["vllm.v1.sample.rejection_sampler"].handled
    assert imports["vllm.v1.worker.gpu_model_runner"].guards[0].is_type_checking
    built = sorted((u for u in reading.uses if u.kind == "construct"), key=lambda u: u.line)
    assert [g.text for g in built[0].guards] == ["vllm_version_is('0.33.0')"]
    assert built[1].guards[-1].is_version  # IS_OLD, a module constant bound to a test
    assert not built[2].guards[-1].is_version
    assert reading.versions_named == {"0.33.0", "0.34.0"}
    assert len(reading.conditions_taken) == 1


def test_a_plugin_with_its_own_output_class_uses_none_of_vllms() -> None:
    reading = read_plugin({p: t for p, t in plugins.USES_NONE.items() if p.endswith(".py")})
    assert [u.kind for u in reading.uses] == ["import"]


def test_calls_of_vllms_producers_keep_their_arity_and_unpacking() -> None:
    calls = {u.member: u for u in _uses(plugins.PRODUCER_CALLS, "call")}
    assert calls["gather_logprobs"].positional == 4
    assert calls["parse_output"].unpacked == 3


def test_files_that_cannot_use_the_types_are_not_parsed_but_their_imports_count() -> None:
    files = {
        "p/big.py": "import vllm.model_executor.layers\n\nx = (\n",  # not even Python
        "p/uses.py": "from vllm.v1.outputs import ModelRunnerOutput\nModelRunnerOutput(req_ids=[])\n",
    }
    reading = read_plugin(files)
    assert reading.unparsed == []
    assert ("import", "p/big.py", "vllm.model_executor.layers") in {
        (u.kind, u.file, u.target) for u in reading.uses
    }


def test_a_file_using_a_type_by_an_alias_of_the_plugins_own_is_read() -> None:
    files = {
        "npu/__init__.py": "",
        "npu/compat.py": "from vllm.v1.outputs import ModelRunnerOutput as StepOutput\n",
        "npu/worker.py": "from npu.compat import StepOutput\n\n\n"
        "def step(ids):\n    return StepOutput(req_ids=ids, req_id_to_index={})\n",
    }
    uses = read_plugin(files).uses
    assert [(u.kind, u.file, u.line) for u in uses if u.kind == "construct"] == [
        ("construct", "npu/worker.py", 5)
    ]


def test_an_annotated_kwargs_dict_is_read_like_any_other() -> None:
    code = {
        "npu/kv.py": "from typing import Any\n\nfrom vllm.v1.outputs import KVConnectorOutput\n\n\n"
        "def build(done):\n"
        "    kwargs: dict[str, Any] = {'finished_sending': done, 'finished_recving': set()}\n"
        "    return KVConnectorOutput(**kwargs)\n",
    }
    built = _uses(code, "construct")
    assert [(u.keywords, u.open_ended) for u in built] == [
        (("finished_recving", "finished_sending"), False)
    ]


OWN_GATHERING = """
import torch
from vllm.v1.sample.sampler import Sampler


class NPUSampler(Sampler):
    def forward(self, logits, n, ids):
        return self.gather_logprobs(logits, n, ids)

    def base(self, logits, n, ids):
        return super().gather_logprobs(logits, n, ids)

    @staticmethod
    def gather_logprobs(logprobs, n, ids):
        return torch.topk(logprobs, n)


class Plain(Sampler):
    def forward(self, logits, n, ids):
        return self.gather_logprobs(logits, n, ids)
"""


def test_a_producer_method_the_plugins_class_defines_is_its_own() -> None:
    calls = [u for u in read_plugin({"npu/sampler.py": OWN_GATHERING}).uses if u.kind == "call"]
    # super() reaches vLLM's; self reaches the plugin's own unless the class has none.
    assert [(u.line, u.member) for u in calls] == [(11, "gather_logprobs"), (20, "gather_logprobs")]


PRESENCE_TESTED = """
from vllm.v1.outputs import ModelRunnerOutput


def failed(out: ModelRunnerOutput):
    kv = out.kv_connector_output
    if kv and getattr(kv, "failed_recving", None) is not None:
        return kv.failed_recving
    if hasattr(out, "req_id_to_index"):
        return out.req_id_to_index
    return out.req_id_to_index


def early(out: ModelRunnerOutput):
    if not hasattr(out, "req_id_to_index"):
        return None
    return out.req_id_to_index
"""


def test_a_use_under_a_test_that_the_attribute_exists_is_no_use() -> None:
    reads = [u for u in read_plugin({"npu/kv.py": PRESENCE_TESTED}).uses if u.kind == "read"]
    assert [(u.line, u.member) for u in reads] == [
        (6, "kv_connector_output"),
        (11, "req_id_to_index"),
    ]


PRESENCE_IN_EXPRESSIONS = """
from vllm.v1.outputs import ModelRunnerOutput
from npu.utils import vllm_version_is


def chosen(out: ModelRunnerOutput, ids, outs: list[ModelRunnerOutput]):
    index = out.req_id_to_index if hasattr(out, "req_id_to_index") else {}
    found = hasattr(out, "req_id_to_index") and out.req_id_to_index.get(ids[0])
    other = out.req_ids and out.req_id_to_index
    negated = None if not hasattr(out, "req_id_to_index") else out.req_id_to_index
    either = not hasattr(out, "req_id_to_index") or out.req_id_to_index
    listed = [o.req_id_to_index for o in outs if hasattr(o, "req_id_to_index")]
    listed += [i for o in outs if hasattr(o, "req_id_to_index") for i in o.req_id_to_index]
    if getattr(out, "req_id_to_index", None) is None:
        pass
    else:
        listed.append(out.req_id_to_index)
    return index, found, other, negated, either, listed, (
        ModelRunnerOutput(req_ids=ids, req_id_to_index={})
        if vllm_version_is("0.33.0")
        else ModelRunnerOutput(req_ids=ids)
    )
"""


def test_a_choice_in_an_expression_runs_each_side_under_its_test() -> None:
    reading = read_plugin({"npu/choice.py": PRESENCE_IN_EXPRESSIONS})
    reads = [(u.line, u.member) for u in reading.uses if u.kind == "read"]
    # ``x.a if hasattr(x, "a") else ...``, ``hasattr(x, "a") and x.a``, their negations
    # (``... if not hasattr(...) else x.a``, ``not hasattr(...) or x.a``, ``else``) and a
    # comprehension's ``if`` read nothing missing; ``x.b and x.a`` does.
    assert [line for line, member in reads if member == "req_id_to_index"] == [9]
    built = sorted((u for u in reading.uses if u.kind == "construct"), key=lambda u: u.line)
    assert [[(g.text, g.branch) for g in u.guards] for u in built] == [
        [("vllm_version_is('0.33.0')", True)],
        [("vllm_version_is('0.33.0')", False)],
    ]


CLASS_CHOSEN = """
from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput


class OmniOutput(AsyncGPUModelRunnerOutput):
    def __init__(self, model_runner_output_builder, **kwargs):
        self.builder = model_runner_output_builder


def hand_over(omni, output, kwargs):
    output_cls = OmniOutput if omni else AsyncGPUModelRunnerOutput
    if omni:
        chosen = output_cls(model_runner_output_builder=output, **kwargs)
    else:
        chosen = output_cls(model_runner_output=output, num_nans=0)
    either = output_cls(model_runner_output=output)
    alias = AsyncGPUModelRunnerOutput
    return chosen, either, alias(model_runner_output=output)
"""


def test_a_class_a_local_name_holds_is_constructed_on_the_side_its_if_takes() -> None:
    built = [u for u in read_plugin({"npu/run.py": CLASS_CHOSEN}).uses if u.kind == "construct"]
    # Either side where no test tells which is left unjudged.
    assert [(u.line, u.via, u.keywords) for u in built] == [
        (13, "OmniOutput", ("model_runner_output_builder",)),
        (15, "", ("model_runner_output", "num_nans")),
        (18, "", ("model_runner_output",)),
    ]


HOOKED = {
    "xpu/__init__.py": """
import builtins
import importlib

_OLD = builtins.__import__


def _hooked(name, *args, **kwargs):
    mappings = {"vllm.v1.sample.rejection_sampler": "xpu.rejection_sampler"}
    if name in mappings:
        return importlib.import_module(mappings[name])
    return _OLD(name, *args, **kwargs)


def register():
    builtins.__import__ = _hooked
""",
    "xpu/runner.py": """
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.sample.rejection_sampler import RejectionSampler


def rows(ids):
    return RejectionSampler.parse_output(ids, 32000), ModelRunnerOutput(req_ids=[])
""",
    "xpu/rejection_sampler.py": "class RejectionSampler:\n    pass\n",
}


def test_a_module_the_plugins_import_hook_hands_out_is_its_own() -> None:
    reading = read_plugin(HOOKED)
    assert reading.redirected == {"vllm.v1.sample.rejection_sampler": "xpu.rejection_sampler"}
    assert {u.module for u in reading.uses} == {OUTPUTS}
    # sys.modules too, where the module handed out is the plugin's own, not a copy of
    # vLLM's with a few names changed.
    assigned = {"npu/patch.py": "import sys\nimport types\nimport vllm.v1.sample.ops\n"
                "from npu import sampler\n\n"
                "sys.modules['vllm.v1.sample.sampler'] = sampler\n"
                "wrapped = types.SimpleNamespace(**vllm.v1.sample.ops.__dict__)\n"
                "sys.modules['vllm.v1.sample.ops'] = wrapped\n"}  # fmt: skip
    assert read_plugin(assigned).redirected == {"vllm.v1.sample.sampler": "npu.sampler"}


def test_a_type_alias_of_the_outputs_module_holds_no_uses_of_vllm() -> None:
    code = "from vllm.v1.outputs import PoolerOutput\n\n\n" + (
        "def rows(pooled: PoolerOutput):\n    return pooled.index_select(0, 1), pooled.shape\n"
    )
    uses = read_plugin({"npu/pool.py": code}).uses
    # PoolerOutput is torch.Tensor | list[torch.Tensor]: what is read of it is torch's.
    assert [u.kind for u in uses] == ["import"]


NEWER_SYNTAX = (
    "\ufefffrom vllm.v1.outputs import ModelRunnerOutput\n"  # a byte-order mark first
    "\n"
    "def named[T](ids: list[T]) -> str:\n"  # PEP 695: Python 3.12
    '    return f"{ids["a"]}"\n'  # PEP 701: Python 3.12
    "\n"
    "def step(ids):\n"
    "    return ModelRunnerOutput(req_ids=ids, req_id_to_index={})\n"
)


def test_a_newer_pythons_syntax_is_read_around_and_named() -> None:
    reading = read_plugin({"npu/runner.py": NEWER_SYNTAX, "npu/binary.py": "ModelRunnerOutput\0"})
    # The lines 3.11 cannot parse are placeholders; the rest of the file is judged.
    assert [(u.line, u.keywords) for u in reading.uses if u.kind == "construct"] == [
        (7, ("req_ids", "req_id_to_index"))
    ]
    assert reading.placeholders == ["npu/runner.py:3", "npu/runner.py:4"]
    assert reading.unparsed == ["npu/binary.py"]


def test_star_imports_bind_what_the_module_makes_public() -> None:
    files = {
        "npu/compat.py": "from vllm.v1.outputs import *\n_private = 1\n",
        "npu/__init__.py": "from .compat import *\n",
        "npu/runner.py": (
            "from npu import ModelRunnerOutput\n"
            "def step(ids):\n"
            "    return ModelRunnerOutput(req_ids=ids)\n"
        ),
    }
    reading = read_plugin(files)
    imports = [(u.file, u.target, u.member) for u in reading.uses if u.kind == "import"]
    # The star names no member ("vllm.v1.outputs has no *"); the type comes through the
    # package's own star re-export.
    assert imports == [("npu/compat.py", OUTPUTS, "")]
    built = [(u.file, u.line, u.target) for u in reading.uses if u.kind == "construct"]
    assert built == [("npu/runner.py", 3, f"{OUTPUTS}.ModelRunnerOutput")]


ASYNC_SUBCLASS_READS = """
from vllm.v1.worker.gpu.async_utils import AsyncOutput


class NPUAsyncOutput(AsyncOutput):
    def get_output(self):
        out = super().get_output()
        rows = out.req_id_to_index
        return out, rows, len(self.model_runner_output.sampled_token_ids)

    def other(self):
        return self.get_output().req_ids, self.unrelated.req_ids
"""


def test_an_async_output_subclass_reads_what_vllms_base_holds_and_returns() -> None:
    reads = _uses({"npu/async_output.py": ASYNC_SUBCLASS_READS}, "read")
    assert sorted((u.line, u.target, u.member) for u in reads) == [
        (8, f"{OUTPUTS}.ModelRunnerOutput", "req_id_to_index"),
        (9, f"{OUTPUTS}.ModelRunnerOutput", "sampled_token_ids"),
        (12, f"{OUTPUTS}.ModelRunnerOutput", "req_ids"),
    ]


TYPED_OTHER_WAYS = """
from dataclasses import dataclass
from typing import cast

from vllm.v1.outputs import ModelRunnerOutput


@dataclass
class PendingStep:
    output: ModelRunnerOutput
    note: str = ""

    def rows(self):
        return self.output.req_ids, self.note.upper()


def handed(result):
    output = cast(ModelRunnerOutput, result)
    return output.sampled_token_ids, cast("ModelRunnerOutput", result).logprobs
"""


def test_a_class_body_annotation_and_a_cast_type_what_they_hold() -> None:
    reads = _uses({"npu/steps.py": TYPED_OTHER_WAYS}, "read")
    assert sorted((u.line, u.member) for u in reads) == [
        (14, "req_ids"),
        (19, "logprobs"),
        (19, "sampled_token_ids"),
    ]


def test_a_placeholder_does_to_the_flow_what_its_line_did() -> None:
    import ast

    from conformance.crater.lenient_parse import parse_leniently

    code = (
        "def build(x):\n"
        "    if old:\n"
        '        return new(f"{x["k"]}")\n'  # PEP 701: the code after it stays unreached
        '    elif f"{x["y"]}":\n'  # an elif stays one branch of the same if
        "        pass\n"
        "    else:\n"
        "        raise ValueError(x)\n"
    )
    parsed = parse_leniently(code)
    assert parsed is not None
    tree, replaced = parsed
    assert replaced == (3, 4)
    [branch] = tree.body[0].body  # type: ignore[attr-defined]
    assert isinstance(branch.body[0], ast.Return)
    assert isinstance(branch.orelse[0], ast.If)
    assert isinstance(branch.orelse[0].orelse[0], ast.Raise)


def test_the_later_star_import_binds_a_name_and_all_says_what_a_module_exports() -> None:
    files = {
        "npu/__init__.py": "from vllm.v1.outputs import *\nfrom npu.own import *\n",
        "npu/own.py": (
            "from vllm.v1.outputs import ModelRunnerOutput as _Base\n"
            "__all__ = ['ModelRunnerOutput']\n"
            "class ModelRunnerOutput(_Base):\n    pass\n"
            "class Hidden(_Base):\n    pass\n"
        ),
        "npu/runner.py": (
            "from npu import ModelRunnerOutput, Hidden\n"
            "def step(ids):\n"
            "    return ModelRunnerOutput(req_ids=ids), Hidden(req_ids=ids)\n"
        ),
    }
    built = [u for u in read_plugin(files).uses if u.kind == "construct"]
    # The package's second star binds its own subclass; Hidden, outside __all__, is no
    # name of the package.
    assert [(u.file, u.via) for u in built if u.file == "npu/runner.py"] == [
        ("npu/runner.py", "ModelRunnerOutput")
    ]


def test_an_all_changed_after_it_is_bound_is_not_known() -> None:
    files = {
        "npu/__init__.py": "from vllm.v1.outputs import *\nfrom npu.own import *\n",
        "npu/own.py": (
            "from vllm.v1.outputs import ModelRunnerOutput as _Base\n"
            "__all__ = ['helper']\n"
            "__all__ += ['ModelRunnerOutput']\n"
            "class ModelRunnerOutput(_Base):\n    pass\n"
            "def helper():\n    pass\n"
        ),
        "npu/runner.py": (
            "from npu import ModelRunnerOutput\n"
            "def step(ids):\n"
            "    return ModelRunnerOutput(req_ids=ids)\n"
        ),
    }
    built = [u for u in read_plugin(files).uses if u.file == "npu/runner.py"]
    assert [(u.kind, u.via) for u in built if u.kind == "construct"] == [
        ("construct", "ModelRunnerOutput")
    ]


def test_only_annotations_python_never_evaluates_are_left_unread() -> None:
    import ast

    from conformance.crater.syntax import unevaluated_annotations

    code = (
        "def f(x: A) -> B:\n    y: C = x\n    class Inner:\n        z: D\nclass Outer:\n    w: E\n"
    )
    tree = ast.parse(code)
    never = unevaluated_annotations(tree)
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) in never}
    assert named == {"C"}  # a variable's inside a function; a class body's runs with it
    postponed = ast.parse("from __future__ import annotations\n" + code)
    never = unevaluated_annotations(postponed)
    named = {n.id for n in ast.walk(postponed) if isinstance(n, ast.Name) and id(n) in never}
    assert named == {"A", "B", "C", "D", "E"}


def test_a_class_made_in_a_function_on_a_local_alias_rests_on_what_it_names() -> None:
    code = (
        "def patch():\n"
        "    from vllm.v1.worker.gpu import async_utils\n"
        "    original = async_utils.AsyncOutput\n"
        "    class BeamAsyncOutput(original):\n"
        "        def __init__(self, out, sampler_output, num_sampled, main, copy):\n"
        "            super().__init__(out, sampler_output, num_sampled, main, copy)\n"
        "    async_utils.AsyncOutput = BeamAsyncOutput\n"
        "def rebound(flag):\n"
        "    base = object\n"
        "    if flag:\n"
        "        base = dict\n"
        "    class Other(base):\n"
        "        pass\n"
    )
    reading = read_plugin({"beam/scheduler.py": code})
    assert [(u.line, u.target) for u in reading.uses if u.kind == "subclass"] == [
        (4, "vllm.v1.worker.gpu.async_utils.AsyncOutput")
    ]
    built = [(u.line, u.target, u.positional) for u in reading.uses if u.kind == "construct"]
    assert built == [(6, "vllm.v1.worker.gpu.async_utils.AsyncOutput", 5)]
